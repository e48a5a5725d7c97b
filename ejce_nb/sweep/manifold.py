"""Samplers on the configuration manifold: ``Uniform`` and ``Normal`` for q, joint by joint
(limits, angles, lengths, rotations uniform on SO(3), Euler angles away from gimbal lock,
quaternions turned by a tangent perturbation), and the binding of any input's source."""
import math

import numpy as np
from numba import prange

from .._jit import pjit
from . import rng
from .distributions import Normal, Sampler, Tolerances, Uniform, json_vector, vector
from .sources import Array, Constant, Function, PlainNormal, PlainUniform, Source

_ROT_KIND = {"quaternion": 0, "rotvec": 1, "rodrigues": 2, "mrp": 3}


def _coordinate_kinds(model):
    """Per joint with coordinates: (joint, q slice, v slice, kinds of its coordinates, rotation
    parameterisation or None, Euler sequence or None)."""
    out = []
    for j in range(1, model.nbodies + 1):
        qs, vs = model.q_slice(j), model.v_slice(j)
        if qs.stop == qs.start:
            continue
        d = model.joint_specs[j].to_dict()
        typ = d["type"]
        rot = seq = None
        if typ in ("Revolute", "Helical"):
            kinds = ["angle"]
        elif typ == "Prismatic":
            kinds = ["length"]
        elif typ == "Cylindrical":
            kinds = ["angle", "length"]
        elif typ == "Universal":
            kinds = ["angle", "angle"]
        elif typ == "Planar":
            kinds = ["length", "length", "angle"]
        elif typ == "Translation":
            kinds = ["length"] * 3
        elif typ in ("Spherical", "Free"):
            param = d["param"]
            kinds = ["length"] * 3 if typ == "Free" else []
            if param in _ROT_KIND:
                rot = param
                kinds += ["rotation"] * (4 if param == "quaternion" else 3)
            else:
                seq = param
                kinds += ["angle", "euler_proper" if param[0].lower() == param[2].lower() else "euler_tait", "angle"]
        elif typ == "Composite":
            kinds = ["angle"] * (qs.stop - qs.start)
        else:
            raise ValueError(f"joint {model.joint_names[j]!r}: no default sampling for a {typ} joint; "
                             "give q explicitly (an array, a function or Normal)")
        if len(kinds) != qs.stop - qs.start:
            raise ValueError(f"joint {model.joint_names[j]!r}: {typ} has {qs.stop - qs.start} coordinates, "
                             f"expected {len(kinds)}")
        out.append((j, qs, vs, kinds, rot, seq))
    return out


def _allowed_intervals(a, b, kind, margin):
    """[a, b) as a list of (start, length), less the bands within ``margin`` of an Euler middle
    angle's singular values (k pi for proper sequences, pi/2 + k pi for Tait-Bryan ones)."""
    if kind not in ("euler_proper", "euler_tait") or margin == 0.0:
        return [(a, b - a)]
    off = 0.0 if kind == "euler_proper" else 0.5 * np.pi
    k0 = math.floor((a - margin - off) / np.pi)
    k1 = math.ceil((b + margin - off) / np.pi)
    pieces, start = [], a
    for k in range(k0, k1 + 1):
        s = off + k * np.pi
        lo, hi = s - margin, s + margin
        if hi <= start or lo >= b:
            continue
        if lo > start:
            pieces.append((start, lo - start))
        start = max(start, hi)
    if start < b:
        pieces.append((start, b - start))
    return [p for p in pieces if p[1] > 0]


