"""Every ```python block of the README runs as written: in order, in one namespace (later blocks
use what earlier ones defined, as a reader would), in a fresh directory (the files they write go
there), against the shipped models."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def python_blocks():
    """(first line number in README.md, code) of every ```python block."""
    out = []
    for m in re.finditer(r"^```python\n(.*?)^```$", README, re.S | re.M):
        out.append((README.count("\n", 0, m.start(1)) + 1, m.group(1)))
    return out


BLOCKS = python_blocks()


def test_every_fence_is_read():
    """The extraction sees every fenced block that claims to be Python (a fence the pattern missed
    would go untested)."""
    assert len(BLOCKS) == len(re.findall(r"^```python\s*$", README, re.M)) >= 4


def test_readme_snippets_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__readme__"}
    for line, code in BLOCKS:
        # padded so that a traceback points at the README's own line numbers
        compiled = compile("\n" * (line - 1) + code, str(ROOT / "README.md"), "exec")
        try:
            exec(compiled, namespace)
        except Exception as e:              # noqa: BLE001 - report which block failed
            pytest.fail(f"README.md block at line {line} raised {type(e).__name__}: {e}")
    # what the snippets say they write, they wrote here
    assert (tmp_path / "my_arm.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_arm.json"]


def test_readme_references_exist():
    """Files the README points at are in the repository."""
    for target in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (ROOT / target).exists(), target
    assert "API.md" not in README.replace("docs/API.md", "")
