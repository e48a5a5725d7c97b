"""Monte Carlo sweeps: each sample's words of numpy's Philox streams and the ziggurat normals
made of them, the documented input distributions, bitwise invariance to chunking, threads and Dask
workers, every stored output against the batch API on the stored inputs, per-sample status,
inputs drawn again instead of stored, resume after SIGKILL, refused arguments, bounded memory,
failing chunks, summaries, every kind of zarr store (a directory, a zip file, memory, a file:// URL)
and the command line."""
import logging
import os
import signal
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
from scipy import stats

import ejce_nb as ej
from ejce_nb import cli
from ejce_nb.joints import Composite, Cylindrical, Fixed, Free, Helical, Planar, Prismatic, Revolute, Rot
from ejce_nb.joints import Spherical, Trans, Translation, Universal
from ejce_nb.sweep import StreamRNG, streams
from ejce_nb.sweep.rng import key as _key, normal_rows as _normal_rows, uniform_rows as _uniform_rows
from ejce_nb.sweep.store import Lock

_BLOCK = streams.ROWS_PER_TASK

PKG_ROOT = str(Path(ej.__file__).resolve().parent.parent)
TESTS = str(Path(__file__).resolve().parent)
ALL = ["rnea", "aba", "mass_matrix", "nonlinear_effects", "kinetic_energy", "joint_terms",
       "forward_kinematics:tip", "forward_kinematics:hand", "body_jacobian:twin"]


def inertia(a=0.02, b=0.03, c=0.04):
    return np.diag([a, b, c])


def zoo():
    """Every joint kind and every rotation parameterisation, limits on some coordinates, a mimic
    joint and a composite joint; every body has mass, so the dynamics is regular."""
    T = ej.Transform
    b = ej.ModelBuilder()
    b.add_body("base", joint=Free("quaternion"), mass=3.0, inertia=inertia(0.1, 0.12, 0.15))
    b.add_body("slider", parent="base", joint=Prismatic((1.0, 0.0, 0.0)), mass=0.5, inertia=inertia())
    b.add_body("wrist", parent="slider", joint=Spherical("ZXZ"), placement=T(translation=(0.0, 0.0, 0.2)),
               mass=0.7, com=(0.0, 0.0, 0.1), inertia=inertia())
    b.add_body("hand", parent="wrist", joint=Spherical("xyz"), placement=T(translation=(0.0, 0.0, 0.3)),
               mass=0.4, com=(0.05, 0.0, 0.0), inertia=inertia(), q_lower=[-1.0, -2.0, None],
               q_upper=[1.0, 2.0, None])
    b.add_body("ball", parent="base", joint=Spherical("mrp"), mass=0.6, com=(0.1, 0.0, 0.0), inertia=inertia())
    b.add_body("gibbs", parent="ball", joint=Spherical("rodrigues"), placement=T(translation=(0.2, 0.0, 0.0)),
               mass=0.3, com=(0.0, 0.1, 0.0), inertia=inertia())
    b.add_body("drone", parent="base", joint=Free("rotvec"), mass=0.8, inertia=inertia())
    b.add_body("table", parent="base", joint=Planar(), mass=1.0, inertia=inertia())
    b.add_body("screw", parent="table", joint=Helical((0.0, 0.0, 1.0), 0.05), mass=0.3, inertia=inertia(),
               q_lower=[-0.5], q_upper=[0.5])
    b.add_body("sleeve", parent="screw", joint=Cylindrical((0.0, 1.0, 0.0)), mass=0.3, inertia=inertia())
    b.add_body("cardan", parent="sleeve", joint=Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), mass=0.3,
               inertia=inertia())
    b.add_body("finger", parent="cardan", joint=Revolute((0.0, 0.0, 1.0)), placement=T(translation=(0.1, 0, 0)),
               mass=0.2, com=(0.05, 0.0, 0.0), inertia=inertia(), q_lower=[0.0], q_upper=[1.0])
    b.add_body("twin", parent="cardan", joint=Revolute((0.0, 0.0, 1.0)), placement=T(translation=(-0.1, 0, 0)),
               mass=0.2, com=(-0.05, 0.0, 0.0), inertia=inertia(), mimic=("finger_joint", -1.0, 0.1))
    b.add_body("knee", parent="finger", joint=Composite(
        [Trans((1.0, 0.0, 0.0), ej.fn.Spline(0, [-1.0, 0.0, 1.0], [0.0, 0.01, 0.0])),
         Rot((0.0, 0.0, 1.0), ej.fn.Linear([1.0]))], 1), mass=0.2, com=(0.0, 0.05, 0.0), inertia=inertia())
    b.add_body("stack", parent="knee", joint=Translation(), mass=0.2, inertia=inertia())
    b.add_body("tip", parent="stack", joint=Fixed(), placement=T(translation=(0.0, 0.1, 0.0)), mass=0.1,
               inertia=inertia())
    return b.build()


def arrays(result):
    return {name: np.asarray(result[name]) for name in result.arrays}


def assert_same_bits(a, b):
    x, y = arrays(a), arrays(b)
    assert x.keys() == y.keys()
    for name in x:
        assert x[name].shape == y[name].shape, name
        assert np.array_equal(x[name], y[name]), name
        assert x[name].tobytes() == y[name].tobytes(), name


def slow_qd(rng, size):
    """A qd sampler that can be slowed down (for the kill test) without changing its code."""
    time.sleep(float(os.environ.get("EJCE_NB_TEST_SWEEP_DELAY", "0")))
    return rng.standard_normal((size, 7))


@pytest.fixture(scope="module")
def zoo_model():
    return zoo()


@pytest.fixture(scope="module")
def zoo_sweep(zoo_model, tmp_path_factory):
    return ej.sweep(zoo_model, 1201, ALL, tmp_path_factory.mktemp("zoo") / "one", chunk_size=1201,
                    progress=False)


@pytest.fixture(scope="module")
def arm():
    return ej.models.load("arm7")


# ---------------------------------------------------------------------------- random streams
def long_stream(key, words):
    """The first ``words`` doubles of one numpy Generator on the Philox stream of ``key``."""
    return np.random.Generator(np.random.Philox(key=np.array(key, dtype=np.uint64))).random(words)


def test_each_sample_draws_its_own_words_of_one_numpy_philox_stream():
    key = _key((11,), "q", 0)
    # numpy's conversion, by hand: the top 53 bits of each raw word
    raw = np.random.Philox(key=np.array(key, dtype=np.uint64)).random_raw(4000)
    assert np.array_equal(long_stream(key, 4000), (raw >> np.uint64(11)).astype(np.float64) * 2.0 ** -53)
    # Philox.advance(b) skips b blocks of four words, whatever was buffered before
    bits = np.random.Philox(key=np.array(key, dtype=np.uint64))
    bits.random_raw(3)
    bits.advance(5)
    assert np.array_equal(bits.random_raw(4), raw[24:28])
    # a chunk drawn from a positioned generator is the slice of the long stream: any offset,
    # words per sample not a multiple of four, chunks of several blocks (and threads)
    n = 3 * _BLOCK + 77
    for k in (1, 3, 4, 7, 13):
        whole = long_stream(key, n * k).reshape(n, k)
        for first, m in ((0, n), (1, 5), (3, 2 * _BLOCK + 9), (_BLOCK - 1, _BLOCK + 2), (n - 1, 1)):
            part = np.empty((m, k))
            _uniform_rows(key, first, part)
            assert np.array_equal(part, whole[first:first + m]), (k, first, m)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = np.empty((n, 7))
        _uniform_rows(key, 0, one)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(one, long_stream(key, n * 7).reshape(n, 7))
    # other inputs and other draws are other streams
    assert not np.array_equal(long_stream(_key((11,), "qd", 0), 8), long_stream(key, 8))
    assert not np.array_equal(long_stream(_key((11,), "q", 1), 8), long_stream(key, 8))
    assert not np.array_equal(long_stream(_key((12,), "q", 0), 8), long_stream(key, 8))


