"""The generic EJCE path and user-defined joints.

The generic path evaluates the pose function of ``joints.pose`` once on jets, seeded
q -> (q, N u, N' u, N e_k), t -> (t, 1, 0), and reads (EJCE.md section 1)

    J[:, k] = [axial(dR/du_k R^T); dr/du_k],   J u + sigma = [axial(R' R^T); r'],
    b = [axial(R''0 R^T); r''0]

from the jets' gradient, rate and second-derivative slots.  A user-defined joint is the same
evaluation of the user's own pose function, compiled for jets (``joints.custom``) and called
through its address.  Both evaluate one state (the lane kernels take models without them).
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from .._jit import jit
from .jets import jconst
from .joints.pose import pose
from .lanes import scalar_only
from .placement import from_inboard
from .quaternions import quat_rate_row


@jit
def _seed(q, v, qs, nq, vs, k, quat_off):
    """Jet of coordinate k of a joint (k >= nq: zero) along q' = N(q) v, t' = 1: value, rate,
    second derivative with v' = 0, and gradient over the joint's velocity variables."""
    if k >= nq:
        return jconst(0.0)
    if quat_off < 0 or k < quat_off:
        # an ordinary coordinate: its rate is velocity variable k (quaternions come last in a joint)
        return (q[qs + k], v[vs + k], 0.0,
                1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0,
                1.0 if k == 3 else 0.0, 1.0 if k == 4 else 0.0, 1.0 if k == 5 else 0.0)
    o = qs + quat_off
    b = vs + quat_off
    w, x, y, z = q[o], q[o + 1], q[o + 2], q[o + 3]
    ux, uy, uz = v[b], v[b + 1], v[b + 2]
    c = k - quat_off
    n0, n1, n2 = quat_rate_row(w, x, y, z, c)
    # q''0 = N(q') u = 1/2 q' (x) (0, u) = -|u|^2 / 4 q
    d2 = -0.25 * (ux * ux + uy * uy + uz * uz) * q[o + c]
    # the three angular velocities occupy gradient slots quat_off .. quat_off + 2 (0 or 3)
    f = quat_off == 0
    return (q[o + c], n0 * ux + n1 * uy + n2 * uz, d2,
            n0 if f else 0.0, n1 if f else 0.0, n2 if f else 0.0,
            0.0 if f else n0, 0.0 if f else n1, 0.0 if f else n2)


@jit
def seeds(q, v, qs, nq, vs, quat_off):
    """The jets of a joint's coordinates (7, unused ones zero)."""
    # indices as runtime integers: literal arguments would compile one _seed per index
    k0 = nq - nq
    return (_seed(q, v, qs, nq, vs, k0, quat_off), _seed(q, v, qs, nq, vs, k0 + 1, quat_off),
            _seed(q, v, qs, nq, vs, k0 + 2, quat_off), _seed(q, v, qs, nq, vs, k0 + 3, quat_off),
            _seed(q, v, qs, nq, vs, k0 + 4, quat_off), _seed(q, v, qs, nq, vs, k0 + 5, quat_off),
            _seed(q, v, qs, nq, vs, k0 + 6, quat_off))


@jit
def _axial_RT(R, A, k):
    """axial(A R^T), A the slot k of 9 jets (row-major)."""
    m01 = A[0][k] * R[3] + A[1][k] * R[4] + A[2][k] * R[5]
    m02 = A[0][k] * R[6] + A[1][k] * R[7] + A[2][k] * R[8]
    m10 = A[3][k] * R[0] + A[4][k] * R[1] + A[5][k] * R[2]
    m12 = A[3][k] * R[6] + A[4][k] * R[7] + A[5][k] * R[8]
    m20 = A[6][k] * R[0] + A[7][k] * R[1] + A[8][k] * R[2]
    m21 = A[6][k] * R[3] + A[7][k] * R[4] + A[8][k] * R[5]
    return 0.5 * (m21 - m12), 0.5 * (m02 - m20), 0.5 * (m10 - m01)


@jit
def jets_terms(m, i, q, v, t, JP):
    """The EJCE terms of joint i in P axes by the generic path: (R, r, twist J u + sigma, bias),
    with J's columns in the rows of JP."""
    qs = m.jnt_qadr[i]
    nq = m.jnt_nq[i]
    vs = m.jnt_dofadr[i]
    qj = seeds(q, v, qs, nq, vs, m.jnt_quat[i])
    Rj, rj = pose(m.jnt_type[i], m.jnt_params, m.jnt_padr[i], qj, (t, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    R = (Rj[0][0], Rj[1][0], Rj[2][0], Rj[3][0], Rj[4][0], Rj[5][0], Rj[6][0], Rj[7][0], Rj[8][0])
    for k in range(m.jnt_nv[i]):
        w0, w1, w2 = _axial_RT(R, Rj, 3 + k)
        JP[k, 0] = w0
        JP[k, 1] = w1
        JP[k, 2] = w2
        JP[k, 3] = rj[0][3 + k]
        JP[k, 4] = rj[1][3 + k]
        JP[k, 5] = rj[2][3 + k]
    one = nq - nq + 1
    tw = _axial_RT(R, Rj, one) + (rj[0][1], rj[1][1], rj[2][1])
    bias = _axial_RT(R, Rj, one + 1) + (rj[0][2], rj[1][2], rj[2][2])
    return R, (rj[0][0], rj[1][0], rj[2][0]), tw, bias


def jets_joint(m, r, s, i, q, v, t):
    """Position and velocity terms of joint i by the generic path, turned into C axes."""
    R, p, tw, b = jets_terms(m, i, q, v, t, s.JP)
    from_inboard(m, r, s, i, R, p, tw, b)



# ---------------------------------------------------------------------------- user-defined joints
@intrinsic
def _call_user(typingctx, addr, q, qs, v, vs, t, params, padr, out, JP):
    """Call the compiled wrapper at ``addr`` (``joints.custom``) with pointers into q (from qs),
    v (from vs) and params (from padr), and the output buffers."""
    sig = types.void(addr, q, qs, v, vs, t, params, padr, out, JP)

    def codegen(context, builder, sig, args):
        dbl = ir.DoubleType().as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [dbl, dbl, ir.DoubleType(), dbl, dbl, dbl])
        fn = builder.inttoptr(args[0], fnty.as_pointer())

        def data(k, off=None):
            a = make_array(sig.args[k])(context, builder, args[k])
            if off is None:
                return a.data
            return cgutils.gep(builder, a.data, context.cast(builder, args[off], sig.args[off], types.intp))

        builder.call(fn, [data(1, 2), data(3, 4), context.cast(builder, args[5], sig.args[5], types.float64),
                          data(6, 7), data(8), data(9)])
        return context.get_dummy_value()

    return sig, codegen


def user_joint(m, r, s, i, q, v, t):
    """Position and velocity terms of the user-defined joint i, from its compiled pose wrapper."""
    _call_user(m.jnt_fptr[i], q, m.jnt_qadr[i], v, m.jnt_dofadr[i], t, m.jnt_params, m.jnt_padr[i], s.uout, s.JP)
    u = s.uout
    from_inboard(m, r, s, i, (u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8]), (u[9], u[10], u[11]),
                 (u[12], u[13], u[14], u[15], u[16], u[17]), (u[18], u[19], u[20], u[21], u[22], u[23]))


# the generic and user paths evaluate one state (the lane kernels take models without them); the
# two functions above are compiled as the overloads' implementations
jets_joint_of = scalar_only(jets_joint)
user_joint_of = scalar_only(user_joint)