class ConfigUniform(Source):
    def __init__(self, dist, model):
        nq = model.nq
        self.shape = (nq,)
        nan = np.full(nq, np.nan)
        low = nan if dist.low is None else vector(dist.low, nq, "Uniform low of q", allow_nan=True)
        high = nan if dist.high is None else vector(dist.high, nq, "Uniform high of q", allow_nan=True)
        lo = np.where(np.isnan(low), model.q_lower, low)
        hi = np.where(np.isnan(high), model.q_upper, high)
        self.columns = []            # (q index, starts, cumulative lengths, total)
        self.rotations = []          # (q start, kind code)
        L, margin = dist.length, dist.gimbal_margin
        for j, qs, vs, kinds, rot, seq in _coordinate_kinds(model):
            name = model.joint_names[j]
            rot_start = qs.stop - (4 if rot == "quaternion" else 3)
            boxed = rot is not None and rot != "quaternion" and np.any(np.isfinite(
                np.concatenate([lo[rot_start:qs.stop], hi[rot_start:qs.stop]])))
            if rot is not None and not boxed:
                self.rotations.append((rot_start, _ROT_KIND[rot]))
            for x, kind in enumerate(kinds):
                i = qs.start + x
                if kind == "rotation" and not boxed:
                    continue
                h = {"angle": np.pi, "length": L, "rotation": np.pi if rot == "rotvec" else 1.0}.get(kind, np.pi)
                a, b = lo[i], hi[i]
                if not np.isfinite(a):
                    a = -h if not np.isfinite(b) or b > -h else b - 2 * h
                if not np.isfinite(b):
                    b = h if a < h else a + 2 * h
                if b < a:
                    raise ValueError(f"q[{i}] of joint {name!r}: lower bound {a} exceeds upper bound {b}")
                pieces = _allowed_intervals(a, b, kind, margin)
                if not pieces:
                    raise ValueError(f"q[{i}], the middle Euler angle of joint {name!r} ({seq}): the range "
                                     f"[{a:.6g}, {b:.6g}] leaves nothing {margin} rad away from gimbal lock")
                starts = np.array([p[0] for p in pieces])
                cum = np.concatenate([[0.0], np.cumsum([p[1] for p in pieces])])
                self.columns.append((i, starts, cum[:-1].copy(), float(cum[-1])))
        self.rot_start = np.array([r[0] for r in self.rotations], dtype=np.int64)
        self.rot_kind = np.array([r[1] for r in self.rotations], dtype=np.int64)
        # the interval program of _intervals: word c of a sample's stream is coordinate col[c]
        self.col = np.array([c[0] for c in self.columns], dtype=np.int64)
        self.cnt = np.array([len(c[1]) for c in self.columns], dtype=np.int64)
        self.off = np.concatenate([[0], np.cumsum(self.cnt)[:-1]]).astype(np.int64)
        self.starts = np.concatenate([c[1] for c in self.columns] + [np.zeros(0)])
        self.cums = np.concatenate([c[2] for c in self.columns] + [np.zeros(0)])
        self.totals = np.array([c[3] for c in self.columns], dtype=np.float64)
        self._description = {"type": "Uniform", "low": json_vector(low), "high": json_vector(high),
                             "length": L, "gimbal_margin": margin}

    def draw(self, entropy, name, first, m, buf):
        q = buf("out", (m,) + self.shape)
        if len(self.col) < self.shape[0]:
            q[...] = 0.0
        if len(self.col):
            u = buf("u", (m, len(self.col)))
            rng.uniform_rows(rng.key(entropy, name, 0), first, u)
            _intervals(u, self.col, self.off, self.cnt, self.starts, self.cums, self.totals, q)
        if len(self.rotations):
            z = buf("z", (m, 4 * len(self.rotations)))
            rng.normal_rows(rng.key(entropy, name, 1), first, z)
            rotations_from_normals(z, self.rot_start, self.rot_kind, q)
        return q

    def describe(self):
        return self._description


@pjit
def _intervals(U, col, off, cnt, starts, cums, totals, Q):
    """Q[i, col[c]] = U[i, c] mapped uniformly onto the union of the intervals of coordinate c:
    starts[off[c]:off[c] + cnt[c]], with cumulative lengths cums there and total totals[c]."""
    for i in prange(U.shape[0]):
        for c in range(col.shape[0]):
            x = U[i, c] * totals[c]
            o = off[c]
            p = 0
            while p + 1 < cnt[c] and x >= cums[o + p + 1]:
                p += 1
            Q[i, col[c]] = starts[o + p] + (x - cums[o + p])


@pjit
def rotations_from_normals(Z, start, kind, Q):
    """Rotation blocks of Q from 4 normals each: a uniform unit quaternion (w, x, y, z), or
    (w >= 0) its rotation vector, Gibbs vector or modified Rodrigues parameters."""
    for i in prange(Z.shape[0]):
        for r in range(start.shape[0]):
            w, x, y, z = Z[i, 4 * r], Z[i, 4 * r + 1], Z[i, 4 * r + 2], Z[i, 4 * r + 3]
            nrm = math.sqrt(w * w + x * x + y * y + z * z)
            w, x, y, z = w / nrm, x / nrm, y / nrm, z / nrm
            s = start[r]
            if kind[r] == 0:
                Q[i, s], Q[i, s + 1], Q[i, s + 2], Q[i, s + 3] = w, x, y, z
                continue
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            if kind[r] == 1:
                sv = math.sqrt(x * x + y * y + z * z)
                f = 2.0 * math.atan2(sv, w) / sv if sv > 0.0 else 2.0
            elif kind[r] == 2:
                f = 1.0 / w
            else:
                f = 1.0 / (1.0 + w)
            Q[i, s], Q[i, s + 1], Q[i, s + 2] = f * x, f * y, f * z


@pjit
def quaternion_perturb(Q, D, qstart, vstart):
    """Q[i, block] <- Q[i, block] * exp(D[i, vblock] / 2): a right (C axes) rotation by the
    rotation vector of the perturbation, renormalised."""
    for i in prange(Q.shape[0]):
        for r in range(qstart.shape[0]):
            s, v = qstart[r], vstart[r]
            px, py, pz = D[i, v], D[i, v + 1], D[i, v + 2]
            th = math.sqrt(px * px + py * py + pz * pz)
            if th < 1e-8:
                c, f = 1.0 - th * th / 8.0, 0.5 - th * th / 48.0
            else:
                c, f = math.cos(0.5 * th), math.sin(0.5 * th) / th
            bw, bx, by, bz = c, f * px, f * py, f * pz
            aw, ax, ay, az = Q[i, s], Q[i, s + 1], Q[i, s + 2], Q[i, s + 3]
            w = aw * bw - ax * bx - ay * by - az * bz
            x = aw * bx + ax * bw + ay * bz - az * by
            y = aw * by - ax * bz + ay * bw + az * bx
            z = aw * bz + ax * by - ay * bx + az * bw
            n = math.sqrt(w * w + x * x + y * y + z * z)
            Q[i, s], Q[i, s + 1], Q[i, s + 2], Q[i, s + 3] = w / n, x / n, y / n, z / n


