"""Recursive kinematics: one forward sweep over the parent table (EJCE.md section 3).

For body i with parent l, inboard frame P (E_p, c_p), outboard frame C (E_c, c_c) and the joint's
relative pose (R, r), twist [w_rel; v_rel] = J u + sigma and acceleration [alpha_rel; a_rel] =
J u' + b (all in P axes):

    R_P = R_l E_p,   o_P = p_l + R_l c_p,   rho = R_P r,   o_C = o_P + rho
    R_i = R_P R E_c^T,   p_i = o_C - R_i c_c
    w_i = w_l + R_P w_rel
    alpha_i = alpha_l + w_l x (R_P w_rel) + R_P alpha_rel
    v_C = v_P + w_l x rho + R_P v_rel
    a_C = a_P + alpha_l x rho + w_l x (w_l x rho) + 2 w_l x (R_P v_rel) + R_P a_rel

with the rigid transports from p_l to o_P and from o_C to p_i.  Accelerations are classical
(a_i = d v_i / dt of the body origin).
"""
import numpy as np
from numba import prange

from . import _inputs
from ._jit import jit, pjit
from .ejce import fast_terms, has_fast_path, joint_eval, joint_eval_generic
from .spatial import add, cross, mm, mmT, mv
from .workspace import JointWork, n_chunks