def test_compiled_philox_blocks_are_numpys():
    key = _key((7,), "tau", 2)
    raw = np.random.Philox(key=np.array(key, dtype=np.uint64)).random_raw(64)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for b in range(16):
        # numpy increments the counter before each block: word w is in block w // 4 + 1
        assert tuple(int(x) for x in streams.philox(np.uint64(b + 1), np.uint64(0), np.uint64(0), np.uint64(0),
                                                     k0, k1)) == tuple(int(x) for x in raw[4 * b:4 * b + 4])


def test_ziggurat_layers_have_equal_areas():
    r, k, w, f = streams.ZIGGURAT_R, streams._ZK, streams._ZW, streams._ZF
    g = lambda x: np.exp(-0.5 * x * x)   # noqa: E731
    x = w * 2.0 ** 52
    v = r * g(r) + np.sqrt(2 * np.pi) * stats.norm.sf(r)
    assert x[255] == r and np.all(np.diff(x[1:]) > 0)
    np.testing.assert_allclose(f[1:], g(x[1:]), rtol=1e-15)
    # layer i >= 2: the rectangle [0, x_i] x [f(x_i), f(x_{i-1})]; the base: v / f(r) wide to the tail
    np.testing.assert_allclose(x[2:] * (f[1:-1] - f[2:]), v, rtol=1e-9)
    assert x[1] * (1.0 - f[1]) == pytest.approx(v, rel=1e-6)
    assert x[0] * g(r) == pytest.approx(v, rel=1e-15)
    # the fast-accept bound of layer i is the width of the layer above it
    np.testing.assert_allclose(k[2:].astype(float) / 2.0 ** 52, x[1:-1] / x[2:], rtol=1e-15)
    assert k[1] / 2.0 ** 52 == pytest.approx(0.0, abs=1e-15) and k[0] / 2.0 ** 52 == pytest.approx(r / x[0])


def test_normals_are_ziggurat_normals_of_the_samples_words():
    key = _key((3,), "qd", 0)
    n = 300_000
    z = np.empty((n, 4))
    _normal_rows(key, 0, z)
    # the reference, in numpy on the same words: where the word's abscissa lies inside its layer's
    # fast-accept bound, the normal is that abscissa with the word's sign bit
    raw = np.random.Philox(key=np.array(key, dtype=np.uint64)).random_raw(4 * n).reshape(n, 4)
    idx = (raw & np.uint64(0xFF)).astype(np.int64)
    rabs = (raw >> np.uint64(9)) & np.uint64(0x000FFFFFFFFFFFFF)
    sign = np.where((raw >> np.uint64(8)) & np.uint64(1), -1.0, 1.0)
    fast = rabs < streams._ZK[idx]
    assert 0.985 < fast.mean() < 0.995
    assert np.array_equal(z[fast], (sign * rabs.astype(np.float64) * streams._ZW[idx])[fast])
    # the rest, drawn on words outside the main stream, still follow the normal law
    x = z.ravel()
    assert abs(x.mean()) < 5 / np.sqrt(x.size)
    assert abs(x.std() - 1.0) < 5 / np.sqrt(2 * x.size)
    assert stats.kstest(x, "norm").pvalue > 1e-3
    h, e = np.histogram(x, bins=120, range=(-4.5, 4.5))
    expect = x.size * np.diff(stats.norm.cdf(e))
    assert stats.chi2.sf(np.sum((h - expect) ** 2 / expect), len(h) - 1) > 1e-3
    # the tail beyond the base layer's r: its frequency, and its shape (conditional KS)
    r = streams.ZIGGURAT_R
    big = np.empty((1_500_000, 8))
    _normal_rows(_key((4,), "tau", 0), 0, big)
    y = big.ravel()
    p = 2 * stats.norm.sf(r)
    tail = np.abs(y[np.abs(y) > r])
    assert abs(tail.size / y.size - p) < 5 * np.sqrt(p / y.size)
    assert stats.kstest(tail, lambda t: 1.0 - stats.norm.sf(t) / stats.norm.sf(r)).pvalue > 1e-3
    assert abs(np.mean(y[np.abs(y) > r] > 0) - 0.5) < 5 * 0.5 / np.sqrt(tail.size)
    # rows drawn on their own equal the rows of the big draw, rejected words included
    part = np.empty((777, 4))
    _normal_rows(key, 123_456, part)
    assert np.array_equal(part, z[123_456:123_456 + 777])
    # k normals per sample are the words [i k, (i + 1) k): the same as one per sample from i k
    seven, col = np.empty((5000, 7)), np.empty((35_000, 1))
    _normal_rows(key, 40, seven)
    _normal_rows(key, 280, col)
    assert np.array_equal(seven.ravel(), col.ravel())


def test_stream_rng_rows_belong_to_samples():
    full, part = StreamRNG((5,), "q", 0, 100), StreamRNG((5,), "q", 40, 25)
    for draw in (lambda g, m: g.random((m, 3)), lambda g, m: g.standard_normal(m),
                 lambda g, m: g.uniform(-2.0, [1.0, 2.0], (m, 2)), lambda g, m: g.normal(1.0, 3.0, (m, 2, 2)),
                 lambda g, m: g.integers(3, 9, (m, 4))):
        a, b = draw(full, 100), draw(part, 25)
        assert np.array_equal(a[40:65], b)
    assert np.array_equal(part.indices, np.arange(40, 65))
    ints = StreamRNG((5,), "x", 0, 5000).integers(3, 9, 5000)
    assert ints.min() == 3 and ints.max() == 8
    with pytest.raises(ValueError, match="one row per sample"):
        part.random((24, 3))


# ---------------------------------------------------------------------------- input distributions
def test_default_inputs_follow_the_documented_distributions(zoo_model, tmp_path):
    model = zoo_model
    n = 20_000
    res = ej.sweep(model, n, ["rnea"], tmp_path / "s", chunk_size=7000, progress=False)
    q, qd, qdd = (np.asarray(res[k]) for k in ("q", "qd", "qdd"))
    assert res.inputs == ("q", "qd", "qdd")
    for j in range(1, model.nbodies + 1):
        sl, spec = model.q_slice(j), model.joint_specs[j].to_dict()
        if sl.stop == sl.start:
            continue
        name = model.joint_names[j]
        lo, hi = model.q_lower[sl], model.q_upper[sl]
        block = q[:, sl]
        param = spec.get("param")
        rot = slice(3 if spec["type"] == "Free" else 0, None)
        if param in ("quaternion", "rotvec", "rodrigues", "mrp"):
            if param == "quaternion":
                assert np.abs(np.linalg.norm(block[:, rot], axis=1) - 1.0).max() < 1e-15
            # a rotation uniform on SO(3) has E[R] = 0
            R = ej.joint_terms(model, q).R[:, j]
            assert np.abs(R.mean(axis=0)).max() < 0.03, name
        euler = param is not None and param.upper() in ej.joints.EULER_SEQUENCES
        for k in range(block.shape[1]):
            col = block[:, k]
            in_rotation = param is not None and (spec["type"] != "Free" or k >= 3)
            if in_rotation and (not euler or k == block.shape[1] - 2):
                continue            # rotations on SO(3), and Euler middle angles: checked below
            if np.isfinite(lo[k]):
                assert col.min() >= lo[k] and col.max() < hi[k], (name, k)
                assert col.min() < lo[k] + 0.01 * (hi[k] - lo[k]) and col.max() > hi[k] - 0.01 * (hi[k] - lo[k])
            else:
                is_len = (spec["type"] in ("Prismatic", "Translation") or (spec["type"] == "Free" and k < 3)
                          or (spec["type"] == "Planar" and k < 2) or (spec["type"] == "Cylindrical" and k == 1))
                h = 1.0 if is_len else np.pi
                assert col.min() >= -h and col.max() < h, (name, k)
                assert col.min() < -0.99 * h and col.max() > 0.99 * h, (name, k)
        if euler:
            # away from gimbal lock: |det| of the angle-rate Jacobian >= sin(margin), and close to it
            J = ej.joint_terms(model, q).J[:, :3, model.expanded().v_slice(j)][:, :, -3:]
            det = np.abs(np.linalg.det(J))
            assert det.min() >= np.sin(0.1) - 1e-12, name
            assert det.min() < np.sin(0.1) + 0.01, name
    for x in (qd, qdd):
        assert np.abs(x.mean(axis=0)).max() < 5 / np.sqrt(n)
        assert np.abs(x.std(axis=0) - 1.0).max() < 5 / np.sqrt(2 * n)
    # the allowed middle angles of 'xyz' within its limits [-2, 2]: three intervals, all used
    mid = q[:, model.q_slice("hand_joint")][:, 1]
    assert (mid < -np.pi / 2 - 0.1).any() and (mid > np.pi / 2 + 0.1).any() and (np.abs(mid) < 1).any()
    assert not (np.abs(np.abs(mid) - np.pi / 2) < 0.1).any()


