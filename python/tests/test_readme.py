"""The README's Python is tested: every `>>>` example in README.md (and docs/) runs as a
doctest, and each script the README shows beside its printed output (a ```python block whose
first line names the file, followed by a ```text block) is the file in the repository and
prints that output.

Doctest compares the printed value exactly; `...` in an expected output matches anything
(ELLIPSIS), used only for what genuinely varies (wall times, paths). A figure the program
changes fails here until the page is updated (`cargo xtask bless` rewrites the scripts'
output blocks; a doctest's expected output is edited by hand). The console blocks are tested by
crates/ntile/tests (trycmd).
"""

import doctest
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

PAGES = ["README.md", "docs/nki-tracer.md"]


def pages():
    return [p for p in PAGES if (ROOT / p).exists()]


def doctest_pages():
    return [p for p in pages() if ">>> " in (ROOT / p).read_text()]


def test_the_readme_has_python_examples():
    assert "README.md" in doctest_pages()


@pytest.mark.parametrize("page", doctest_pages())
def test_every_python_example_prints_what_the_page_shows(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # A fence line ends an example's expected output as a blank line would.
    text = re.sub(r"^```.*$", "", (ROOT / page).read_text(), flags=re.M)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {"__name__": "readme"}, page, str(ROOT / page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    runner.run(test, out=out.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(out)


SCRIPT = re.compile(
    r"```python\n# (?P<path>examples/[\w/.-]+\.py)\n(?P<body>.*?)```\s*\n```text\n(?P<out>.*?)```",
    re.S,
)


def scripts():
    found = []
    for page in pages():
        for m in SCRIPT.finditer((ROOT / page).read_text()):
            found.append(pytest.param(page, m["path"], m["body"], m["out"], id=m["path"]))
    return found


@pytest.mark.parametrize("page,path,body,expected", scripts())
def test_every_script_is_the_file_and_prints_what_the_page_shows(page, path, body, expected, tmp_path):
    source = (ROOT / path).read_text()
    assert source == f"# {path}\n{body}", f"{page} shows a different {path} than the repository has"
    run = subprocess.run([sys.executable, str(ROOT / path)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    if os.environ.get("NTILE_BLESS") == "1" and run.stdout != expected:
        # `cargo xtask bless` (NTILE_BLESS=1): the page takes what the script prints today.
        text = (ROOT / page).read_text()
        shown = f"```python\n# {path}\n{body}```\n\n```text\n{expected}```"
        assert text.count(shown) == 1, f"{page}: cannot find the block of {path} to bless"
        (ROOT / page).write_text(text.replace(shown, f"```python\n# {path}\n{body}```\n\n```text\n{run.stdout}```"))
        return
    assert run.stdout == expected, f"{path} printed:\n{run.stdout}\nbut {page} shows:\n{expected}"