@jit
def fk_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
             P_rot, P_pos, C_rot, C_pos, Q, V, A, T, level, generic, body, lo, hi,
             Rrel, rrel, J, sigma, bias, vrel, RP, oC,
             R, p, omega, vel, alpha, acc, Jb):
    """Samples lo..hi-1 of a batch: poses (level 0), twists (level >= 1) and accelerations
    (level 2) of every body, and for ``body >= 0`` that body's world Jacobian into Jb[b].

    The workspace (Rrel ... oC) is one chunk's; the loop over samples sits inside so that the
    arrays are handed over once per chunk, not once per state."""
    n1 = parent.shape[0]
    for b in range(lo, hi):
        t = T[b]
        for x in range(3):
            p[b, 0, x] = 0.0
            oC[0, x] = 0.0
            for y in range(3):
                R[b, 0, x, y] = 1.0 if x == y else 0.0
                RP[0, x, y] = 1.0 if x == y else 0.0
            if level >= 1:
                omega[b, 0, x] = 0.0
                vel[b, 0, x] = 0.0
            if level >= 2:
                alpha[b, 0, x] = 0.0
                acc[b, 0, x] = 0.0
        for i in range(1, n1):
            l = parent[i]
            jt = jtype[i]
            qs = q_start[i]
            nqj = nq_joint[i]
            vs = v_start[i]
            nvj = nv_joint[i]
            adr = param_adr[i]
            # -- the joint: relative pose (Rr, rr), twist tw = J u + sigma, acceleration ar = J u' + b
            if not generic and has_fast_path(jt):
                u = V[b, vs] if nvj > 0 else 0.0
                ud = A[b, vs] if nvj > 0 else 0.0
                Rr, rr, S = fast_terms(jt, params[adr], params[adr + 1], params[adr + 2],
                                       Q[b, qs] if nqj > 0 else 0.0, u)
                if nvj > 0:
                    for x in range(6):
                        J[x, vs] = S[x]
                tw = (S[0] * u, S[1] * u, S[2] * u, S[3] * u, S[4] * u, S[5] * u)
                ar = (S[0] * ud, S[1] * ud, S[2] * ud, S[3] * ud, S[4] * ud, S[5] * ud)
            else:
                joint_eval_generic(jt, params, adr, Q[b], V[b], t, qs, nqj, vs, nvj, i,
                                   Rrel, rrel, J, sigma, bias, vrel)
                Rr = (Rrel[i, 0, 0], Rrel[i, 0, 1], Rrel[i, 0, 2], Rrel[i, 1, 0], Rrel[i, 1, 1],
                      Rrel[i, 1, 2], Rrel[i, 2, 0], Rrel[i, 2, 1], Rrel[i, 2, 2])
                rr = (rrel[i, 0], rrel[i, 1], rrel[i, 2])
                tw = (vrel[i, 0], vrel[i, 1], vrel[i, 2], vrel[i, 3], vrel[i, 4], vrel[i, 5])
                b0 = bias[i, 0]
                b1 = bias[i, 1]
                b2 = bias[i, 2]
                b3 = bias[i, 3]
                b4 = bias[i, 4]
                b5 = bias[i, 5]
                if level >= 2:
                    for k in range(vs, vs + nvj):
                        ak = A[b, k]
                        b0 += J[0, k] * ak
                        b1 += J[1, k] * ak
                        b2 += J[2, k] * ak
                        b3 += J[3, k] * ak
                        b4 += J[4, k] * ak
                        b5 += J[5, k] * ak
                ar = (b0, b1, b2, b3, b4, b5)
            # -- poses
            Rl = (R[b, l, 0, 0], R[b, l, 0, 1], R[b, l, 0, 2], R[b, l, 1, 0], R[b, l, 1, 1],
                  R[b, l, 1, 2], R[b, l, 2, 0], R[b, l, 2, 1], R[b, l, 2, 2])
            Rp = mm(Rl, (P_rot[i, 0, 0], P_rot[i, 0, 1], P_rot[i, 0, 2], P_rot[i, 1, 0], P_rot[i, 1, 1],
                         P_rot[i, 1, 2], P_rot[i, 2, 0], P_rot[i, 2, 1], P_rot[i, 2, 2]))
            Ri = mmT(mm(Rp, Rr), (C_rot[i, 0, 0], C_rot[i, 0, 1], C_rot[i, 0, 2], C_rot[i, 1, 0],
                                 C_rot[i, 1, 1], C_rot[i, 1, 2], C_rot[i, 2, 0], C_rot[i, 2, 1],
                                 C_rot[i, 2, 2]))
            d = mv(Rl, (P_pos[i, 0], P_pos[i, 1], P_pos[i, 2]))
            rho = mv(Rp, rr)
            dC = mv(Ri, (-C_pos[i, 0], -C_pos[i, 1], -C_pos[i, 2]))
            for x in range(3):
                for y in range(3):
                    RP[i, x, y] = Rp[3 * x + y]
                    R[b, i, x, y] = Ri[3 * x + y]
                oC[i, x] = p[b, l, x] + d[x] + rho[x]
                p[b, i, x] = oC[i, x] + dC[x]
            if level < 1:
                continue
            # -- twists
            wl = (omega[b, l, 0], omega[b, l, 1], omega[b, l, 2])
            w_rel = mv(Rp, (tw[0], tw[1], tw[2]))
            v_rel = mv(Rp, (tw[3], tw[4], tw[5]))
            wi = add(wl, w_rel)
            wd = cross(wl, d)
            wr = cross(wl, rho)
            wc = cross(wi, dC)
            for x in range(3):
                omega[b, i, x] = wi[x]
                vel[b, i, x] = vel[b, l, x] + wd[x] + wr[x] + v_rel[x] + wc[x]
            if level < 2:
                continue
            # -- accelerations (classical)
            al = (alpha[b, l, 0], alpha[b, l, 1], alpha[b, l, 2])
            al_rel = mv(Rp, (ar[0], ar[1], ar[2]))
            a_rel = mv(Rp, (ar[3], ar[4], ar[5]))
            ai = add(add(al, cross(wl, w_rel)), al_rel)
            ad = cross(al, d)
            wwd = cross(wl, wd)
            ard = cross(al, rho)
            wwr = cross(wl, wr)
            cor = cross(wl, v_rel)
            adc = cross(ai, dC)
            wwc = cross(wi, wc)
            for x in range(3):
                alpha[b, i, x] = ai[x]
                acc[b, i, x] = (acc[b, l, x] + ad[x] + wwd[x] + ard[x] + wwr[x] + 2.0 * cor[x]
                                + a_rel[x] + adc[x] + wwc[x])
        if body >= 0:
            body_jacobian_columns(parent, v_start, nv_joint, J, RP, oC, p, b, body, Jb)


