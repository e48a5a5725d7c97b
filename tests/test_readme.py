"""Every ```python block of the README runs as written, by itself: each in a fresh interpreter (its
own imports, no state of the blocks before it, as a reader who copies one block would run it), in
a fresh directory (the files it writes go there) with its own temporary directory, which it
leaves empty, against the shipped models."""
import os
import re
import subprocess
import sys
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
    assert len(BLOCKS) == len(re.findall(r"^```python\s*$", README, re.M)) >= 1


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"line{line}" for line, _ in BLOCKS])
def test_readme_block_runs_alone(line, code, tmp_path):
    work = tmp_path / "cwd"
    tmp = tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), EJCE_NB_QUIET="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                          if p]))
    # padded so that a traceback points at the README's own line numbers
    src = "\n" * (line - 1) + code
    script = tmp_path / "block.py"
    script.write_text(src)
    r = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, f"README.md block at line {line} failed alone:\n{r.stderr[-3000:]}"
    assert sorted(p.name for p in tmp.iterdir()) == [], f"README.md block at line {line} left files in TMPDIR"
    written = sorted(p.name for p in work.iterdir())
    assert written in ([], ["my_arm.json"]), written
    if "my_arm.json" in code:
        assert written == ["my_arm.json"]


def test_readme_references_exist():
    """Files the README points at are in the repository."""
    for target in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (ROOT / target).exists(), target
    assert "API.md" not in README.replace("docs/API.md", "")


def test_readme_cites_the_paper():
    assert "10.14177/j.cnki.32-1397n.2026.50.01.003" in README and "Zhou Qinbo" in README
    assert (ROOT / "docs" / "EJCE.md").is_file()
