"""The project as a new user meets it: the README's commands, CI running the same test command,
and the command line."""
import io
import subprocess
import sys
from pathlib import Path

import ejce_nb as ej
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


# ---------------------------------------------------------------------------- threads, caches, no JIT
_RESULTS_SCRIPT = r"""
import sys, numpy as np, ejce_nb as ej
from ejce_nb.models import random_tree, random_states
model = random_tree(7, 11)
Q, V, A = random_states(model, 23, np.random.default_rng(2))
tau = ej.rnea(model, Q, V, A)
out = dict(tau=tau, qdd=ej.aba(model, Q, V, tau), M=ej.mass_matrix(model, Q),
           a=ej.forward_kinematics(model, Q, V, A).a, J=ej.joint_terms(model, Q, V).J,
           one=ej.rnea(model, Q[3], V[3], A[3]))
np.savez(sys.argv[1], **out)
"""


# one kernel, among the smallest: one-state rnea of a model whose joints all have fast paths
_SMALL_SCRIPT = r"""
import sys, numpy as np, ejce_nb as ej
from ejce_nb.models import load, random_states
model = load("arm7")
q, v, a = random_states(model, 1, np.random.default_rng(2))
np.savez(sys.argv[1], tau=ej.rnea(model, q[0], v[0], a[0]))
"""


def _results(tmp_path, name, env, script_text=_RESULTS_SCRIPT):
    import os
    script = tmp_path / "results.py"
    script.write_text(script_text)
    path = tmp_path / f"{name}.npz"
    # the package these tests import (not another installed copy, whose kernels would compile
    # again under another path of the cache)
    here = str(Path(ej.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", ""), **env}
    res = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    import numpy as np
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def test_results_do_not_depend_on_the_thread_count(tmp_path):
    import numpy as np
    one = _results(tmp_path, "one", {"NUMBA_NUM_THREADS": "1"})
    two = _results(tmp_path, "two", {"NUMBA_NUM_THREADS": "2"})
    for k in one:
        np.testing.assert_array_equal(one[k], two[k], err_msg=k)


def test_a_corrupted_cache_never_gives_wrong_results(tmp_path):
    """Every cached kernel file scrambled: the kernels compile again and give the same bits."""
    import os
    import shutil
    import numpy as np
    from ejce_nb import _jit
    ref = _results(tmp_path, "ref", {}, _SMALL_SCRIPT)
    if not _jit.CACHE:
        return
    cache = tmp_path / "cache"
    shutil.copytree(os.path.dirname(_jit.CACHE_DIR), cache / "ejce_nb")
    n = 0
    for root, _, files in os.walk(cache):
        for name in files:
            if name.endswith((".nbi", ".nbc")):
                p = os.path.join(root, name)
                data = open(p, "rb").read()
                open(p, "wb").write(bytes(b ^ 0x5A for b in data[: len(data) // 2 + 1]) + data[len(data) // 2 + 1:])
                n += 1
    assert n > 0
    got = _results(tmp_path, "scrambled", {"NUMBA_CACHE_DIR": str(cache)}, _SMALL_SCRIPT)
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k], err_msg=k)


def test_any_edit_of_the_package_moves_its_cache(tmp_path):
    """Numba's own cache does not notice an edited helper in another module (its callers keep
    the old code), so the cache directory is keyed by a hash of every source file: an edit of
    any of them, a helper included, gives a fresh directory."""
    import shutil
    from ejce_nb import _jit
    pkg = tmp_path / "ejce_nb"
    shutil.copytree(_jit._PKG, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    here = _jit._source_hash()
    for rel in ("core/spatial.py", "core/joints/pose.py"):
        old = (pkg / rel).read_text()
        (pkg / rel).write_text(old.replace("def ", "def  ", 1))
        _jit_pkg, _jit._PKG = _jit._PKG, str(pkg)
        try:
            assert _jit._source_hash() != here, rel
        finally:
            _jit._PKG = _jit_pkg
        (pkg / rel).write_text(old)
    assert _jit.CACHE_DIR.endswith(here) or not _jit.CACHE


def test_the_python_paths_without_the_compiler_give_the_compiled_results(tmp_path):
    """NUMBA_DISABLE_JIT=1 runs every kernel as plain Python (what coverage tools see): the same
    results as compiled, to rounding (the compiled code may contract nothing, but libm and
    NumPy's scalar maths can differ in the last bit)."""
    import numpy as np
    ref = _results(tmp_path, "compiled", {})
    got = _results(tmp_path, "python", {"NUMBA_DISABLE_JIT": "1"})
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=0, atol=1e-12 * max(1.0, np.abs(ref[k]).max()), err_msg=k)


def test_the_generated_views_are_those_of_the_declarations():
    """``model/views.py`` is generated from the tables declared in ``model/layout.py``
    (``python -m ejce_nb.model.layout``), ``actuation/views.py`` from ``actuation/tables.py``: a
    table added or changed there regenerates it."""
    import os
    from ejce_nb.model import layout
    with open(os.path.join(os.path.dirname(layout.__file__), "views.py")) as f:
        assert f.read() == layout.views_source()
    from ejce_nb.core import spatial
    with open(os.path.join(os.path.dirname(spatial.__file__), "rowops.py")) as f:
        assert f.read() == spatial.rows_source()
    from ejce_nb.actuation import tables
    with open(os.path.join(os.path.dirname(tables.__file__), "views.py")) as f:
        assert f.read() == tables.views_source()


def test_a_cache_filled_by_the_compile_command_serves_a_copy_of_the_package_in_another_folder(tmp_path):
    """``ejce-nb compile`` fills the on-disk cache with what a model's calls need, and the cache
    does not depend on where the package is installed: a copy of the package in another folder,
    on the same cache, compiles nothing for them (Numba's compile events)."""
    import os
    import shutil
    from ejce_nb import _jit
    if not _jit.CACHE:
        return
    env = dict(os.environ, EJCE_NB_QUIET="1", NUMBA_CACHE_DIR=os.path.dirname(os.path.dirname(_jit.CACHE_DIR)))
    res = subprocess.run([sys.executable, "-m", "ejce_nb", "compile", "arm7", "--functions", "rnea"], env=env,
                         capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "arm7: rnea" in res.stdout and "1 function(s) for 1 kind(s)" in res.stdout
    shutil.copytree(_jit._PKG, tmp_path / "elsewhere" / "ejce_nb", ignore=shutil.ignore_patterns("__pycache__"))
    script = ("import numpy as np, ejce_nb as ej\n"
              "from ejce_nb._jit import compile_seconds\n"
              f"assert ej.__file__.startswith({str(tmp_path / 'elsewhere')!r}), ej.__file__\n"
              "m = ej.models.arm7()\n"
              "Q = np.random.default_rng(0).standard_normal((9, 7))\n"
              "ej.rnea(m, Q[0], Q[1], Q[2]); ej.rnea(m, Q, Q, Q)\n"
              "print(compile_seconds())\n")
    res = subprocess.run([sys.executable, "-c", script], env=dict(env, PYTHONPATH=str(tmp_path / "elsewhere")),
                         capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert res.returncode == 0, res.stderr
    assert float(res.stdout.split()[-1]) == 0.0, "the copy compiled kernels the cache holds"


def test_compile_command_refuses_an_unknown_function(capsys):
    assert cli.main(["compile", "arm7", "--functions", "rnea,nope"]) == 2
    assert "unknown 'nope'" in capsys.readouterr().err
