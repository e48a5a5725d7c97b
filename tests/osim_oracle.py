"""OpenSim 4 as the oracle of ``ej.load_opensim``: the same file opened by OpenSim, its forces
removed, evaluated at given coordinates (by name, in the full mechanism of ``model.expanded()``).

``Oracle(path)``: ``frames(q_full)`` -> {body: (R, p)} in the ground; ``inverse_dynamics(q_full,
v_full, a_full)`` -> generalized forces of ``InverseDynamicsSolver.solve`` (gravity included,
constraints ignored); ``mass_matrix(q_full)`` -> ``SimbodyMatterSubsystem.calcM``; both in the
order of ``names``.
"""
import numpy as np

osim = None


def _import():
    global osim
    if osim is None:
        import opensim
        osim = opensim
    return osim


class Oracle:
    def __init__(self, path, names):
        _import()
        self.m = osim.Model(str(path))
        self.m.updForceSet().clearAndDestroy()
        self.s = self.m.initSystem()
        # coordinates not named (locked ones, welded by the loader) stay at their defaults
        self.q0 = [self.s.getQ().get(k) for k in range(self.s.getNQ())]
        cs = self.m.getCoordinateSet()
        coords = {cs.get(i).getName(): cs.get(i) for i in range(cs.getSize())}
        self.names = list(names)
        nq, nu = self.s.getNQ(), self.s.getNU()
        # where each named coordinate sits in Simbody's q and u
        self.qi, self.ui = [], []
        for n in self.names:
            c = coords[n]
            self.s.updQ().setToZero()
            self.s.updU().setToZero()
            c.setValue(self.s, 0.5, False)
            c.setSpeedValue(self.s, 0.5)
            q = np.array([self.s.getQ().get(k) for k in range(nq)])
            u = np.array([self.s.getU().get(k) for k in range(nu)])
            self.qi.append(int(np.flatnonzero(q == 0.5)[0]))
            self.ui.append(int(np.flatnonzero(u == 0.5)[0]))
        self.nq, self.nu = nq, nu
        self.id = osim.InverseDynamicsSolver(self.m)

    def _set(self, q, v=None):
        Q = osim.Vector(self.nq, 0.0)
        for k, x in enumerate(self.q0):
            Q.set(k, x)
        for k, x in zip(self.qi, q):
            Q.set(k, float(x))
        self.s.setQ(Q)
        U = osim.Vector(self.nu, 0.0)
        if v is not None:
            for k, x in zip(self.ui, v):
                U.set(k, float(x))
        self.s.setU(U)
        self.m.realizeVelocity(self.s)

    def frames(self, q):
        self._set(q)
        out = {}
        bs = self.m.getBodySet()
        for i in range(bs.getSize()):
            b = bs.get(i)
            X = b.getTransformInGround(self.s)
            R = X.R()
            out[b.getName()] = (np.array([[R.get(r, c) for c in range(3)] for r in range(3)]),
                                np.array([X.p().get(k) for k in range(3)]))
        return out

    def inverse_dynamics(self, q, v, a):
        self._set(q, v)
        self.m.realizeDynamics(self.s)
        udot = osim.Vector(self.nu, 0.0)
        for k, x in zip(self.ui, a):
            udot.set(k, float(x))
        tau = self.id.solve(self.s, udot)
        return np.array([tau.get(k) for k in self.ui])

    def mass_matrix(self, q):
        self._set(q)
        M = osim.Matrix()
        self.m.getMatterSubsystem().calcM(self.s, M)
        return np.array([[M.get(r, c) for c in self.ui] for r in self.ui])