@jit
def body_jacobian_columns(parent, v_start, nv_joint, J, RP, oC, p, b, body, Jb):
    """World-frame Jacobian of the origin of ``body`` (sample b) into Jb[b]: every joint on the
    path to the root contributes its J columns turned into world axes (R_P) and moved from the
    origin of its outboard frame to the body origin."""
    for x in range(6):
        for k in range(Jb.shape[2]):
            Jb[b, x, k] = 0.0
    j = body
    while j > 0:
        Rp = (RP[j, 0, 0], RP[j, 0, 1], RP[j, 0, 2], RP[j, 1, 0], RP[j, 1, 1], RP[j, 1, 2],
              RP[j, 2, 0], RP[j, 2, 1], RP[j, 2, 2])
        d = (p[b, body, 0] - oC[j, 0], p[b, body, 1] - oC[j, 1], p[b, body, 2] - oC[j, 2])
        for k in range(v_start[j], v_start[j] + nv_joint[j]):
            w = mv(Rp, (J[0, k], J[1, k], J[2, k]))
            u = mv(Rp, (J[3, k], J[4, k], J[5, k]))
            wd = cross(w, d)
            for x in range(3):
                Jb[b, x, k] = w[x]
                Jb[b, 3 + x, k] = u[x] + wd[x]
        j = parent[j]


@jit
def fk_serial(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
              P_rot, P_pos, C_rot, C_pos, Q, V, A, T, level, generic, body,
              Rrel, rrel, J, sigma, bias, vrel, RP, oC, R, p, omega, vel, alpha, acc, Jb):
    fk_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
             P_rot, P_pos, C_rot, C_pos, Q, V, A, T, level, generic, body, 0, Q.shape[0],
             Rrel[0], rrel[0], J[0], sigma[0], bias[0], vrel[0], RP[0], oC[0],
             R, p, omega, vel, alpha, acc, Jb)


@pjit
def fk_parallel(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
                P_rot, P_pos, C_rot, C_pos, Q, V, A, T, level, generic, body,
                Rrel, rrel, J, sigma, bias, vrel, RP, oC, R, p, omega, vel, alpha, acc, Jb):
    B = Q.shape[0]
    nchunk = Rrel.shape[0]
    for c in prange(nchunk):
        fk_range(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
                 P_rot, P_pos, C_rot, C_pos, Q, V, A, T, level, generic, body,
                 c * B // nchunk, (c + 1) * B // nchunk,
                 Rrel[c], rrel[c], J[c], sigma[c], bias[c], vrel[c], RP[c], oC[c],
                 R, p, omega, vel, alpha, acc, Jb)


class Kinematics:
    """World-frame kinematics of every body origin: R (body -> world), p, omega, v, alpha, a."""

    def __init__(self, R, p, omega=None, v=None, alpha=None, a=None):
        self.R, self.p, self.omega, self.v, self.alpha, self.a = R, p, omega, v, alpha, a

    def __repr__(self):
        fields = [k for k in ("R", "p", "omega", "v", "alpha", "a") if getattr(self, k) is not None]
        return f"<ej.Kinematics {self.p.shape[:-1]}: {', '.join(fields)}>"


def _zeros_like_v(model, B, x):
    return np.zeros((B, max(model.nv, 1))) if x is None else x


_FIELDS = ("R", "p", "omega", "v", "alpha", "a")


def _output_arrays(model, B, level, out, single):
    """The six output arrays: fresh, or those of ``out`` (a Kinematics of the same shape) reused."""
    n1 = model.nbodies + 1
    shapes = [(n1, 3, 3), (n1, 3)] + [(n1 if level >= 1 else 0, 3)] * 2 + [(n1 if level >= 2 else 0, 3)] * 2
    if out is None:
        return [np.empty((B,) + s) for s in shapes]
    if not isinstance(out, Kinematics):
        raise ValueError(f"out must be an ej.Kinematics from an earlier call, got {type(out).__name__}")
    arrays = []
    for name, s in zip(_FIELDS, shapes):
        want = s if single else (B,) + s
        x = getattr(out, name)
        if s[0] == 0 and x is None:
            arrays.append(np.empty((B,) + s))
            continue
        if (not isinstance(x, np.ndarray) or x.shape != want or x.dtype != np.float64
                or not x.flags.c_contiguous or not x.flags.writeable):
            raise ValueError(f"out.{name} must be a writeable float64 array of shape {want}, got "
                             f"{None if x is None else (x.shape, x.dtype)}")
        arrays.append(x.reshape((B,) + s))
    return arrays


