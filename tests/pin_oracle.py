"""Pinocchio as an outside reference: convert an ``ej.Model`` into a ``pinocchio.Model`` and map
states, accelerations, torques and mass matrices between the two (ORACLES.md).

Conventions handled here:
* A Pinocchio joint frame is our outboard frame C; its placement in the parent joint frame is
  ``inv(X_c[parent]) * X_p[i]`` (with fixed joints merged: the parent "joint frame" is the frame of
  the moving ancestor).  Bodies' inertias are appended in their own frame at their placement in
  the joint frame, so Pinocchio re-expresses them.
* Fixed joints are merged into the moving ancestor (``appendBodyToJoint``); bodies fixed to the
  world are ignored (no motion, no generalised force).
* Joints are added depth-first (Pinocchio's mass matrix is silently wrong otherwise); our models
  come in any parent-before-child order, so coordinates are permuted.
* Spatial vectors are [linear; angular] in Pinocchio, [angular; linear] here; quaternions are
  (x, y, z, w) there, (w, x, y, z) here.
* ``Free("quaternion")`` is a FreeFlyer: v_pin = [R^T rdot; omega], and
  a_pin = [R^T rddot - omega x (R^T rdot); omegadot].  In general v_pin = T(q) v and
  a_pin = T(q) vdot + Tdot v, so tau = T^T tau_pin and M = T^T M_pin T.

Supported joints: Fixed, Revolute, Prismatic, Helical, Universal, Spherical("ZYX") (SphericalZYX,
angle rates as velocities), Spherical("quaternion"), Translation, Free("quaternion").

Typical use::

    pm = PinModel(model)
    tau = pm.rnea(q, qd, qdd)              # our tau, through Pinocchio
    M = pm.mass_matrix(q)
    qdd = pm.aba(q, qd, tau)
    kin = pm.kinematics(q, qd, qdd)         # dict of R, p, omega, v, alpha, a (N+1 rows)
"""
import numpy as np
import pinocchio as pin

import ejce_nb as ej

J = ej.joints


def _se3(R, p):
    return pin.SE3(np.array(R, dtype=float), np.array(p, dtype=float))