class ConfigNormal(Source):
    def __init__(self, dist, model):
        nq, nv = model.nq, model.nv
        self.shape = (nq,)
        given = None if dist.mean is None else vector(dist.mean, nq, "Normal mean of q")
        mean = model.neutral().copy() if given is None else given.copy()
        self.std = vector(dist.std, nv, "Normal std of q (one per velocity variable)")
        if np.any(self.std < 0):
            raise ValueError(f"Normal std of q must be >= 0, got {self.std.tolist()}")
        qi, vi, qstart, vstart = [], [], [], []
        for j, qs, vs, kinds, rot, seq in _coordinate_kinds(model):
            n_lin = qs.stop - qs.start - (4 if rot == "quaternion" else 0)
            if rot == "quaternion":
                qb, vb = qs.stop - 4, vs.stop - 3
                quat = mean[qb:qs.stop]
                nrm = float(np.sqrt(np.sum(quat * quat)))
                if abs(nrm - 1.0) > 1e-6:
                    raise ValueError(f"Normal mean: q[{qb}:{qs.stop}], the quaternion of joint "
                                     f"{model.joint_names[j]!r}, has norm {nrm:.6g}; a unit quaternion is required")
                mean[qb:qs.stop] = quat / nrm
                qstart.append(qb)
                vstart.append(vb)
            if n_lin != (vs.stop - vs.start) - (3 if rot == "quaternion" else 0):
                raise ValueError(f"Normal for q: joint {model.joint_names[j]!r} has no coordinate-wise "
                                 "tangent; give q as an array or a function")
            qi += list(range(qs.start, qs.start + n_lin))
            vi += list(range(vs.start, vs.start + n_lin))
        self.mean, self.qi, self.vi = mean, np.array(qi, dtype=np.int64), np.array(vi, dtype=np.int64)
        self.qstart, self.vstart = np.array(qstart, dtype=np.int64), np.array(vstart, dtype=np.int64)
        # the mean as given: drawing again from the description repeats the normalisation
        self._description = {"type": "Normal", "mean": None if given is None else given.tolist(),
                             "std": self.std.tolist()}

    def draw(self, entropy, name, first, m, buf):
        d = buf("d", (m, self.std.shape[0]))
        rng.normal_rows(rng.key(entropy, name, 0), first, d)
        d *= self.std
        q = buf("out", (m,) + self.shape)
        q[:] = self.mean
        q[:, self.qi] = self.mean[self.qi] + d[:, self.vi]
        if self.qstart.shape[0]:
            quaternion_perturb(q, d, self.qstart, self.vstart)
        return q

    def describe(self):
        return self._description


def bind_source(obj, name, model, n, t):
    """The bound source of input ``name`` (q, qd, qdd, tau, t) from what the user gave."""
    shape = {"q": (model.nq,), "t": ()}.get(name, (model.nv,))
    if obj is None:
        if name == "q":
            return ConfigUniform(Uniform(), model)
        if name == "t":
            return Constant(t)
        return PlainNormal(Normal(), name, shape)
    if isinstance(obj, Uniform):
        return ConfigUniform(obj, model) if name == "q" else PlainUniform(obj, name, shape)
    if isinstance(obj, Normal):
        return ConfigNormal(obj, model) if name == "q" else PlainNormal(obj, name, shape)
    if isinstance(obj, (Sampler, Tolerances)):
        raise ValueError(f"sampler {name}: expected a distribution, an array or a function, got {obj!r}")
    if callable(obj) and not hasattr(obj, "shape"):
        return Function(obj, name, shape)
    if hasattr(obj, "shape") and hasattr(obj, "__getitem__"):
        return Array(obj, name, shape, n)
    if isinstance(obj, (list, tuple)):
        return Array(np.asarray(obj, dtype=np.float64), name, shape, n)
    raise ValueError(f"sampler {name}: expected None, ej.Uniform, ej.Normal, an array of shape "
                     f"{(n,) + shape} or a function f(rng, size), got {type(obj).__name__}")


def source_from_description(name, d, model, n, t):
    """The bound source a stored description came from (for inputs drawn again when read)."""
    if d["type"] == "Uniform":
        dist = Uniform(d["low"], d["high"], **({"length": d["length"], "gimbal_margin": d["gimbal_margin"]}
                                              if name == "q" else {}))
    elif d["type"] == "Normal":
        dist = Normal(d["mean"], d["std"])
    else:
        raise ValueError(f"input {name!r} ({d['type']}) is stored, not drawn")
    src = bind_source(dist, name, model, n, t)
    if src.describe() != d:
        raise ValueError(f"the stored description of {name!r} does not rebuild its sampler")
    return src
