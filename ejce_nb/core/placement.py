"""Recording a joint's evaluation in the kinematic record: the relative pose (R, p) of C_i in P_i,
the transform X_i from the parent's C frame (E = (Xt_i R)^T, d = pt_i + Xt_i p), and, from the
EJCE terms in P axes, S = R^T J, vJ = R^T (J u + sigma), cJ = [R^T b_w; R^T (b_v - w_rel x v_rel)]
(EJCE.md section 2)."""
from .._jit import jit
from .spatial import add, cross, ld3, ld9, mm, mtv, mv, st3, st6, st9


@jit(forceinline=True)
def place(m, r, i, R, p):
    """Record the relative pose (R, p) of C_i in P_i and X_i: E = (Xt R)^T, d = pt + Xt p."""
    st9(r.Rrel, i, R)
    st3(r.rrel, i, p)
    if m.jnt_Xid[i]:
        # Xt = 1 (the joint frame P_i parallel to the parent's C): E = R^T, d = pt + p
        st9(r.E, i, (R[0], R[3], R[6], R[1], R[4], R[7], R[2], R[5], R[8]))
        st3(r.d, i, add(ld3(m.jnt_pt, i), p))
        return
    X = ld9(m.jnt_Xt, i)
    XR = mm(X, R)
    st9(r.E, i, (XR[0], XR[3], XR[6], XR[1], XR[4], XR[7], XR[2], XR[5], XR[8]))
    if p[0] == 0.0 and p[1] == 0.0 and p[2] == 0.0:
        st3(r.d, i, ld3(m.jnt_pt, i))
    else:
        st3(r.d, i, add(ld3(m.jnt_pt, i), mv(X, p)))


@jit
def from_inboard(m, r, s, i, R, p, tw, b):
    """Record joint i from its EJCE terms in P axes (pose R, p; J's columns in the rows of s.JP;
    twist J u + sigma; bias b): S = R^T J, vJ = R^T twist, cJ = [R^T b_w; R^T (b_v - w x v)]."""
    place(m, r, i, R, p)
    vs = m.jnt_dofadr[i]
    for k in range(m.jnt_nv[i]):
        w = mtv(R, (s.JP[k, 0], s.JP[k, 1], s.JP[k, 2]))
        u = mtv(R, (s.JP[k, 3], s.JP[k, 4], s.JP[k, 5]))
        st6(r.S, vs + k, w + u)
    w_rel = (tw[0], tw[1], tw[2])
    v_rel = (tw[3], tw[4], tw[5])
    st6(r.vJ, i, mtv(R, w_rel) + mtv(R, v_rel))
    wv = cross(w_rel, v_rel)
    st6(r.cJ, i, mtv(R, (b[0], b[1], b[2])) + mtv(R, (b[3] - wv[0], b[4] - wv[1], b[5] - wv[2])))

