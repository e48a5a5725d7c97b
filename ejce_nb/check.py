"""``ej.check_joint``: a joint's EJCE terms against finite differences of its own pose.

For any joint, built-in or user-defined, at random states (q, u, t):

    J[:, k] = [axial(dR/du_k R^T); dr/du_k]      central differences along velocity variable k
    sigma   = [axial(dR/dt R^T); dr/dt]          (q held)
    b       = [axial(R''0 R^T); r''0]            second differences along the motion with u' = 0

where moving along u means q -> q + s u for coordinates that are rates and q -> q (x) Exp(s u) for a
unit quaternion (its velocity is the angular velocity in C axes).  The pose is what the library
evaluates (``ej.joint_terms(...).R, .r``); the derivatives are only differences of it, so a wrong
Jacobian, bias or time term shows.  It also checks that R is a rotation, looks for rank loss of
J (gimbal lock) and, sweeping each coordinate over its range, for jumps of the pose or of J (a
pose that is not smooth: its jets then give one-sided derivatives).
"""
import numpy as np

from .model.builder import ModelBuilder
from .errors import ModelError
from .core.joints.specs import JointSpec
from .calls.public import joint_terms

# stencils: 5-point central differences (first and second derivative)
_H1 = 1e-3
_H2 = 2e-3
TOL = 1e-7              # relative to max(1, |term|)
RANK_TOL = 1e-8          # smallest / largest singular value of J below this: rank loss


def _axial(A):
    return 0.5 * np.array([A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1]])


def _quat_mul(a, b):
    w1, v1 = a[0], a[1:]
    w2, v2 = b[0], b[1:]
    return np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])


def _exp_half(phi):
    """The unit quaternion of the rotation vector phi."""
    th = np.linalg.norm(phi)
    if th == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(0.5 * th)], np.sin(0.5 * th) * phi / th])


class JointReport:
    """What ``check_joint`` found: true (``bool(report)``, ``ok``) when J, sigma and bias are
    within ``tol``, R is a rotation and no kink is found (rank loss is reported, not a failure);
    ``str(report)`` reads it.

    Fields: ``ok``, ``n_samples``, ``tol``, ``errors`` (``{"J" | "sigma" | "bias": (max error,
    where)}``, relative to ``max(1, |term|)``), ``orthogonality`` (max ``|R^T R - 1|``),
    ``min_det``, ``rotation_ok``, ``rank_loss`` (``[(q, sigma_min / sigma_max)]`` at the samples
    where J loses rank), ``min_sv_ratio``, ``kinks`` (descriptions)."""

    def __init__(self, joint, **figures):
        self.joint = joint
        self.__dict__.update(figures)

    def __bool__(self):
        return bool(self.ok)

    def __str__(self):
        lines = [f"check_joint({self.joint!r}): {'OK' if self.ok else 'FAILED'} over {self.n_samples} samples "
                 f"(differences of the pose, tolerance {self.tol:g} relative to max(1, |term|))"]
        for name in ("J", "sigma", "bias"):
            err, where = self.errors[name]
            lines.append(f"  {name:<6} max error {err:.2e}" + ("" if err <= self.tol else f"  at {where}"))
        lines.append(f"  R a rotation: max |R^T R - 1| = {self.orthogonality:.2e}, min det = {self.min_det:.6g}"
                     + ("" if self.rotation_ok else "  NOT A ROTATION"))
        if self.rank_loss:
            q, ratio = self.rank_loss[0]
            lines.append(f"  J loses rank at {len(self.rank_loss)} of the samples, e.g. q = {np.round(q, 6).tolist()} "
                         f"(smallest/largest singular value {ratio:.1e}): the joint's velocity variables are not "
                         "independent there (gimbal lock)")
        else:
            lines.append(f"  J has full rank at every sample (smallest ratio of singular values {self.min_sv_ratio:.2e})")
        if self.kinks:
            lines.append(f"  the pose is not smooth: {self.kinks[0]}")
        else:
            lines.append("  smooth along sweeps of each coordinate (no kink or jump of the pose)")
        return "\n".join(lines)

    __repr__ = __str__


def _sample_q(spec, model, rng):
    lo, hi = model.q_lower.copy(), model.q_upper.copy()
    if hasattr(spec, "q_low"):
        lo, hi = spec.q_low.copy(), spec.q_high.copy()
    q = np.empty(model.nq)
    for k in range(model.nq):
        a = lo[k] if np.isfinite(lo[k]) else -np.pi
        b = hi[k] if np.isfinite(hi[k]) else np.pi
        q[k] = rng.uniform(a, b)
    for _, sl in model.quaternion_blocks():
        x = rng.normal(size=4)
        q[sl] = x / np.linalg.norm(x)
    param = getattr(spec, "param", None)
    if param in ("rotvec", "rodrigues", "mrp"):
        off = spec.nq - 3
        x = rng.normal(size=3)
        q[off:off + 3] = x / np.linalg.norm(x) * rng.uniform(0.05, {"rotvec": 2.5, "rodrigues": 2.0, "mrp": 0.7}[param])
    return q