def run_fk(model, q2, qd2, qdd2, t1, level, out=None, single=False, generic=False):
    """Run the sweep on a validated batch (B, nq); returns the six output arrays (B, ...)."""
    B = q2.shape[0]
    parallel = B > 1
    work = JointWork(model, n_chunks(B) if parallel else 1)
    R, p, omega, vel, alpha, acc = _output_arrays(model, B, level, out, single)
    v = _zeros_like_v(model, B, qd2)
    a = _zeros_like_v(model, B, qdd2)
    kernel = fk_parallel if parallel else fk_serial
    kernel(*model.kernel_args(), q2, v, a, t1, level, generic, -1, *work.args(), R, p, omega, vel,
           alpha, acc, np.empty((B, 0, 0)))
    return (R, p, omega if level >= 1 else None, vel if level >= 1 else None,
            alpha if level >= 2 else None, acc if level >= 2 else None)


def forward_kinematics(model, q, qd=None, qdd=None, t=0.0, out=None):
    """World-frame pose, twist and classical acceleration of every body origin.

    q (nq,) or (B, nq); qd, qdd (nv,) or (B, nv); t a float or (B,).  Velocities need ``qd``,
    accelerations need ``qd`` and ``qdd``.  Returns ``ej.Kinematics`` with R (..., N+1, 3, 3) and
    p, omega, v, alpha, a (..., N+1, 3); row 0 is the world.  ``out``: a Kinematics of an earlier
    call with the same shapes, whose arrays are overwritten and returned (no new allocation: for
    loops over many batches)."""
    if qdd is not None and qd is None:
        raise ValueError("qdd given without qd: accelerations need the velocities too")
    B, q2, qd2, qdd2, t1 = _inputs.states(model, q, qd, qdd, t)
    level = 0 if qd2 is None else (1 if qdd2 is None else 2)
    model, q2, qd2, qdd2 = _inputs.expand_mimic(model, q2, qd2, qdd2)
    res = run_fk(model, q2, qd2, qdd2, t1, level, out, single=B is None)
    if out is not None:
        return out                              # its arrays were written in place
    return Kinematics(*_inputs.unbatch(B, *res))


@jit
def _jterms_serial_one(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
                       q, v, t, outboard, generic, Rrel, rrel, J, sigma, bias, vrel):
    for i in range(1, parent.shape[0]):
        vs = v_start[i]
        joint_eval(jtype[i], params, param_adr[i], q, v, t, q_start[i], nq_joint[i], vs, nv_joint[i],
                   i, Rrel, rrel, J, sigma, bias, vrel, generic)
        if outboard:
            Ri = Rrel[i]
            for k in range(vs, vs + nv_joint[i]):
                w = (J[0, k], J[1, k], J[2, k])
                u = (J[3, k], J[4, k], J[5, k])
                for x in range(3):
                    J[x, k] = Ri[0, x] * w[0] + Ri[1, x] * w[1] + Ri[2, x] * w[2]
                    J[3 + x, k] = Ri[0, x] * u[0] + Ri[1, x] * u[1] + Ri[2, x] * u[2]
            for vec in (sigma[i], bias[i], vrel[i]):
                w = (vec[0], vec[1], vec[2])
                u = (vec[3], vec[4], vec[5])
                for x in range(3):
                    vec[x] = Ri[0, x] * w[0] + Ri[1, x] * w[1] + Ri[2, x] * w[2]
                    vec[3 + x] = Ri[0, x] * u[0] + Ri[1, x] * u[1] + Ri[2, x] * u[2]


@pjit
def _jterms_batch(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
                  q, v, t, outboard, generic, Rrel, rrel, J, sigma, bias, vrel):
    for b in prange(q.shape[0]):
        _jterms_serial_one(parent, jtype, q_start, nq_joint, v_start, nv_joint, param_adr, params,
                           q[b], v[b], t[b], outboard, generic, Rrel[b], rrel[b], J[b], sigma[b],
                           bias[b], vrel[b])


