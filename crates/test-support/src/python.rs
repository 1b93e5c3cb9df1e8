//! numpy and ml_dtypes as the independent reference: running `python3` scripts.

use std::process::Command;

/// Run `python3 -c SCRIPT ARGS...` and return its stdout; a failing script fails the test
/// with its stderr (the scripts explain every mismatch there).
pub fn python(script: &str, args: &[String]) -> String {
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs (`cargo xtask ci` puts target/py with numpy and ml-dtypes first in PATH)");
    assert!(o.status.success(), "python failed:\n{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}