def test_normal_uniform_array_and_function_samplers(tmp_path):
    h = ej.models.load("humanoid")
    rng = np.random.default_rng(0)
    q0 = np.array(ej.models.random_states(h, 1, 5)[0][0])
    for j, sl in h.quaternion_blocks():
        v = rng.normal(size=4)
        q0[sl] = v / np.linalg.norm(v)
    res = ej.sweep(h, 500, ["kinetic_energy"], tmp_path / "g", sampler=ej.Normal(q0, std=1e-3),
                   chunk_size=200, progress=False)
    q = np.asarray(res["q"])
    quat = np.zeros(h.nq, dtype=bool)
    for j, sl in h.quaternion_blocks():
        quat[sl] = True
        dot = np.abs(q[:, sl] @ q0[sl])
        assert np.abs(np.linalg.norm(q[:, sl], axis=1) - 1).max() < 1e-15
        angle = 2 * np.arccos(np.minimum(dot, 1.0))
        assert 0 < angle.mean() < 6e-3
    d = q[:, ~quat] - q0[~quat]
    assert abs(d.std() - 1e-3) < 1e-4 and np.abs(d).max() < 6e-3

    arm = ej.models.load("arm7")
    Q = ej.models.random_states(arm, 300, 1)[0]
    f = lambda rng, size: rng.normal(0.0, 2.0, (size, 7))  # noqa: E731
    runs = [ej.sweep(arm, 300, ["rnea", "aba"], tmp_path / f"a{cs}", chunk_size=cs, progress=False,
                     sampler=ej.Sampler(q=Q, qd=f, tau=ej.Uniform(-1.0, 1.0))) for cs in (300, 7)]
    assert_same_bits(*runs)
    assert np.array_equal(np.asarray(runs[0]["q"]), Q)
    assert abs(np.asarray(runs[0]["qd"]).std() - 2.0) < 0.15
    tau = np.asarray(runs[0]["tau"])
    assert tau.min() >= -1.0 and tau.max() < 1.0
    qdd = np.asarray(runs[0]["qdd"])                       # still the default: standard normal
    assert abs(qdd.std() - 1.0) < 0.1