class JointTerms:
    """EJCE terms of every joint: relative twist = J qd + sigma, relative acceleration =
    J qdd + bias; R, r the relative pose of C in P; twist the relative twist.

    For a model with mimic joints the terms are those of ``model.expanded()`` (a mimic joint has
    no velocity of its own) and ``v_map`` maps the model's velocities to the expanded ones."""

    def __init__(self, J, sigma, bias, R, r, twist, frame, v_map=None):
        self.J, self.sigma, self.bias, self.R, self.r, self.twist, self.frame = J, sigma, bias, R, r, twist, frame
        self.v_map = v_map

    def __repr__(self):
        return f"<ej.JointTerms J{self.J.shape} frame={self.frame!r}>"


def joint_terms(model, q, qd=None, t=0.0, frame="inboard", generic=False):
    """The EJCE terms of every joint (API.md): J (..., 6, nv), sigma and bias (..., N+1, 6).

    ``frame="inboard"`` expresses them in P axes, ``"outboard"`` in C axes.  ``generic=True``
    bypasses the hand-written revolute/prismatic paths (for checking them).  ``bias`` is None
    without ``qd``."""
    if frame not in ("inboard", "outboard"):
        raise ValueError(f"frame must be 'inboard' or 'outboard', got {frame!r}")
    B, q2, qd2, _, t1 = _inputs.states(model, q, qd, None, t)
    v_map = model.mimic_map()[2] if model.has_mimic else None
    model, q2, qd2 = _inputs.expand_mimic(model, q2, qd2)
    n = q2.shape[0]
    n1 = model.nbodies + 1
    v = np.zeros((n, model.nv)) if qd2 is None else qd2
    Rrel = np.empty((n, n1, 3, 3))
    rrel = np.empty((n, n1, 3))
    J = np.zeros((n, 6, model.nv))
    sigma = np.zeros((n, n1, 6))
    bias = np.zeros((n, n1, 6))
    vrel = np.zeros((n, n1, 6))
    for arr in (Rrel,):
        arr[:, 0] = np.eye(3)
    rrel[:, 0] = 0.0
    kernel = _jterms_batch if n > 1 else _jterms_serial_one
    args = (*model.kernel_args()[:8],)
    if n > 1:
        kernel(*args, q2, v, t1, frame == "outboard", generic, Rrel, rrel, J, sigma, bias, vrel)
    else:
        kernel(*args, q2[0], v[0], t1[0], frame == "outboard", generic, Rrel[0], rrel[0], J[0],
               sigma[0], bias[0], vrel[0])
    J, sigma, bias, Rrel, rrel, vrel = _inputs.unbatch(B, J, sigma, bias, Rrel, rrel, vrel)
    return JointTerms(J, sigma, None if qd2 is None else bias, Rrel, rrel, None if qd2 is None else vrel,
                      frame, v_map)


def body_jacobian(model, q, body, t=0.0):
    """World-frame Jacobian (..., 6, nv) of the body origin's [omega; v] (``body``: index or name);
    for rheonomic joints the twist is this Jacobian times qd plus the sigma terms."""
    i = model.body_index(body)
    B, q2, _, _, t1 = _inputs.states(model, q, None, None, t)
    v_map = model.mimic_map()[2] if model.has_mimic else None
    model, q2 = _inputs.expand_mimic(model, q2)
    n = q2.shape[0]
    n1 = model.nbodies + 1
    parallel = n > 1
    work = JointWork(model, n_chunks(n) if parallel else 1)
    R = np.empty((n, n1, 3, 3))
    p = np.empty((n, n1, 3))
    empty = np.empty((n, 0, 3))
    v = np.zeros((n, max(model.nv, 1)))
    out = np.zeros((n, 6, model.nv))
    kernel = fk_parallel if parallel else fk_serial
    kernel(*model.kernel_args(), q2, v, v, t1, 0, False, i, *work.args(), R, p, empty, empty, empty,
           empty, out)
    if v_map is not None:
        out = np.ascontiguousarray(out @ v_map)
    return _inputs.unbatch(B, out)
