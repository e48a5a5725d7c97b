"""Model-parameter sampling (``Tolerances``) bound to a model: which bodies and fields vary, the
parameters of any block of groups of samples, and the perturbed model of one row of them."""
import copy
import fnmatch
import math

import numpy as np

from .._jit import jit
from .distributions import Tolerances
from ..model.model import Model
from .rng import StreamRNG


@jit
def _exp_into(f, o):
    for i in range(f.shape[0]):
        o[i] = math.exp(f[i])


def exp_each(a):
    """exp of every entry by libm's scalar exp: numpy's vectorised exp may round differently, and
    ``sample_model`` must rebuild the sampled bits."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    out = np.empty_like(a)
    _exp_into(a.reshape(-1), out.reshape(-1))
    return out


def _rotation_exp(phi):
    """Rotation matrix of a rotation vector (Rodrigues), in scalar libm arithmetic so that
    sampling and ``sample_model`` rebuild the same bits."""
    x, y, z = float(phi[0]), float(phi[1]), float(phi[2])
    th = math.sqrt(x * x + y * y + z * z)
    if th < 1e-8:
        a, b = 1.0 - th * th / 6.0, 0.5 - th * th / 24.0
    else:
        a, b = math.sin(th) / th, (1.0 - math.cos(th)) / (th * th)
    K = ((0.0, -z, y), (z, 0.0, -x), (-y, x, 0.0))
    R = [[0.0] * 3 for _ in range(3)]
    for r in range(3):
        for c in range(3):
            kk = K[r][0] * K[0][c] + K[r][1] * K[1][c] + K[r][2] * K[2][c]
            R[r][c] = (1.0 if r == c else 0.0) + a * K[r][c] + b * kk
    return R


class Params:
    """Tolerances bound to a model: which bodies, which fields, and how to build a model from a
    row of sampled parameters."""

    def __init__(self, tol, model):
        self.tol = tol
        names = list(model.body_names[1:])
        if tol.bodies is None:
            idx = list(range(1, model.nbodies + 1))
        else:
            idx = []
            for pat in tol.bodies:
                hit = [i + 1 for i, b in enumerate(names) if fnmatch.fnmatchcase(b, pat)]
                if not hit:
                    raise ValueError(f"Tolerances bodies: no body matches {pat!r} (bodies: {', '.join(names)})")
                idx += [i for i in hit if i not in idx]
            idx.sort()
        if not idx:
            raise ValueError("Tolerances: the model has no bodies to vary")
        self.bodies = idx
        self.body_names = [model.body_names[i] for i in idx]
        self.base = model.to_dict()
        rows = [self.base["bodies"][i - 1] for i in idx]
        self.mass0 = np.array([float(b["mass"]) for b in rows])
        self.com0 = np.array([b["com"] for b in rows], dtype=float)
        self.pos0 = np.array([b["placement"]["translation"] for b in rows], dtype=float)
        self.group = tol.group
        self.fields = []                 # (stored name, trailing shape)
        if tol.mass:
            self.fields.append(("mass", (len(idx),)))
        if tol.com:
            self.fields.append(("com", (len(idx), 3)))
        if tol.length or tol.offset:
            self.fields.append(("placement", (len(idx), 3)))
        if tol.angle:
            self.fields.append(("placement_angle", (len(idx), 3)))

    def describe(self):
        t = self.tol
        return {"type": "Tolerances", "mass": t.mass, "com": t.com, "length": t.length, "offset": t.offset,
                "angle": t.angle, "bodies": self.body_names, "group": self.group}

    def draw(self, entropy, g0, G):
        """Parameters of groups g0 .. g0 + G - 1: {field: (G, ...)}."""
        k = len(self.bodies)
        t = self.tol
        widths = {"mass": k if t.mass else 0, "com": 3 * k if t.com else 0,
                  "length": k if t.length else 0, "offset": 3 * k if t.offset else 0,
                  "angle": 3 * k if t.angle else 0}
        z = StreamRNG(entropy, "params", g0, G).standard_normal((G, sum(widths.values())))
        parts, at = {}, 0
        for f in Tolerances.FIELDS:
            parts[f] = z[:, at:at + widths[f]]
            at += widths[f]
        out = {}
        if t.mass:
            out["mass"] = self.mass0 * exp_each(t.mass * parts["mass"])
        if t.com:
            out["com"] = self.com0 + t.com * parts["com"].reshape(G, k, 3)
        if t.length or t.offset:
            pos = np.broadcast_to(self.pos0, (G, k, 3)).copy()
            if t.length:
                pos = pos * exp_each(t.length * parts["length"])[:, :, None]
            if t.offset:
                pos = pos + t.offset * parts["offset"].reshape(G, k, 3)
            out["placement"] = pos
        if t.angle:
            out["placement_angle"] = t.angle * parts["angle"].reshape(G, k, 3)
        return out

    def model(self, values):
        """The model of one row of sampled parameters {field: (k, ...)}."""
        d = copy.deepcopy(self.base)
        for r, i in enumerate(self.bodies):
            b = d["bodies"][i - 1]
            if "mass" in values:
                m1 = float(values["mass"][r])
                m0 = float(b["mass"])
                if m0 > 0.0:
                    s = m1 / m0
                    b["inertia"] = [[float(v) * s for v in row] for row in b["inertia"]]
                b["mass"] = m1
            if "com" in values:
                b["com"] = [float(v) for v in values["com"][r]]
            pl = b.setdefault("placement", {})
            if "placement" in values:
                pl["translation"] = [float(v) for v in values["placement"][r]]
            if "placement_angle" in values:
                E = pl.get("rotation") or [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
                D = _rotation_exp(values["placement_angle"][r])
                pl["rotation"] = [[E[a][0] * D[0][c] + E[a][1] * D[1][c] + E[a][2] * D[2][c] for c in range(3)]
                                  for a in range(3)]
        return Model.from_dict(d, source="perturbed model")

def param_rows(params, entropy, first, stop):
    """Sampled model parameters of samples first .. stop - 1: ({field: (m, ...)}, [(group, a, b,
    {field: value})] with [a, b) the group's rows counted from first)."""
    g = params.group
    g0, g1 = first // g, (stop - 1) // g
    vals = params.draw(entropy, g0, g1 - g0 + 1)
    m = stop - first
    rows = {f: np.empty((m,) + shape) for f, shape in params.fields}
    groups = []
    for gi in range(g0, g1 + 1):
        a, b = max(first, gi * g) - first, min(stop, (gi + 1) * g) - first
        value = {f: v[gi - g0] for f, v in vals.items()}
        for f in rows:
            rows[f][a:b] = value[f]
        groups.append((gi, a, b, value))
    return rows, groups