# ---------------------------------------------------------------------------- reproducibility
def test_same_seed_same_bits_whatever_the_chunk_size(zoo_model, zoo_sweep, tmp_path):
    for cs in (400, 97):            # 1201 = 3 * 400 + 1: a last chunk of one state
        other = ej.sweep(zoo_model, 1201, ALL, tmp_path / f"c{cs}", chunk_size=cs, progress=False)
        assert other.nchunks == -(-1201 // cs)
        assert_same_bits(zoo_sweep, other)
    reseeded = ej.sweep(zoo_model, 1201, ALL, tmp_path / "seed", chunk_size=400, seed=1, progress=False)
    assert not np.array_equal(np.asarray(reseeded["q"]), np.asarray(zoo_sweep["q"]))


def test_same_seed_same_bits_whatever_the_thread_count(zoo_model, zoo_sweep, tmp_path):
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = ej.sweep(zoo_model, 1201, ALL, tmp_path / "t1", chunk_size=600, progress=False)
    finally:
        numba.set_num_threads(threads)
    assert_same_bits(zoo_sweep, one)


def test_every_zarr_store_holds_the_same_sweep(zoo_model, zoo_sweep, tmp_path):
    """A local directory, a zip file, memory and a file:// URL (through fsspec) hold the same bits;
    each reopens, and a zip file reopens from its path."""
    import zarr
    ref = arrays(zoo_sweep)
    zipped = zarr.storage.ZipStore(tmp_path / "s.zip", mode="w")
    memory = zarr.storage.MemoryStore()
    url = (tmp_path / "url").as_uri()
    for out in (tmp_path / "dir", zipped, memory, url):
        res = ej.sweep(zoo_model, 1201, ALL, out, chunk_size=400, progress=False)
        assert res.complete and res.nchunks == 4
        for name, a in arrays(res).items():
            assert np.array_equal(a, ref[name]), (out, name)
        again = ej.open_sweep(out)
        assert again.complete and np.array_equal(np.asarray(again["aba"]), ref["aba"])
        # a rerun resumes from the store: nothing to compute
        assert ej.sweep(zoo_model, 1201, ALL, out, chunk_size=400, progress=False).run_info["computed"] == 0
    assert str(tmp_path / "dir") == ej.open_sweep(tmp_path / "dir").path and ej.open_sweep(url).path == url
    zipped.close()
    from_zip = ej.open_sweep(str(tmp_path / "s.zip"))
    assert np.array_equal(np.asarray(from_zip["mass_matrix"]), ref["mass_matrix"])
    # any reader of zarr reads them: an edge chunk of one state, its status and the markers
    g = zarr.open_group(url, mode="r")
    assert np.array_equal(g["status"][:], np.zeros(1201, np.int8)) and g[".sweep/done"][:].tolist() == [1] * 4
    with pytest.raises(ValueError, match="not a local directory: give plot"):
        ej.open_sweep(url).plot()


def test_inputs_not_stored_are_drawn_again_with_the_same_bits(zoo_model, zoo_sweep, tmp_path):
    lean = ej.sweep(zoo_model, 1201, ALL, tmp_path / "lean", chunk_size=250, progress=False, store_inputs=False)
    assert_same_bits(lean, zoo_sweep)
    import zarr
    g = zarr.open_group(str(lean.path), mode="r")
    assert sorted(g.array_keys()) == sorted(a.replace(":", ".") for a in lean.arrays if lean[a].stored)
    assert "q" not in g and "tau" not in g and "rnea" in g and "status" in g
    q = np.asarray(zoo_sweep["q"])
    assert np.array_equal(lean["q"][[5, 1200, 600]], q[[5, 1200, 600]])
    # inputs of arrays and functions are stored all the same; q Normal around a mean with
    # quaternions; tolerance parameters
    h = ej.models.load("humanoid")
    q0 = h.neutral()
    q0[3:7] = [0.5, 0.5, -0.5, 0.5]
    kw = dict(chunk_size=70, progress=False, sampler=ej.Sampler(
        q=ej.Normal(q0, std=0.3), qd=lambda rng, size: rng.normal(0.0, 0.5, (size, h.nv)), tau=ej.Uniform(-2.0, 2.0)))
    full = ej.sweep(h, 300, ["aba"], tmp_path / "hf", **kw)
    thin = ej.sweep(h, 300, ["aba"], tmp_path / "hl", store_inputs=False, **kw)
    assert_same_bits(full, thin)
    assert [thin[k].stored for k in ("q", "qd", "tau")] == [False, True, False]
    arm = ej.models.load("arm7")
    tol = ej.Tolerances(mass=0.05, com=0.002, length=0.01, offset=0.001, angle=0.002, group=7)
    full = ej.sweep(arm, 60, ["rnea"], tmp_path / "tf", sampler=tol, chunk_size=25, progress=False)
    thin = ej.sweep(arm, 60, ["rnea"], tmp_path / "tl", sampler=tol, chunk_size=25, progress=False,
                    store_inputs=False)
    assert_same_bits(full, thin)
    assert not thin["mass"].stored and thin.sample_model(30).to_dict() == full.sample_model(30).to_dict()
    # where the math library draws other bits (a store begun on another machine), what was not
    # stored is not read, nor resumed
    zarr.open_group(str(lean.path), mode="r+").attrs["ejce_nb.sweep.numerics"] = "another libm"
    zarr.open_group(str(zoo_sweep.path), mode="r+").attrs["ejce_nb.sweep.numerics"] = "another libm"
    again = ej.open_sweep(lean.path)
    assert np.array_equal(np.asarray(again["rnea"]), np.asarray(zoo_sweep["rnea"]))
    with pytest.raises(ValueError, match="'q' was not stored .* draws it with other bits"):
        np.asarray(again["q"])
    assert np.array_equal(np.asarray(ej.open_sweep(zoo_sweep.path)["q"]), q)
    with pytest.raises(ValueError, match="does not store its sampled inputs .* with other bits"):
        ej.sweep(zoo_model, 1201, ALL, lean.path, chunk_size=250, progress=False, store_inputs=False)


def test_every_stored_row_is_the_batch_api_on_the_stored_inputs(zoo_model, zoo_sweep):
    m, r = zoo_model, zoo_sweep
    q, qd, qdd, tau = (np.asarray(r[k]) for k in ("q", "qd", "qdd", "tau"))
    assert np.array_equal(np.asarray(r["rnea"]), ej.rnea(m, q, qd, qdd))
    assert np.array_equal(np.asarray(r["aba"]), ej.aba(m, q, qd, tau))
    assert np.array_equal(np.asarray(r["mass_matrix"]), ej.mass_matrix(m, q))
    assert np.array_equal(np.asarray(r["nonlinear_effects"]), ej.nonlinear_effects(m, q, qd))
    assert np.array_equal(np.asarray(r["kinetic_energy"]), ej.kinetic_energy(m, q, qd))
    terms = ej.joint_terms(m, q, qd)
    for f in ("J", "sigma", "bias"):
        assert np.array_equal(np.asarray(getattr(r["joint_terms"], f)), getattr(terms, f))
    kin = ej.forward_kinematics(m, q)
    for body in ("tip", "hand"):
        pose = np.asarray(r[f"forward_kinematics:{body}"])
        i = m.body_index(body)
        assert np.array_equal(pose[:, :3, :3], kin.R[:, i]) and np.array_equal(pose[:, :3, 3], kin.p[:, i])
        assert np.array_equal(pose[:, 3], np.tile([0.0, 0.0, 0.0, 1.0], (len(q), 1)))
    assert np.array_equal(np.asarray(r["body_jacobian:twin"]), ej.body_jacobian(m, q, "twin"))
    # a body by index names the same pose
    by_index = r[f"forward_kinematics:{m.body_index('tip')}"]
    assert np.array_equal(np.asarray(by_index), np.asarray(r["forward_kinematics:tip"]))


def test_sampled_times_drive_a_rheonomic_model(tmp_path):
    m = ej.models.load("driven")
    res = ej.sweep(m, 900, ["rnea", "forward_kinematics:pendulum2"], tmp_path / "t", chunk_size=250,
                   sampler=ej.Sampler(t=ej.Uniform(0.0, 2.0)), progress=False)
    t = np.asarray(res["t"])
    assert res.inputs == ("q", "qd", "qdd", "t") and t.shape == (900,) and 0 <= t.min() and t.max() < 2
    q, qd, qdd = (np.asarray(res[k]) for k in ("q", "qd", "qdd"))
    assert np.array_equal(np.asarray(res["rnea"]), ej.rnea(m, q, qd, qdd, t=t))
    assert not np.array_equal(np.asarray(res["rnea"]), ej.rnea(m, q, qd, qdd, t=0.0))
    fixed = ej.sweep(m, 900, ["rnea"], tmp_path / "t0", chunk_size=900, t=0.5, progress=False)
    assert "t" not in fixed.inputs and fixed.t == 0.5
    assert np.array_equal(np.asarray(fixed["rnea"]), ej.rnea(m, q, qd, qdd, t=0.5))


def test_tolerance_study_stores_parameters_and_rebuilds_each_model(arm, tmp_path):
    tol = ej.Tolerances(mass=0.05, com=0.002, length=0.01, offset=0.001, angle=0.002, group=7)
    res = ej.sweep(arm, 60, ["rnea", "forward_kinematics:link8"], tmp_path / "tol", sampler=tol,
                   chunk_size=25, progress=False)
    again = ej.sweep(arm, 60, ["rnea", "forward_kinematics:link8"], tmp_path / "tol60", sampler=tol,
                     chunk_size=60, progress=False)
    assert_same_bits(res, again)
    assert set(res.inputs) == {"q", "qd", "qdd", "mass", "com", "placement", "placement_angle"}
    mass = np.asarray(res["mass"])
    massive = arm.body_mass[1:] > 0                        # a massless body stays massless
    assert mass.shape == (60, arm.nbodies) and mass[:, massive].min() > 0 and not mass[:, ~massive].any()
    groups = np.arange(60) // 7
    for g in np.unique(groups):
        rows = np.nonzero(groups == g)[0]
        assert np.all(mass[rows] == mass[rows[0]])
        model = res.sample_model(int(rows[0]))
        assert np.array_equal(model.body_mass[1:], mass[rows[0]])
        q, qd, qdd = (np.asarray(res[k])[rows] for k in ("q", "qd", "qdd"))
        assert np.array_equal(np.asarray(res["rnea"])[rows], ej.rnea(model, q, qd, qdd))
        pose = np.asarray(res["forward_kinematics:link8"])[rows]
        assert np.array_equal(pose[:, :3, 3], ej.forward_kinematics(model, q).p[:, arm.body_index("link8")])
    assert len(np.unique(mass[:, 3])) == len(np.unique(groups))
    rel = mass[:, massive] / arm.body_mass[1:][massive]
    assert 0.03 < np.log(rel).std() < 0.07
    only = ej.sweep(arm, 20, ["rnea"], tmp_path / "some", chunk_size=20, progress=False,
                    sampler=ej.Tolerances(mass=0.1, bodies=["link[1-3]"]))
    assert np.asarray(only["mass"]).shape == (20, 3)
    assert np.array_equal(only.sample_model(4).body_mass[5:], arm.body_mass[5:])


# ---------------------------------------------------------------------------- resume
KILL_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import ejce_nb as ej
from test_sweep import slow_qd
ej.sweep(ej.models.load("arm7"), {n}, ["rnea", "aba"], {out!r}, chunk_size={cs},
         sampler=ej.Sampler(qd=slow_qd), progress=False)
"""


def _done(path):
    try:
        return sorted(ej.open_sweep(path).chunks_done)
    except ValueError:                  # not created yet
        return []


def test_resume_after_sigkill_completes_with_every_chunk_once(arm, tmp_path):
    n, cs = 4000, 500
    kw = dict(chunk_size=cs, sampler=ej.Sampler(qd=slow_qd), progress=False)
    whole = ej.sweep(arm, n, ["rnea", "aba"], tmp_path / "whole", **kw)    # also warms the kernel cache
    out = str(tmp_path / "killed")
    env = dict(os.environ, EJCE_NB_TEST_SWEEP_DELAY="0.4",
               PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT.format(tests=TESTS, n=n, out=out, cs=cs)],
                            env=env, cwd=PKG_ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while len(_done(out)) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the sweep in the subprocess did not progress"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stderr.close()
    before = _done(out)
    assert 2 <= len(before) < n // cs, before
    kept = {k: os.stat(os.path.join(out, "rnea", "c", str(k), "0")).st_ino for k in before}
    resumed = ej.sweep(arm, n, ["rnea", "aba"], out, **kw)
    assert resumed.run_info["resumed_chunks"] == len(before)
    assert resumed.complete and _done(out) == list(range(n // cs))
    assert_same_bits(resumed, whole)
    # the finished chunks were not written again
    assert {k: os.stat(os.path.join(out, "rnea", "c", str(k), "0")).st_ino for k in before} == kept


def test_rerun_skips_finished_chunks_and_redoes_only_a_lost_one(arm, tmp_path):
    out = tmp_path / "s"
    first = ej.sweep(arm, 1900, ["rnea"], out, chunk_size=500, progress=False)
    bits = arrays(first)
    inode = lambda k: (lambda st: (st.st_ino, st.st_mtime_ns))(os.stat(out / "rnea" / "c" / str(k) / "0"))  # noqa
    before = [inode(k) for k in range(4)]
    again = ej.sweep(arm, 1900, ["rnea"], out, chunk_size=500, progress=False)
    assert again.run_info == {"computed": 0, "seconds": again.run_info["seconds"], "chunks": 0,
                              "resumed_chunks": 4, "flagged": 0, "compile_seconds": 0.0}
    assert first.run_info["compile_seconds"] > 0 and first.run_info["computed"] == 1900
    assert [inode(k) for k in range(4)] == before
    # chunks 2 and 3 unfinished (their markers gone, as when a sweep is killed while writing them),
    # chunk 2 with a file missing
    import zarr
    zarr.open_group(str(out), mode="r+")[".sweep/done"][2:] = 0
    os.remove(out / "q" / "c" / "2" / "0")
    assert not ej.open_sweep(out).complete and ej.open_sweep(out).missing() == [(1000, 1500), (1500, 1900)]
    assert np.isnan(np.asarray(ej.open_sweep(out)["q"])[1000:]).all()
    again = ej.sweep(arm, 1900, ["rnea"], out, chunk_size=500, progress=False)
    assert again.run_info["chunks"] == 2 and again.complete
    assert [inode(k) for k in range(2)] == before[:2]
    for name, a in arrays(again).items():
        assert np.array_equal(a, bits[name]), name


def test_different_arguments_on_a_sweep_are_refused(arm, tmp_path):
    out = tmp_path / "s"
    ej.sweep(arm, 1000, ["rnea", "aba"], out, chunk_size=300, progress=False)
    heavier = ej.Model.from_dict({**arm.to_dict(), "gravity": [0.0, 0.0, -9.8]})
    for kwargs, words in (
            (dict(n=1001), "n: stored 1000, given 1001"),
            (dict(seed=2), "seed: stored [0], given [2]"),
            (dict(chunk_size=200), "chunk_size: stored 300, given 200"),
            (dict(quantities=["rnea"]), "quantities: stored ['rnea', 'aba'], given ['rnea']"),
            (dict(t=1.0), "t: stored 0.0, given 1.0"),
            (dict(model=heavier), "the model differs"),
            (dict(sampler=ej.Normal(std=0.1)), "sampler of q"),
            (dict(sampler=ej.Sampler(tau=ej.Normal(std=2.0))), "sampler of tau"),
            (dict(store_inputs=False), "store_inputs: stored True, given False")):
        args = dict(model=arm, n=1000, quantities=["rnea", "aba"], out=out, chunk_size=300, progress=False)
        args.update(kwargs)
        with pytest.raises(ValueError, match="holds a different sweep") as e:
            ej.sweep(**args)
        assert words in str(e.value)
    assert arrays(ej.open_sweep(out))["rnea"].shape == (1000, 7)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not an ejce_nb sweep .*notes.txt"):
        ej.sweep(arm, 10, ["rnea"], foreign, progress=False)
    with pytest.raises(ValueError, match="exists and is not a directory"):
        ej.sweep(arm, 10, ["rnea"], foreign / "notes.txt", progress=False)
    import zarr
    theirs = tmp_path / "theirs"
    zarr.create_array(str(theirs), name="q", shape=(10, 7), dtype="float64")
    with pytest.raises(ValueError, match="is a zarr store but not an ejce_nb sweep"):
        ej.sweep(arm, 10, ["rnea"], theirs, progress=False)
    assert np.asarray(zarr.open_group(str(theirs), mode="r")["q"]).shape == (10, 7)
    # a store whose creation was interrupted (its root describes a sweep, its markers are missing)
    broken = tmp_path / "broken"
    g = zarr.create_group(str(broken), attributes={"ejce_nb.sweep": {"format": "ejce_nb.sweep", "version": 4}})
    g.create_array("q", shape=(3,), dtype="float64")
    with pytest.raises(ValueError, match="the creation of this sweep was interrupted; run the sweep again"):
        ej.open_sweep(broken)
    fresh = ej.sweep(arm, 10, ["rnea"], broken, progress=False)
    assert fresh.complete and np.asarray(fresh["q"]).shape == (10, 7)
    # a store of the previous format is read, and not resumed; older ones are refused
    old = tmp_path / "old"
    done = ej.sweep(arm, 10, ["rnea"], old, progress=False)
    root = zarr.open_group(str(old), mode="r+")
    spec = dict(root.attrs["ejce_nb.sweep"], version=3)
    root.attrs.update({"ejce_nb.sweep": spec, "ejce_nb.sweep.fingerprint": "of version 3"})
    assert np.array_equal(np.asarray(ej.open_sweep(old)["rnea"]), np.asarray(done["rnea"]))
    with pytest.raises(ValueError, match="sweep format version 3, this ejce_nb writes 4"):
        ej.sweep(arm, 10, ["rnea"], old, progress=False)
    root.attrs["ejce_nb.sweep"] = dict(spec, version=2)
    with pytest.raises(ValueError, match="sweep format version 2; this ejce_nb reads versions 3, 4"):
        ej.open_sweep(old)
    with Lock(str(out)):
        with pytest.raises(ValueError, match="being written by another process"):
            ej.sweep(arm, 1000, ["rnea", "aba"], out, chunk_size=300, progress=False)


# ---------------------------------------------------------------------------- memory
def test_memory_stays_bounded_by_a_few_chunks(arm, tmp_path):
    cs, nchunks = 10_000, 30
    chunk_bytes = cs * 6 * arm.nv * 8                  # q, qd, qdd, tau, rnea, aba of one chunk
    ej.sweep(arm, 2 * cs, ["rnea", "aba"], tmp_path / "warm", chunk_size=cs, progress=False)
    tracemalloc.start()
    try:
        res = ej.sweep(arm, nchunks * cs, ["rnea", "aba"], tmp_path / "big", chunk_size=cs, progress=False)
        peak_sweep = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        s = res.summary()
        peak_summary = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.complete and s["aba"].count == nchunks * cs
    assert peak_sweep < 6 * chunk_bytes, (peak_sweep, chunk_bytes)
    assert peak_summary < 3 * chunk_bytes, (peak_summary, chunk_bytes)
    assert nchunks * chunk_bytes > 4 * peak_sweep


# ---------------------------------------------------------------------------- bad input
def test_bad_arguments_are_clear_errors(arm, tmp_path):
    out = tmp_path / "s"
    cases = [
        (dict(quantities=["rnea", "rnae"]), "unknown quantity 'rnae'; known: rnea, aba"),
        (dict(quantities="rnea,forward_kinematics:hand"), "no body 'hand'; bodies: world, link0"),
        (dict(quantities=["body_jacobian"]), "needs a body: 'body_jacobian:BODY'"),
        (dict(quantities=["rnea:link1"]), "rnea takes no body"),
        (dict(quantities=["aba", "aba"]), "listed twice"),
        (dict(quantities=[]), "quantities is empty"),
        (dict(n=0), "n must be a positive integer, got 0"),
        (dict(n=-5), "n must be a positive integer, got -5"),
        (dict(n=2.5), "n must be a positive integer, got 2.5"),
        (dict(chunk_size=0), "chunk_size must be a positive integer"),
        (dict(seed=-1), "seed must be a non-negative integer"),
        (dict(t=float("nan")), "t must be finite"),
        (dict(out=tmp_path / "file" / "sub"), "cannot write the sweep to"),
        (dict(sampler=np.zeros((9, 7))), r"the array has shape \(9, 7\); expected \(10, 7\)"),
        (dict(sampler=ej.Sampler(tau=ej.Normal())), "sampler gives tau, which none of the quantities"),
        (dict(sampler=ej.Sampler(qd=ej.Uniform())), "Uniform for qd needs low and high"),
        (dict(sampler=ej.Normal(std=[1.0, 2.0])), r"std of q .* must be a number or an array of shape \(7,\)"),
        (dict(scheduler="tcp://nowhere:8786"), "scheduler must be None or a dask.distributed.Client"),
        (dict(model="arm7"), "model must be an ej.Model"),
        (dict(store_inputs="no"), "store_inputs must be True or False"),
    ]
    (tmp_path / "file").write_text("x")
    for kwargs, words in cases:
        args = dict(model=arm, n=10, quantities=["rnea"], out=out, progress=False)
        args.update(kwargs)
        with pytest.raises(ValueError, match=words):
            ej.sweep(**args)
    with pytest.raises(ValueError, match="Tolerances mass must be finite and >= 0"):
        ej.Tolerances(mass=-0.1)
    with pytest.raises(ValueError, match="nothing would vary"):
        ej.Tolerances()
    with pytest.raises(ValueError, match="gimbal_margin"):
        ej.Uniform(gimbal_margin=1.0)
    b = ej.ModelBuilder()
    b.add_body("b", joint=Spherical("ZYX"), mass=1.0, inertia=inertia(), q_lower=[None, 1.5, None],
               q_upper=[None, 1.6, None])
    with pytest.raises(ValueError, match="leaves nothing 0.1 rad away from gimbal lock"):
        ej.sweep(b.build(), 10, ["aba"], out, progress=False)
    with pytest.raises(ValueError, match="no body matches 'elbow'"):
        ej.sweep(arm, 10, ["rnea"], out, sampler=ej.Tolerances(mass=0.1, bodies=["elbow"]), progress=False)


def test_a_bad_sample_is_flagged_in_status_and_the_sweep_goes_on(arm, tmp_path):
    def q_with_holes(rng, size):
        q = rng.uniform(-1.0, 1.0, (size, 7))
        q[rng.indices == 1234, 3] = np.nan
        q[rng.indices == 3001, 0] = np.inf
        return q

    res = ej.sweep(arm, 4000, ["rnea", "aba"], tmp_path / "nan", chunk_size=500, sampler=q_with_holes,
                   progress=False)
    assert res.complete and res.run_info["flagged"] == 2
    status = np.asarray(res["status"])
    assert status.dtype == np.int8 and status.shape == (4000,)
    assert np.nonzero(status)[0].tolist() == [1234, 3001]
    assert (status[[1234, 3001]] == ej.Status.NONFINITE_INPUT).all()
    q, qd, qdd, tau = (np.asarray(res[k]) for k in ("q", "qd", "qdd", "tau"))
    rnea, aba = np.asarray(res["rnea"]), np.asarray(res["aba"])
    assert np.isnan(rnea[[1234, 3001]]).all() and np.isnan(aba[[1234, 3001]]).all()
    ok = status == 0
    assert np.array_equal(rnea[ok], ej.rnea(arm, q[ok], qd[ok], qdd[ok]))
    assert np.array_equal(aba[ok], ej.aba(arm, q[ok], qd[ok], tau[ok]))
    # the engine's own flags, sample for sample
    assert np.array_equal(status, ej.rnea(arm, q, qd, qdd, errors="flag")[1])
    assert res.status_counts() == {ej.Status.OK: 3998, ej.Status.NONFINITE_INPUT: 2}
    s = res.summary()
    assert s["aba"].count == 3998 and np.isfinite(s["aba"].mean).all()
    assert s["q"].count == 3998 and s["qd"].count == 4000
    assert "2 samples flagged (NaN in what they break): 2 NONFINITE_INPUT" in str(s)
    assert res.histogram("rnea", bins=10)[0].sum(axis=-1).tolist() == [3998] * 7

    # a gimbal lock breaks forward dynamics there, not the inverse dynamics
    b = ej.ModelBuilder()
    b.add_body("head", joint=Spherical("ZYX"), mass=1.0, com=(0.0, 0.0, 0.1), inertia=inertia())
    model = b.build()
    Q = np.random.default_rng(0).uniform(-1.0, 1.0, (900, 3))
    Q[777, 1] = np.pi / 2
    lock = ej.sweep(model, 900, ["rnea", "aba", "forward_kinematics:head"], tmp_path / "lock", chunk_size=300,
                    sampler=Q, progress=False)
    status = np.asarray(lock["status"])
    assert np.nonzero(status)[0].tolist() == [777] and status[777] == ej.Status.SINGULAR_JOINT
    aba, rnea = np.asarray(lock["aba"]), np.asarray(lock["rnea"])
    assert np.isnan(aba[777]).all() and not np.isnan(np.delete(aba, 777, axis=0)).any()
    qd, qdd = np.asarray(lock["qd"]), np.asarray(lock["qdd"])
    assert np.array_equal(rnea, ej.rnea(model, Q, qd, qdd))
    assert np.isfinite(np.asarray(lock["forward_kinematics:head"])).all()


def test_a_failing_chunk_names_its_samples_and_keeps_the_finished_ones(arm, tmp_path):
    def breaks_at_1234(rng, size):
        if 1234 in rng.indices:
            raise RuntimeError("no data for sample 1234")
        return rng.uniform(-1.0, 1.0, (size, 7))

    out = tmp_path / "raise"
    with pytest.raises(ej.SweepError) as e:
        ej.sweep(arm, 4000, ["rnea", "aba"], out, chunk_size=500, sampler=breaks_at_1234, progress=False)
    err = e.value
    assert err.chunk == 2 and err.samples == range(1000, 1500)
    assert ("chunk 2 (samples 1000..1499): drawing q failed: RuntimeError: no data for sample 1234"
            in str(err))
    assert "2 of 8 chunks are finished and kept" in str(err)
    assert err.result.chunks_done == {0, 1} and isinstance(err.__cause__, RuntimeError)
    assert [f["chunk"] for f in ej.open_sweep(out).failures()] == [2]
    assert "no data for sample 1234" in ej.open_sweep(out).failures()[0]["reason"]
    assert (np.asarray(err.result["status"])[1000:] == -1).all()

    def wrong_width(rng, size):
        return rng.random((size, 6))

    with pytest.raises(ej.SweepError, match=r"returned shape \(500, 6\); expected \(500, 7\)") as e:
        ej.sweep(arm, 1000, ["rnea"], tmp_path / "shape", chunk_size=500, sampler=wrong_width, progress=False)
    assert e.value.chunk == 0 and e.value.result.chunks_done == set()


# ---------------------------------------------------------------------------- reading the store
def test_result_arrays_index_like_numpy_and_zarr_and_dask_read_the_store(zoo_model, tmp_path):
    res = ej.sweep(zoo_model, 1000, ["rnea", "kinetic_energy", "forward_kinematics:tip"], tmp_path / "s",
                   chunk_size=300, progress=False)
    rnea = res["rnea"]
    full = np.asarray(rnea)
    assert rnea.shape == full.shape == (1000, zoo_model.nv) and len(rnea) == 1000 and rnea.dtype == np.float64
    for key in (5, -1, slice(None), slice(250, 710), slice(899, 100, -7), np.array([3, 950, 3, 301]),
                full[:, 0] > 0, (slice(10, 20), 2), (700, slice(1, 4)), (Ellipsis, 0)):
        assert np.array_equal(rnea[key], full[key])
    with pytest.raises(IndexError):
        rnea[1000]
    assert res.keys() == ("q", "qd", "qdd", "rnea", "kinetic_energy", "forward_kinematics:tip", "status")
    with pytest.raises(KeyError, match="'aba' is not in this sweep"):
        res["aba"]
    import dask.array as da
    import zarr
    with warnings.catch_warnings():
        # zarr warns of any entry of the directory that is not part of the hierarchy
        warnings.simplefilter("error", UserWarning)
        g = zarr.open_group(str(res.path), mode="r")
        assert sorted(g.array_keys()) == sorted(a.replace(":", ".") for a in res.arrays)
        assert np.array_equal(g["forward_kinematics.tip"][:], np.asarray(res["forward_kinematics:tip"]))
        assert np.array_equal(g["kinetic_energy"][:], np.asarray(res["kinetic_energy"]))
        assert g["q"].chunks == (300, zoo_model.nq) and g["q"].dtype == np.float64
        assert g["status"].dtype == np.int8 and np.array_equal(g["status"][:], np.asarray(res["status"]))
        assert not np.asarray(res["status"]).any()
        assert np.array_equal(g[".sweep/done"][:], [1, 1, 1, 1])
        assert g.attrs["ejce_nb.sweep"]["quantities"] == list(res.quantities)
        assert np.array_equal(da.from_zarr(str(res.path), component="rnea").compute(), full)
        assert np.array_equal(res.to_dask("q").compute(), np.asarray(res["q"]))
    # a partial sweep: unfinished rows read as NaN, as zarr's fill value
    zarr.open_group(str(res.path), mode="r+")[".sweep/done"][1] = 0
    part = ej.open_sweep(res.path)
    a = np.asarray(part["rnea"])
    assert np.isnan(a[300:600]).all() and np.array_equal(a[:300], full[:300]) and part.n_done == 700
    st = np.asarray(part["status"])
    assert (st[300:600] == -1).all() and not st[:300].any() and not st[600:].any()


def test_summary_histogram_and_workspace_agree_with_numpy(zoo_model, zoo_sweep):
    res = zoo_sweep
    s = res.summary()
    assert set(s) == set(res.arrays) - {"status"} and s.status == {ej.Status.OK: 1201}
    assert "no sample flagged" in str(s)
    for name in ("q", "aba", "kinetic_energy", "joint_terms.bias", "forward_kinematics:tip"):
        a = np.asarray(res[name])
        st = s[name]
        assert st.count == len(a)
        assert np.array_equal(st.min, a.min(axis=0)) and np.array_equal(st.max, a.max(axis=0))
        np.testing.assert_allclose(st.mean, a.mean(axis=0), rtol=1e-12, atol=1e-12 * np.abs(a).max())
        np.testing.assert_allclose(st.std, a.std(axis=0), rtol=1e-10, atol=1e-12 * np.abs(a).max())
    table = str(s)
    nv = zoo_model.nv
    assert f"aba ({nv} entries)" in table and "forward_kinematics:tip px" in table
    assert f"mass_matrix ({nv * nv} entries)" in table and "kinetic_energy " in table
    counts, edges = res.histogram("rnea", bins=20)
    a = np.asarray(res["rnea"])
    assert counts.shape == (zoo_model.nv, 20) and edges.shape == (zoo_model.nv, 21)
    for k in range(zoo_model.nv):
        assert np.array_equal(counts[k], np.histogram(a[:, k], bins=edges[k])[0])
        assert counts[k].sum() == len(a)
    c, e = res.histogram("kinetic_energy", bins=10, range=(0.0, 1.0))
    assert np.array_equal(c, np.histogram(np.asarray(res["kinetic_energy"]), bins=10, range=(0.0, 1.0))[0])
    with pytest.raises(ValueError, match="several bodies have poses"):
        res.workspace()
    pts = res.workspace("tip")
    assert np.array_equal(pts, np.asarray(res["forward_kinematics:tip"])[:, :3, 3])
    some = res.workspace("tip", max_points=100)
    assert len(some) <= 100 and np.array_equal(some, pts[::-(-len(pts) // 100)])


def test_report_names_entries_and_colours_with_a_bar(arm, tmp_path):
    import matplotlib
    res = ej.sweep(arm, 300, ["rnea", "mass_matrix", "forward_kinematics:link8"], tmp_path / "s", progress=False)
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        svg = Path(res.plot(tmp_path / "r.svg")).read_text()
    for name in arm.velocity_names:          # the rnea panel's legend names the joints
        assert f">{name}<" in svg, name
    assert "z of the point (m)" in svg and "mass_matrix (all 49 entries together)" in svg
    # histograms and the workspace row fill the grid: two histograms, 3 cloud panels, 1 colour bar
    assert svg.count('<g id="axes_') == 6


def test_cli_sweep_and_report(tmp_path, capsys):
    out = str(tmp_path / "arm")
    argv = ["sweep", "arm7", "--n", "2e3", "--quantities", "rnea,aba,forward_kinematics:link8", "--out", out,
            "--chunk-size", "500"]
    assert cli.main(argv) == 0
    cap = capsys.readouterr()
    assert "states/s" in cap.out and "2,000 states of arm7" in cap.out
    assert "states/s" in cap.err and "2.00k/2.00k" in cap.err          # the progress bar
    assert cli.main(argv) == 0
    assert "all 2,000 states were already done" in capsys.readouterr().out
    assert cli.main(["report", out]) == 0
    text = capsys.readouterr().out
    assert "rnea[6]" in text and "forward_kinematics:link8 pz" in text and f"wrote {out}.report.png" in text
    png = Path(out + ".report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert cli.main(["sweep", "arm7", "--n", "2e3", "--quantities", "rnea", "--out", out]) == 2
    assert "holds a different sweep" in capsys.readouterr().err
    lean = str(tmp_path / "lean")
    assert cli.main(["sweep", "arm7", "--n", "2e3", "--quantities", "rnea,aba,forward_kinematics:link8", "--out",
                     lean, "--chunk-size", "500", "--no-store-inputs", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert not ej.open_sweep(lean)["q"].stored
    assert np.array_equal(np.asarray(ej.open_sweep(lean)["aba"]), np.asarray(ej.open_sweep(out)["aba"]))
    assert cli.main(["sweep", "arm7", "--n", "10", "--quantities", "rnea,hand", "--out", str(tmp_path / "x")]) == 2
    assert "unknown quantity 'hand'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["sweep", "arm7", "--n", "0", "--quantities", "rnea", "--out", str(tmp_path / "y")])
    assert "expected a positive integer, got '0'" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path / "nothing")]) == 2
    assert "is not a sweep directory" in capsys.readouterr().err


def test_without_tqdm_the_bar_is_a_clear_error_and_progress_false_is_silent(arm, tmp_path, monkeypatch,
                                                                            capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ValueError, match=r'needs tqdm, which is not installed: pip install "\.\[sweep\]" '
                                         r'\(or progress=False\)'):
        ej.sweep(arm, 1000, ["rnea"], tmp_path / "s", chunk_size=250, progress=True)
    assert not (tmp_path / "s").exists()
    ej.sweep(arm, 1000, ["rnea"], tmp_path / "t", chunk_size=250, progress=False)
    assert capsys.readouterr().err == ""


def test_without_zarr_a_sweep_says_what_to_install(arm, tmp_path, monkeypatch):
    done = ej.sweep(arm, 100, ["rnea"], tmp_path / "s", progress=False)
    monkeypatch.setitem(sys.modules, "zarr", None)
    for call in (lambda: ej.sweep(arm, 100, ["rnea"], tmp_path / "t", progress=False),
                 lambda: ej.open_sweep(done.path)):
        with pytest.raises(ValueError, match=r'stored with zarr, which is not installed: pip install "\.\[sweep\]"'):
            call()
    assert not (tmp_path / "t").exists()


def test_importing_needs_no_optional_dependency_and_a_local_sweep_only_zarr(tmp_path):
    code = ("import sys, numpy as np, ejce_nb as ej\n"
            "print(sorted(m for m in ('zarr', 'dask', 'distributed', 'tqdm', 'matplotlib') if m in sys.modules))\n"
            f"r = ej.sweep(ej.models.load('arm7'), 300, ['rnea'], {str(tmp_path / 's')!r}, chunk_size=100,\n"
            "             progress=False)\n"
            "s = r.summary(); a = np.asarray(r['rnea'])\n"
            "print(sorted(m for m in ('zarr', 'dask', 'distributed', 'tqdm', 'matplotlib') if m in sys.modules))\n")
    env = dict(os.environ, PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG_ROOT, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["[]", "['zarr']"]


# ---------------------------------------------------------------------------- Dask
ORIGINAL_THREADS = os.environ.get("NUMBA_NUM_THREADS")


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster
    # one Numba thread per worker process, so that two workers share the cores instead of fighting
    # for them; set in each worker before it imports numba (a pre-spawn environment would be put into
    # this process's os.environ by the nannies, and this process's Numba refuses a changed thread count)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR, env={"NUMBA_NUM_THREADS": "1"})
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        try:
            cluster.close()
        except KeyError as e:
            # distributed's worker-status watcher can meet the removal of a worker the scheduler
            # has already forgotten while the cluster shuts down (dask/distributed#5407): the
            # cluster is closed all the same, and nothing the tests check depends on it
            warnings.warn(f"LocalCluster.close raised {e!r} while shutting down")


def test_dask_workers_give_the_local_bits_and_resume_local_sweeps(zoo_model, zoo_sweep, client, tmp_path):
    files = client.run(lambda: __import__("ejce_nb").__file__)
    assert len(files) == 2 and set(files.values()) == {ej.__file__}
    assert set(client.run(lambda: __import__("numba").config.NUMBA_NUM_THREADS).values()) == {1}
    assert os.environ.get("NUMBA_NUM_THREADS") == ORIGINAL_THREADS
    two = ej.sweep(zoo_model, 1201, ALL, tmp_path / "two", chunk_size=150, scheduler=client, progress=False)
    assert_same_bits(two, zoo_sweep)
    assert len(client.nthreads()) == 2
    # inputs drawn on the workers and not stored read back as the local run's
    lean = ej.sweep(zoo_model, 1201, ALL, tmp_path / "lean", chunk_size=300, scheduler=client, progress=False,
                    store_inputs=False)
    assert_same_bits(lean, zoo_sweep)

    # a file:// URL, written by the workers through fsspec; a store in this process's memory is refused
    url = (tmp_path / "url").as_uri()
    assert_same_bits(ej.sweep(zoo_model, 1201, ALL, url, chunk_size=300, scheduler=client, progress=False), zoo_sweep)
    import zarr
    with pytest.raises(ValueError, match="the workers cannot write .*a MemoryStore lives in this process"):
        ej.sweep(zoo_model, 1201, ALL, zarr.storage.MemoryStore(), scheduler=client, progress=False)
    # a partial local sweep finished on the cluster
    out = tmp_path / "mixed"
    import zarr
    ej.sweep(zoo_model, 1201, ALL, out, chunk_size=250, progress=False)
    for k in (1, 3):
        zarr.open_group(str(out), mode="r+")[".sweep/done"][k] = 0
    mixed = ej.sweep(zoo_model, 1201, ALL, out, chunk_size=250, scheduler=client, progress=False)
    assert mixed.run_info["chunks"] == 2 and mixed.run_info["resumed_chunks"] == 3
    assert_same_bits(mixed, zoo_sweep)
    # one worker fewer, the same bits
    client.cluster.scale(1)
    client.wait_for_workers(1)
    deadline = time.monotonic() + 60
    while len(client.nthreads()) != 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    one = ej.sweep(zoo_model, 1201, ALL, tmp_path / "one", chunk_size=400, scheduler=client, progress=False)
    assert len(client.nthreads()) == 1
    assert_same_bits(one, zoo_sweep)
    # a model with loop closures: the states closed on the workers are the local run's
    from test_loops import fourbar
    fb, loopq = fourbar(), ["constrained_dynamics", "forward_kinematics:rocker"]
    local = ej.sweep(fb, 300, loopq, tmp_path / "fb_local", chunk_size=100, progress=False)
    assert_same_bits(ej.sweep(fb, 300, loopq, tmp_path / "fb_dask", chunk_size=75, scheduler=client, progress=False),
                     local)
    # a bad sample is flagged on the worker
    arm = ej.models.load("arm7")
    Q = ej.models.random_states(arm, 600, 3)[0]
    Q[450, 2] = np.inf
    flagged = ej.sweep(arm, 600, ["rnea"], tmp_path / "flag", chunk_size=200, sampler=Q, scheduler=client,
                       progress=False)
    assert np.nonzero(np.asarray(flagged["status"]))[0].tolist() == [450] and flagged.run_info["flagged"] == 1
    assert np.isnan(np.asarray(flagged["rnea"])[450]).all()

    # a chunk failing on a worker: its samples and reason reach the caller, the others are kept
    def breaks_at_450(rng, size):
        if 450 in rng.indices:
            raise RuntimeError("no data for sample 450")
        return rng.standard_normal((size, 7))

    with pytest.raises(ej.SweepError, match="drawing qd failed: RuntimeError: no data for sample 450") as e:
        ej.sweep(arm, 600, ["rnea"], tmp_path / "bad", chunk_size=200, sampler=ej.Sampler(qd=breaks_at_450),
                 scheduler=client, progress=False)
    assert e.value.chunk == 2 and e.value.result.chunks_done == {0, 1}
