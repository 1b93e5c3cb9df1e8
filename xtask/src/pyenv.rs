//! The Python environment of `cargo xtask ci`: a virtual environment under `target/py` with
//! numpy, ml-dtypes, maturin and pytest, created from the package registry on first use and
//! reused after, so a machine with only Rust and a bare `python3` runs every test.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// What the tests import (numpy, ml_dtypes, pytest) and the module's build backend.
const PACKAGES: &[&str] = &["numpy", "ml-dtypes>=0.5", "maturin>=1.9,<2", "pytest"];

/// The virtual environment `target/py` of a workspace.
pub struct Env {
    root: PathBuf,
    dir: PathBuf,
}

impl Env {
    /// The environment of the workspace at `root` (it may not exist yet).
    pub fn at(root: &Path) -> Env {
        Env { root: root.to_path_buf(), dir: root.join("target/py") }
    }

    fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// Its interpreter.
    pub fn python(&self) -> PathBuf {
        self.bin().join("python3")
    }

    /// Whether it exists with every package installed.
    pub fn ready(&self) -> bool {
        self.bin().join("maturin").is_file()
            && Command::new(self.python())
                .args(["-c", "import numpy, ml_dtypes, pytest"])
                .output()
                .is_ok_and(|o| o.status.success())
    }

    /// `PATH` with the environment's `bin` first, so a test's `python3` is its interpreter.
    fn path(&self) -> Result<OsString> {
        let rest = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(std::iter::once(self.bin()).chain(std::env::split_paths(&rest))).context("joining PATH")
    }

    /// A command run inside the environment (as `activate` would set it up).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Result<Command> {
        let mut cmd = Command::new(program);
        cmd.env("PATH", self.path()?).env("VIRTUAL_ENV", &self.dir).env_remove("PYTHONHOME").current_dir(&self.root);
        Ok(cmd)
    }

    /// `cargo ARGS` with the environment's `python3` first in `PATH`.
    pub fn cargo(&self, args: &[&str]) -> Result<()> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        run(self.command(cargo)?.args(args), &format!("cargo {}", args.join(" ")))
    }

    /// `cargo ARGS` inside the environment with `key=value` set.
    pub fn cargo_with(&self, args: &[&str], key: &str, value: &str) -> Result<()> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        run(self.command(cargo)?.args(args).env(key, value), &format!("{key}={value} cargo {}", args.join(" ")))
    }

    /// Build the module and run the README's Python tests with `NTILE_BLESS=1`, which rewrites
    /// the output blocks of the scripts the README shows.
    pub fn bless_python_readme(&self) -> Result<()> {
        let maturin = self.bin().join("maturin");
        run(self.command(&maturin)?.args(["develop", "--manifest-path", "python/Cargo.toml"]), "maturin develop")?;
        let mut pytest = self.command(self.python())?;
        pytest
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests/test_readme.py"])
            .env("NTILE_BLESS", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        run(&mut pytest, "NTILE_BLESS=1 python -m pytest -q python/tests/test_readme.py")
    }

    /// Build the module into the environment (`maturin develop`, dev profile, sharing the
    /// workspace's target directory) and run its pytest suite.
    pub fn python_tests(&self) -> Result<()> {
        let maturin = self.bin().join("maturin");
        let mut build = self.command(&maturin)?;
        build.args(["develop", "--manifest-path", "python/Cargo.toml"]);
        run(&mut build, "maturin develop --manifest-path python/Cargo.toml")?;
        let mut pytest = self.command(self.python())?;
        pytest
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"])
            .env("PYTHONDONTWRITEBYTECODE", "1");
        run(&mut pytest, "python -m pytest -q python/tests")
    }
}

/// The environment of `root`, created and filled when it is missing or incomplete.
pub fn prepare(root: &Path) -> Result<Env> {
    let env = Env::at(root);
    if env.ready() {
        return Ok(env);
    }
    if !env.python().is_file() {
        let python = std::env::var("NTILE_PYTHON").unwrap_or_else(|_| "python3".into());
        run(
            Command::new(&python).arg("-m").arg("venv").arg(&env.dir),
            &format!("{python} -m venv {} (Debian and Ubuntu need the python3-venv package)", env.dir.display()),
        )?;
    }
    let mut pip = env.command(env.python())?;
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(PACKAGES);
    run(&mut pip, &format!("pip install {}", PACKAGES.join(" ")))?;
    if !env.ready() {
        bail!("{} lacks numpy, ml_dtypes, pytest or maturin after installing them", env.dir.display());
    }
    Ok(env)
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    #[expect(clippy::print_stderr, reason = "xtask reports progress on stderr")]
    {
        eprintln!("$ {what}");
    }
    let status = cmd.status().with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