def _move(spec, model, q, u, s):
    """q moved by s along the velocity u (quaternions by the exponential map)."""
    out = q + 0.0
    quat = dict(model.quaternion_blocks())
    plain = np.ones(model.nq, dtype=bool)
    for j, sl in quat.items():
        plain[sl] = False
        w = u[model.jnt_dofadr[j] + model.jnt_nv[j] - 3: model.jnt_dofadr[j] + model.jnt_nv[j]]
        out[sl] = _quat_mul(q[sl], _exp_half(s * w))
    if quat:
        vplain = np.ones(model.nv, dtype=bool)
        for j in quat:
            e = model.jnt_dofadr[j] + model.jnt_nv[j]
            vplain[e - 3:e] = False
        out[plain] = q[plain] + s * u[vplain]
    else:
        out = q + s * u
    return out


def check_joint(joint, n_samples=50, seed=0, t_range=(0.0, 2.0), tol=TOL, sweep_points=201):
    """Check the EJCE terms of ``joint`` (any joint spec, built-in or user-defined) against
    finite differences of its own pose; returns a ``JointReport`` (true when every check passes,
    ``print`` it to read the figures).

    J, sigma and bias are compared with 5-point finite differences of the pose at ``n_samples``
    random states (seeded by ``seed``: a ``Custom`` joint's coordinates in its ``q_range``, others
    in [-pi, pi], unit quaternions at random; times in ``t_range``), errors relative to
    ``max(1, |term|)`` against ``tol``.  It also checks that R is a rotation, reports rank loss of
    J over the samples (gimbal lock), and looks for kinks and jumps of the pose along sweeps of
    ``sweep_points`` values of each coordinate."""
    if not isinstance(joint, JointSpec):
        raise ModelError(f"check_joint: expected an ej.joints spec, got {joint!r}")
    b = ModelBuilder()
    b.add_body("body", joint=joint, mass=1.0, inertia=np.eye(3))
    model = b.build()
    nq, nv = model.nq, model.nv
    rng = np.random.default_rng(seed)
    Q = np.array([_sample_q(joint, model, rng) for _ in range(n_samples)])
    U = rng.normal(size=(n_samples, nv))
    T = rng.uniform(*t_range, size=n_samples)
    terms = joint_terms(model, Q, U, t=T)

    def pose(qs, ts):
        jt = joint_terms(model, qs, None, t=ts)
        return jt.R[:, 1], jt.r[:, 1]

    def first(f, h):
        """5-point first derivative of f(s) at 0 (f returns (R, r) batches)."""
        vals = [f(s) for s in (-2 * h, -h, h, 2 * h)]
        dR = (vals[0][0] - 8 * vals[1][0] + 8 * vals[2][0] - vals[3][0]) / (12 * h)
        dr = (vals[0][1] - 8 * vals[1][1] + 8 * vals[2][1] - vals[3][1]) / (12 * h)
        return dR, dr

    R0, r0 = pose(Q, T)
    errs = {}

    def record(name, got, ref):
        scale = np.maximum(1.0, np.abs(ref).max(axis=tuple(range(1, ref.ndim))))
        e = np.abs(got - ref).max(axis=tuple(range(1, ref.ndim))) / scale
        k = int(np.argmax(e))
        errs[name] = (float(e[k]), f"q = {np.round(Q[k], 6).tolist()}, qd = {np.round(U[k], 6).tolist()}, t = {T[k]:.6g}")

    # J: along each velocity variable
    J_fd = np.zeros((n_samples, 6, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = 1.0
        dR, dr = first(lambda s: pose(np.array([_move(joint, model, Q[b], e, s) for b in range(n_samples)]), T), _H1)
        for b in range(n_samples):
            J_fd[b, :3, k] = _axial(dR[b] @ R0[b].T)
            J_fd[b, 3:, k] = dr[b]
    record("J", terms.J, J_fd)
    # sigma: along time
    dR, dr = first(lambda s: pose(Q, T + s), _H1)
    sig = np.array([np.concatenate([_axial(dR[b] @ R0[b].T), dr[b]]) for b in range(n_samples)])
    record("sigma", terms.sigma[:, 1], sig)
    # bias: second derivative along the motion q(s) (u constant), t + s
    h = _H2
    vals = [pose(np.array([_move(joint, model, Q[b], U[b], s) for b in range(n_samples)]), T + s)
            for s in (-2 * h, -h, 0.0, h, 2 * h)]
    ddR = (-vals[0][0] + 16 * vals[1][0] - 30 * vals[2][0] + 16 * vals[3][0] - vals[4][0]) / (12 * h * h)
    ddr = (-vals[0][1] + 16 * vals[1][1] - 30 * vals[2][1] + 16 * vals[3][1] - vals[4][1]) / (12 * h * h)
    bias = np.array([np.concatenate([_axial(ddR[b] @ R0[b].T), ddr[b]]) for b in range(n_samples)])
    record("bias", terms.bias[:, 1], bias)
    # R a rotation
    orth = float(max(np.abs(R0[b].T @ R0[b] - np.eye(3)).max() for b in range(n_samples)))
    min_det = float(min(np.linalg.det(R0[b]) for b in range(n_samples)))
    # rank of J
    rank_loss = []
    min_ratio = np.inf
    for b in range(n_samples):
        if nv == 0:
            break
        sv = np.linalg.svd(terms.J[b], compute_uv=False)
        ratio = sv[-1] / sv[0] if sv[0] > 0 else 0.0
        min_ratio = min(min_ratio, ratio)
        if ratio < RANK_TOL:
            rank_loss.append((Q[b], ratio))
    kinks = _sweeps(joint, model, Q[0] if n_samples else np.zeros(nq), float(T[0]) if n_samples else 0.0,
                    sweep_points)
    ok = (all(e <= tol for e, _ in errs.values()) and orth <= 1e-9 and min_det > 0.0 and not kinks)
    return JointReport(joint, ok=ok, n_samples=n_samples, tol=tol, errors=errs, orthogonality=orth,
                       min_det=min_det, rotation_ok=orth <= 1e-9 and min_det > 0.0, rank_loss=rank_loss,
                       min_sv_ratio=float(min_ratio) if np.isfinite(min_ratio) else 1.0, kinks=kinks)


def _sweeps(joint, model, q0, t0, n):
    """Kinks and jumps of the pose along a sweep of each coordinate over its range: between
    neighbours x_i, x_i+1 the pose must change as its derivative says, P_i+1 - P_i =
    (x_i+1 - x_i) (P'_i + P'_i+1) / 2 up to O(step^3), with P' from J (dR/dx = [J_w]x R,
    dr/dx = J_v); a jump of P leaves a residual of its size, a kink one of order the step."""
    found = []
    lo = getattr(joint, "q_low", None)
    hi = getattr(joint, "q_high", None)
    quat = np.zeros(model.nq, dtype=bool)
    for _, sl in model.quaternion_blocks():
        quat[sl] = True
    for k in range(model.nq):
        if quat[k]:
            continue
        a = lo[k] if lo is not None else (model.q_lower[k] if np.isfinite(model.q_lower[k]) else -np.pi)
        b = hi[k] if hi is not None else (model.q_upper[k] if np.isfinite(model.q_upper[k]) else np.pi)
        xs = np.linspace(a, b, n)
        Q = np.repeat(q0[None], n, 0)
        Q[:, k] = xs
        jt = joint_terms(model, Q, None, t=np.full(n, t0))
        R, r, w, v = jt.R[:, 1], jt.r[:, 1], jt.J[:, :3, k], jt.J[:, 3:, k]
        dR = np.einsum("nij,njk->nik", np.array([[[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]] for x in w]), R)
        h = np.diff(xs)[:, None]
        res_R = np.abs((R[1:] - R[:-1]).reshape(n - 1, 9) - h * 0.5 * (dR[1:] + dR[:-1]).reshape(n - 1, 9)).max(axis=1)
        res_r = np.abs(r[1:] - r[:-1] - h * 0.5 * (v[1:] + v[:-1])).max(axis=1)
        res = np.maximum(res_R, res_r / max(1.0, float(np.abs(r).max())))
        i = int(np.argmax(res))
        if res[i] > 100.0 * np.median(res) and res[i] > 1e-9:
            found.append(f"between q[{k}] = {xs[i]:.6g} and {xs[i + 1]:.6g} the pose changes by "
                         f"{max(np.abs(R[i + 1] - R[i]).max(), np.abs(r[i + 1] - r[i]).max()):.3g} where its "
                         f"derivative predicts a change off by {res[i]:.2g} (elsewhere at most "
                         f"{np.median(res):.1g}): a kink or a jump of the pose")
    return found
