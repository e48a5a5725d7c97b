"""The project as a new user meets it: the README's commands, CI running the same test command,
and the command line."""
import io
import subprocess
import sys
from pathlib import Path


from ejce_nb import cli

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands():
    lines = [ln.strip() for ln in (ROOT / "README.md").read_text().splitlines()[:5] if ln.startswith("    ")]
    assert len(lines) >= 2, "the README must open with the install/run and the test commands"
    return lines[0], lines[1]


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_command():
    run, test = _readme_commands()
    assert "pip install" in run and "ejce-nb" in run
    assert "pytest" in test
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test in ci


def test_paper_example_agrees_with_eulers_kinematic_equations():
    out = io.StringIO()
    worst = cli.paper_example(n_states=2, out=out)
    assert worst < 1e-12
    text = out.getvalue()
    for seq in cli.PAPER_SEQUENCES:
        assert seq in text


def test_info_command_prints_a_summary(capsys):
    assert cli.main(["info", "arm7"]) == 0
    out = capsys.readouterr().out
    assert "bodies 9" in out and "nq 7" in out and "Revolute" in out


def test_bad_model_is_a_clear_error_not_a_traceback(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"bodies": [{"name": "a", "joint": {"type": "Revolute", "axis": [0, 0, 0]}}]}')
    assert cli.main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bodies[0].joint.axis" in err


def test_bench_command_measures_a_throughput(capsys):
    assert cli.main(["bench", "arm7", "--batch", "200"]) == 0
    assert "states/s" in capsys.readouterr().out


def test_module_entry_point():
    res = subprocess.run([sys.executable, "-m", "ejce_nb", "info", "knee"], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Composite" in res.stdout