def _quat_matrix(qw):
    """Rotation of a (w, x, y, z) quaternion (normalised)."""
    w, x, y, z = np.asarray(qw, dtype=float) / np.linalg.norm(qw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _depth_first(parent):
    children = [[] for _ in parent]
    for i in range(1, len(parent)):
        children[parent[i]].append(i)
    order, stack = [], list(reversed(children[0]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    return order


def pin_joint_model(spec):
    """The Pinocchio joint model of one of our (moving) joint specs."""
    if isinstance(spec, J.Revolute):
        return pin.JointModelRevoluteUnaligned(np.array(spec.axis))
    if isinstance(spec, J.Prismatic):
        return pin.JointModelPrismaticUnaligned(np.array(spec.axis))
    if isinstance(spec, J.Helical):
        return pin.JointModelHelicalUnaligned(np.array(spec.axis), float(spec.pitch))
    if isinstance(spec, J.Universal):
        return pin.JointModelUniversal(np.array(spec.axis1), np.array(spec.axis2))
    if isinstance(spec, J.Translation):
        return pin.JointModelTranslation()
    if isinstance(spec, J.Free):
        if spec.param == "quaternion":
            return pin.JointModelFreeFlyer()
    elif isinstance(spec, J.Spherical):
        if spec.param == "quaternion":
            return pin.JointModelSpherical()
        if spec.param == "ZYX":
            return pin.JointModelSphericalZYX()
    raise NotImplementedError(f"no Pinocchio counterpart for {spec!r}")


class PinModel:
    """A Pinocchio model equivalent to ``model`` and the maps between their coordinates."""

    def __init__(self, model):
        self.model = model
        n1 = model.nbodies + 1
        self.pmodel = pin.Model()
        self.pmodel.gravity = pin.Motion(np.array(model.gravity, dtype=float), np.zeros(3))
        # per body: Pinocchio joint it moves with, and its body frame in that joint's frame
        self.pin_joint = np.zeros(n1, dtype=int)
        self.X_jb = [pin.SE3.Identity() for _ in range(n1)]
        self.ours_of_pin = {0: 0}           # pin joint id -> our joint index
        self.blocks = []                     # (our joint, spec, q slice, v slice, pin idx_q, idx_v)
        for i in _depth_first(model.parent):
            spec = model.joint_specs[i]
            if spec.nv != model.nv_joint[i] or spec.nq != model.nq_joint[i]:
                raise NotImplementedError(f"joint {model.joint_names[i]} is a mimic joint")
            l = int(model.parent[i])
            Xp = _se3(model.joint_P_rot[i], model.joint_P_pos[i])
            Xc = _se3(model.joint_C_rot[i], model.joint_C_pos[i])
            if isinstance(spec, J.Fixed):
                self.pin_joint[i] = self.pin_joint[l]
                self.X_jb[i] = self.X_jb[l] * Xp * Xc.inverse()
            else:
                jid = self.pmodel.addJoint(int(self.pin_joint[l]), pin_joint_model(spec),
                                           self.X_jb[l] * Xp, model.joint_names[i])
                self.pin_joint[i] = jid
                self.X_jb[i] = Xc.inverse()
                self.ours_of_pin[jid] = i
            if self.pin_joint[i] > 0:
                Y = pin.Inertia(float(model.body_mass[i]), np.array(model.body_com[i]),
                                np.array(model.body_inertia[i]))
                self.pmodel.appendBodyToJoint(int(self.pin_joint[i]), Y, self.X_jb[i])
        for jid in range(1, self.pmodel.njoints):
            i = self.ours_of_pin[jid]
            self.blocks.append((i, model.joint_specs[i], model.q_slice(i), model.v_slice(i),
                                self.pmodel.idx_qs[jid], self.pmodel.idx_vs[jid]))
        assert self.pmodel.nq == model.nq and self.pmodel.nv == model.nv
        self.data = self.pmodel.createData()

    # ------------------------------------------------------------------ state maps
    def q(self, q):
        """Our q -> Pinocchio's q."""
        q = np.asarray(q, dtype=float)
        out = np.zeros(self.pmodel.nq)
        for i, spec, qs, vs, iq, iv in self.blocks:
            x = q[qs]
            if getattr(spec, "quaternion", False):
                n = len(x) - 4
                x = np.concatenate([x[:n], x[n + 1:n + 4], x[n:n + 1]])
                x[n:] /= np.linalg.norm(x[n:])
            out[iq:iq + len(x)] = x
        return out

    def _free_R(self, q, qs):
        return _quat_matrix(q[qs][3:7])

    def T(self, q):
        """(nv, nv) matrix with v_pin = T(q) v."""
        q = np.asarray(q, dtype=float)
        T = np.zeros((self.model.nv, self.model.nv))
        for i, spec, qs, vs, iq, iv in self.blocks:
            n = vs.stop - vs.start
            blk = np.eye(n)
            if isinstance(spec, J.Free):
                blk[:3, :3] = self._free_R(q, qs).T
            T[iv:iv + n, vs] = blk
        return T

    def Tdot_v(self, q, qd):
        """Tdot v: what a_pin has beyond T(q) vdot."""
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        out = np.zeros(self.model.nv)
        for i, spec, qs, vs, iq, iv in self.blocks:
            if isinstance(spec, J.Free):
                R = self._free_R(q, qs)
                w = qd[vs][3:6]
                out[iv:iv + 3] = -np.cross(w, R.T @ qd[vs][:3])
        return out

    def v(self, q, qd):
        return self.T(q) @ np.asarray(qd, dtype=float)

    def a(self, q, qd, qdd):
        return self.T(q) @ np.asarray(qdd, dtype=float) + self.Tdot_v(q, qd)

    def qdd_from_pin(self, q, qd, a_pin):
        return np.linalg.solve(self.T(q), np.asarray(a_pin) - self.Tdot_v(q, qd))

    def tau_from_pin(self, q, tau_pin):
        return self.T(q).T @ np.asarray(tau_pin)

    def tau_to_pin(self, q, tau):
        return np.linalg.solve(self.T(q).T, np.asarray(tau, dtype=float))

    def M_from_pin(self, q, M_pin):
        T = self.T(q)
        return T.T @ M_pin @ T

    def fext(self, q, f_ext):
        """Our world-frame wrenches (N+1, 6) [moment about body origin; force] -> Pinocchio's
        per-joint forces in the joint frames (bodies fixed to the world are dropped)."""
        pm, d = self.pmodel, self.data
        pin.forwardKinematics(pm, d, self.q(q))
        R, p = self.poses(q, fk_done=True)
        out = [pin.Force.Zero() for _ in range(pm.njoints)]
        for i in range(1, self.model.nbodies + 1):
            jid = int(self.pin_joint[i])
            if jid == 0:
                continue
            n, f = np.asarray(f_ext[i][:3], dtype=float), np.asarray(f_ext[i][3:], dtype=float)
            oMj = d.oMi[jid]
            nj = n + np.cross(p[i] - oMj.translation, f)
            out[jid] = out[jid] + pin.Force(oMj.rotation.T @ f, oMj.rotation.T @ nj)
        return out

    # ------------------------------------------------------------------ algorithms
    def rnea(self, q, qd, qdd, f_ext=None):
        args = [self.pmodel, self.data, self.q(q), self.v(q, qd), self.a(q, qd, qdd)]
        if f_ext is not None:
            args.append(self.fext(q, f_ext))
        return self.tau_from_pin(q, pin.rnea(*args))

    def mass_matrix(self, q):
        M = pin.crba(self.pmodel, self.data, self.q(q)).copy()
        M = np.triu(M) + np.triu(M, 1).T
        return self.M_from_pin(q, M)

    def nonlinear_effects(self, q, qd):
        return self.rnea(q, qd, np.zeros(self.model.nv))

    def aba(self, q, qd, tau, f_ext=None):
        args = [self.pmodel, self.data, self.q(q), self.v(q, qd), self.tau_to_pin(q, tau)]
        if f_ext is not None:
            args.append(self.fext(q, f_ext))
        return self.qdd_from_pin(q, qd, pin.aba(*args))

    # ------------------------------------------------------------------ kinematics
    def poses(self, q, fk_done=False):
        """World rotation and origin of every body frame (N+1 rows)."""
        if not fk_done:
            pin.forwardKinematics(self.pmodel, self.data, self.q(q))
        n1 = self.model.nbodies + 1
        R, p = np.zeros((n1, 3, 3)), np.zeros((n1, 3))
        for i in range(n1):
            X = self.data.oMi[int(self.pin_joint[i])] * self.X_jb[i]
            R[i], p[i] = X.rotation, X.translation
        return R, p

    def kinematics(self, q, qd=None, qdd=None):
        """World-frame body-origin kinematics from Pinocchio: dict with R, p and, given qd (and
        qdd), omega, v (and alpha, classical a)."""
        pm, d = self.pmodel, self.data
        args = [pm, d, self.q(q)]
        if qd is not None:
            args.append(self.v(q, qd))
            if qdd is not None:
                args.append(self.a(q, qd, qdd))
        pin.forwardKinematics(*args)
        R, p = self.poses(q, fk_done=True)
        out = {"R": R, "p": p}
        if qd is None:
            return out
        n1 = self.model.nbodies + 1
        LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        w, v = np.zeros((n1, 3)), np.zeros((n1, 3))
        al, a = np.zeros((n1, 3)), np.zeros((n1, 3))
        for i in range(1, n1):
            jid = int(self.pin_joint[i])
            if jid == 0:
                continue
            dvec = p[i] - d.oMi[jid].translation
            V = pin.getVelocity(pm, d, jid, LWA)
            w[i] = V.angular
            v[i] = V.linear + np.cross(V.angular, dvec)
            if qdd is not None:
                A = pin.getClassicalAcceleration(pm, d, jid, LWA)
                al[i] = A.angular
                a[i] = A.linear + np.cross(A.angular, dvec) + np.cross(w[i], np.cross(w[i], dvec))
        out.update(omega=w, v=v)
        if qdd is not None:
            out.update(alpha=al, a=a)
        return out
