"""The model's side of its couplers (mimic joints among them): its expansion, the full mechanism
with every coordinate, and the maps between the model's coordinates and the expansion's
(``couplers`` holds the couplers themselves and their compiled evaluation).  ``Model`` inherits
these methods."""
import numpy as np

from ..core.transform import Transform
from ..errors import ModelError
from .couplers import Coupling, tables


class Expansion:
    """Methods of ``ej.Model`` about its couplers (``ModelBuilder.add_coupler``)."""

    def expanded(self):
        """The same mechanism with every coordinate: each coupler's dependent coordinate (a mimic
        joint's among them) given its own (no limits on it), the dependent coordinates' rotor
        inertias (``coupled_armature``) on its ``dof_armature``.  Made once per model.

        A model without couplers is its own expansion."""
        if not self.has_mimic:
            return self
        cached = self.__dict__.get("_expanded")
        if cached is not None:
            return cached
        own_q, own_v = self._own()
        nqf, nvf = len(self._qnames_full), len(self._vnames_full)

        def fill(x, n, own, default):
            out = np.full(n, default)
            out[own] = x
            return out
        lims = [[fill(self.q_lower, nqf, own_q, -np.inf)], [fill(self.q_upper, nqf, own_q, np.inf)],
                [fill(self.v_limit, nvf, own_v, np.inf)], [fill(self.effort_limit, nvf, own_v, np.inf)],
                [fill(self.dof_damping, nvf, own_v, 0.0)], [fill(self.dof_stiffness, nvf, own_v, 0.0)],
                [fill(self.dof_springref, nvf, own_v, 0.0)], [fill(self.dof_armature, nvf, own_v, 0.0)]]
        # the dependent coordinates' armature (``coupled_armature``), on their velocity variables
        vadr = np.concatenate([[0], np.cumsum([s.nv for s in self.joint_specs])])
        for (j, k), a in self.coupled_armature:
            lims[7][0][vadr[j] + k] = a
        m = type(self)(gravity=self.gravity, body_names=self.body_names, joint_names=self.joint_names,
                  joint_specs=self.joint_specs, parent=self.body_parent,
                  joint_P=[Transform(R, p) for R, p in zip(self.joint_P_rot, self.joint_P_pos)],
                  joint_C=[Transform(R, p) for R, p in zip(self.joint_C_rot, self.joint_C_pos)],
                  body_mass=self.body_mass, body_com=self.body_com, body_inertia=self.body_inertia,
                  q_lower=np.concatenate(lims[0]), q_upper=np.concatenate(lims[1]),
                  v_limit=np.concatenate(lims[2]), effort_limit=np.concatenate(lims[3]),
                  dof_damping=np.concatenate(lims[4]), dof_stiffness=np.concatenate(lims[5]),
                  dof_springref=np.concatenate(lims[6]), dof_armature=np.concatenate(lims[7]),
                  coordinate_names=self._qnames_full,
                  q_default=self._q_default_full)
        object.__setattr__(self, "_expanded", m)
        return m

    def mimic_map(self):
        """Linear maps from this model's coordinates to those of ``expanded()`` when every
        coupler is linear (mimic joints): ``q_full = Gq @ q + gq`` and ``v_full = Gv @ v`` (the
        same for qd, qdd); ``tau = Gv.T @ tau_full``, ``M = Gv.T @ M_full @ Gv``.  Returns
        (Gq, gq, Gv).  A nonlinear coupler has no constant map: see ``coupler_jacobian``."""
        if not self.couplers_linear:
            raise ModelError("mimic_map: the model has nonlinear couplers, whose map depends on q; use "
                             "expand(q) and coupler_jacobian(q)")
        cached = self.__dict__.get("_mimic_map")
        if cached is not None:
            return cached
        full = self.expanded()
        own_q, own_v = self._own()
        red_q = {int(f): r for r, f in enumerate(own_q)}
        red_v = {int(f): r for r, f in enumerate(own_v)}
        Gq = np.zeros((full.nq, self.nq))
        Gq[own_q, np.arange(self.nq)] = 1.0
        gq = np.zeros(full.nq)
        Gv = np.zeros((full.nv, self.nv))
        Gv[own_v, np.arange(self.nv)] = 1.0
        for c in self.couplers:
            j, k = c.dependent
            n = len(c.independent)
            f0 = c.function.value(np.zeros(n))
            gq[full.jnt_qadr[j] + k] = c.scale * f0
            for a, (ji, ki) in enumerate(c.independent):
                g = c.scale * (c.function.value(np.eye(n)[a]) - f0)
                Gq[full.jnt_qadr[j] + k, red_q[int(full.jnt_qadr[ji] + ki)]] = g
                Gv[full.jnt_dofadr[j] + k, red_v[int(full.jnt_dofadr[ji] + ki)]] = g
        out = (Gq, gq, Gv)
        for x in out:
            x.flags.writeable = False
        object.__setattr__(self, "_mimic_map", out)
        return out

    def _coupler_tables(self):
        cached = self.__dict__.get("_ctabs")
        if cached is None:
            cached = tables(self, self.expanded())
            object.__setattr__(self, "_ctabs", cached)
        return cached

    def _coupling(self, q, v=None, a=None):
        q2 = np.asarray(q, dtype=float)
        one = q2.ndim == 1
        c = Coupling(self)
        r = c.expand(np.atleast_2d(q2), None if v is None else np.atleast_2d(np.asarray(v, dtype=float)),
                     None if a is None else np.atleast_2d(np.asarray(a, dtype=float)))
        return c, r, one

    @property
    def dependent_coords(self):
        """Indices into the coordinates of ``expanded()`` of the couplers' dependent coordinates,
        in the couplers' order."""
        full = self.expanded()
        return np.array([int(full.jnt_qadr[c.dependent[0]] + c.dependent[1]) for c in self.couplers], dtype=np.int64)

    def expand(self, q):
        """q_full = phi(q) (..., nq_full): the coordinates of ``expanded()`` from this model's q,
        (nq,) or (B, nq).  Also ``expand_q``."""
        if not self.couplers:
            return np.array(q, dtype=float)
        _, (qf, _, _), one = self._coupling(q)
        return qf[0] if one else qf

    expand_q = expand

    def expand_v(self, v, q=None):
        """v_full = G(q) v (..., nv_full) from v (nv,) or (B, nv); ``q`` may be left out when every
        coupler is linear."""
        if not self.couplers:
            return np.array(v, dtype=float)
        if q is None:
            if not self.couplers_linear:
                raise ModelError("expand_v: the model has nonlinear couplers; give q (expand_v(v, q))")
            v2 = np.asarray(v, dtype=float)
            return v2 @ self.coupler_jacobian(np.zeros(self.nq)).T
        _, (_, vf, _), one = self._coupling(q, v)
        return vf[0] if one else vf

    def expand_a(self, a, q, v):
        """a_full = G(q) a + Gdot(q, v) v (..., nv_full) from a (nv,) or (B, nv)."""
        if not self.couplers:
            return np.array(a, dtype=float)
        _, (_, _, af), one = self._coupling(q, v, a)
        return af[0] if one else af

    def coupler_jacobian(self, q):
        """G(q) = d q_full / d q restricted to velocities: (nv_full, nv) or (B, nv_full, nv), so
        that v_full = G v, tau = G^T tau_full, M = G^T M_full G."""
        if not self.couplers:
            q2 = np.asarray(q, dtype=float)
            eye = np.eye(self.nv)
            return eye if q2.ndim == 1 else np.broadcast_to(eye, (q2.shape[0], self.nv, self.nv)).copy()
        c, _, one = self._coupling(q)
        return c.G[0] if one else c.G
