"""``ej.Data``: the preallocated workspace of one state or a batch (as Pinocchio's Data and
MuJoCo's mjData).

It holds what the last computations produced, tagged with the state they belong to: the joints'
transforms, motion subspaces and bias terms, the body twists and accelerations and the world
frames (``layout.RECORD``).  A public function given ``data=`` reuses what is already there for
the same (q, qd, qdd, t), bitwise, and computes only the rest: ``forward_kinematics`` then
``rnea`` on the same state runs only RNEA's force sweep; ``mass_matrix`` then
``nonlinear_effects`` does not evaluate the joints' poses again.  Results computed with a Data
are identical to those computed without.

What is there can be read by name (``VIEWS``): read-only numpy views of the record, with a
leading batch axis for a batch Data, e.g. ``data.S``, ``data.body_twist``, ``data.frame_rotation``;
reading one that no call has computed yet (for the state the record holds) is a ``ValueError``
naming the functions that compute it.

The result arrays a function returns with ``data=`` belong to the Data and are overwritten by its
next call of that function (copy them to keep them).  A batch Data keeps one record per state:
``data.nbytes`` says what that costs.
"""
import numba
import numpy as np

from . import layout
from .model import Model


def max_chunks(B):
    """The most chunks a batch of B states is split into (a few per thread, never more than B)."""
    return max(1, min(B, 4 * numba.config.NUMBA_NUM_THREADS))


_POS = (layout.REC_POS, "joint positions", "forward_kinematics, joint_terms, mass_matrix, rnea, aba, ...")
_VEL = (layout.REC_VEL, "velocities", "forward_kinematics or joint_terms with qd, rnea, nonlinear_effects, aba, "
        "kinetic_energy")
_ACC = (layout.REC_ACC, "accelerations", "forward_kinematics with qdd, rnea")
_WORLD = (layout.REC_WORLD, "world frames", "forward_kinematics, body_jacobian, potential_energy, center_of_mass")

# the named views of a Data: (name, record table, the stage that computes it, what it is)
VIEWS = (
    ("joint_rotation", "Rrel", _POS, "(N+1, 3, 3) rotation of joint i's outboard frame C_i in its inboard "
     "frame P_i (C axes -> P axes; joint_terms' R)"),
    ("joint_translation", "rrel", _POS, "(N+1, 3) origin of C_i in P_i, P axes (joint_terms' r)"),
    ("X_rotation", "E", _POS, "(N+1, 3, 3) E_i of the spatial transform X_i = [E 0; -E d^ E] from the parent's "
     "C frame to C_i (parent C axes -> C_i axes)"),
    ("X_translation", "d", _POS, "(N+1, 3) d_i of X_i: origin of C_i in the parent's C frame, parent C axes"),
    ("S", "S", _POS, "(nv, 6) motion subspace: row k is the column of velocity variable k, [angular; linear], "
     "C axes of its joint's body, about the origin of C"),
    ("joint_twist", "vJ", _VEL, "(N+1, 6) joint twist v_J = S u + sigma of C_i relative to its parent's C "
     "frame, C_i coordinates"),
    ("joint_bias", "cJ", _VEL, "(N+1, 6) joint bias c_J = d/dt v_J - S u' (C_i coordinates)"),
    ("body_twist", "vel", _VEL, "(N+1, 6) spatial velocity [omega; v] of body i, C_i coordinates, about the "
     "origin of C_i (Pinocchio's data.v, in the joint frame)"),
    ("body_acceleration", "acc", _ACC, "(N+1, 6) spatial acceleration of body i, C_i coordinates, about the "
     "origin of C_i, with gravity as an acceleration of the base (-g added: what RNEA propagates; "
     "Pinocchio's data.a plus the base's -g)"),
    ("frame_rotation", "RC", _WORLD, "(N+1, 3, 3) world axes of C_i (C axes -> world axes; Pinocchio's "
     "data.oMi[i].rotation)"),
    ("frame_origin", "oC", _WORLD, "(N+1, 3) world position of the origin of C_i (data.oMi[i].translation)"),
)


def _view(name, table, stage, doc):
    def get(self):
        return self._view(name, table, stage)
    return property(get, doc=doc)


class Data:
    """Preallocated workspace of ``model`` for one state (``batch=None``) or a batch of exactly
    ``batch`` states (one record per state; ``data.nbytes`` says what it costs); also
    ``model.data(batch=None)``.

    Every public function that takes ``data=`` (``forward_kinematics``, ``joint_terms``,
    ``body_jacobian``, ``rnea``, ``nonlinear_effects``, ``mass_matrix``, ``aba``,
    ``kinetic_energy``, ``potential_energy``, ``center_of_mass``; also the derivatives) reuses it
    and keeps what it computed there, so that a later stage on the same state does not redo the
    joint pass; ``forward_dynamics_crba``, ``simulate`` and ``sweep`` take none.  What is kept,
    tagged with the state ``(q, qd, qdd, t)`` it belongs to: each joint's transform X_i, motion
    subspace S_i, joint twist and bias, the body twists and accelerations and the world frames.
    A call on the same state (compared bit for bit) reuses what is there and computes only the
    rest: ``forward_kinematics`` then ``rnea`` runs only RNEA's force sweep; ``mass_matrix`` then
    ``nonlinear_effects`` does not evaluate the joints' poses again.  Results are identical to
    those computed without a ``Data``.  The arrays a function returns with ``data=`` belong to
    the ``Data`` and are overwritten by its next call of that function (copy them to keep them).
    A ``Data`` belongs to one model object and one shape: ``ej.Data(model)`` serves single
    states, ``ej.Data(model, batch=B)`` batches of exactly B states; anything else is a
    ``ValueError``.  ``data.model``, ``data.batch``.

    Named read-only views of what the calls computed (Pinocchio's ``data.oMi``, ``data.v``,
    ``data.a``; MuJoCo's ``mjData`` fields), numpy views of the workspace with a leading (B,) axis
    for a batch ``Data``.  ``P_i`` and ``C_i`` are joint i's inboard and outboard frames
    (``placement``, ``child_placement``); twists and accelerations are [angular; linear], in C_i
    coordinates, about the origin of C_i.  Row 0 is the world (identity rotations, zeros).

    | view | shape | what it is | computed by |
    |---|---|---|---|
    | ``joint_rotation``, ``joint_translation`` | (N+1, 3, 3), (N+1, 3) | pose of C_i in P_i (``joint_terms``' R, r) | every function |
    | ``X_rotation``, ``X_translation`` | (N+1, 3, 3), (N+1, 3) | E_i, d_i of X_i = [E 0; -E d^ E], the spatial transform from the parent's C frame to C_i (d_i: origin of C_i in the parent's C) | every function |
    | ``S`` | (nv, 6) | motion subspace, row k for velocity variable k, in its joint's C axes (``joint_terms(frame="outboard").J.T``) | every function |
    | ``joint_twist``, ``joint_bias`` | (N+1, 6) | v_J = S qd + sigma and c_J = d/dt v_J - S qdd of joint i, C_i coordinates | functions given qd |
    | ``body_twist`` | (N+1, 6) | spatial velocity of body i | functions given qd |
    | ``body_acceleration`` | (N+1, 6) | spatial acceleration of body i, with gravity as a base acceleration (-g added, as RNEA propagates it) | ``forward_kinematics`` with qdd, ``rnea`` |
    | ``frame_rotation``, ``frame_origin`` | (N+1, 3, 3), (N+1, 3) | world pose of C_i (C axes -> world axes; origin) | ``forward_kinematics``, ``body_jacobian``, ``potential_energy``, ``center_of_mass`` |
    | ``body_rotation``, ``body_position`` | (N+1, 3, 3), (N+1, 3) | world pose of each body frame (``forward_kinematics``' R, p), computed from the frames and child placements (fresh arrays) | as ``frame_rotation`` |

    ``data.q``, ``data.qd``, ``data.qdd``, ``data.t``: the state the views belong to (None before
    a call has computed that stage); ``data.computed``: the stages held, a tuple of
    ``"position"``, ``"velocity"``, ``"acceleration"``, ``"world"``.  Reading a view whose stage
    the record does not hold is a ``ValueError`` naming the functions that compute it.  A model
    with couplers (mimic joints) runs its calls on ``model.expanded()`` and keeps no record in its
    ``Data`` (its views raise; use ``ej.Data(model.expanded())`` with the expanded model's calls).

    The world-frame body quantities follow from the views: ``omega = R_C w``, ``v = R_C (v_C + w
    x b)``, ``alpha = R_C wdot``, ``a = R_C (a_C + wdot x b + w x (v_C + w x b)) + g``, where
    ``R_C`` is ``frame_rotation``, ``(w, v_C)`` the body twist, ``(wdot, a_C)`` its acceleration
    and ``b`` the body origin in C_i (``model.body_bo``)."""

    def __init__(self, model, batch=None):
        if not isinstance(model, Model):
            raise ValueError(f"ej.Data needs an ej.Model, got {type(model).__name__}")
        km = model.kernel_model()
        self.model = model
        if batch is None:
            self.batch = None
            self._w = np.zeros(km.record_size + km.scratch_size)
        else:
            if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
                raise ValueError(f"ej.Data batch must be a positive integer (or None for one state), got {batch!r}")
            self.batch = int(batch)
            self._R = np.zeros((self.batch, km.record_size))
            self._S = np.zeros((max_chunks(self.batch), km.scratch_size))
        self._results = {}
        # the world's row (row 0) of the frames, which no kernel writes: identity rotations
        recs, _ = self._records()
        for table in ("E", "Rrel", "RC"):
            self._table(table, recs)[..., 0, :, :] = np.eye(3)

    # ------------------------------------------------------------------ named views
    def _records(self):
        """The records, one row per state: (1 or B, record size)."""
        km = self.model.kernel_model()
        return (self._w[None, :km.record_size] if self.batch is None else self._R), km

    def _table(self, table, writeable=None):
        recs, km = self._records()
        if writeable is not None:
            recs = writeable
        t = layout._BY_NAME[table]
        shape = layout.shape_of(t, km._mb)
        off = int(km._mb[layout.SLOT[table]])
        n = int(np.prod(shape, dtype=np.int64))
        a = recs[:, off:off + n].reshape((recs.shape[0],) + shape)
        a = a[0] if self.batch is None else a
        if writeable is not None:
            return a
        v = a.view()
        v.flags.writeable = False
        return v

    def _has(self, flag):
        recs, _ = self._records()
        return bool(np.all(recs[:, flag] == 1.0))

    def _view(self, name, table, stage):
        flag, what, how = stage
        if self.model.has_couplers:
            raise ValueError(f"data.{name}: a model with couplers (mimic joints) keeps no record in its Data "
                             "(its calls run on model.expanded(); use ej.Data(model.expanded()))")
        if not self._has(flag):
            raise ValueError(f"data.{name}: the record holds no {what} for its state{'s' if self.batch else ''} "
                             f"yet (computed by {how} with data=this Data)")
        return self._table(table)

    @property
    def computed(self):
        """The stages the record holds for its state (for every state of a batch): a tuple of
        "position", "velocity", "acceleration", "world"."""
        if self.model.has_couplers:
            return ()
        return tuple(s for s, f in (("position", layout.REC_POS), ("velocity", layout.REC_VEL),
                                    ("acceleration", layout.REC_ACC), ("world", layout.REC_WORLD)) if self._has(f))

    def _key(self, table, flag):
        if self.model.has_couplers or not self._has(flag):
            return None
        return self._table(table)

    @property
    def q(self):
        """The coordinates the record belongs to ((nq,) or (B, nq)), None before any call."""
        return self._key("qkey", layout.REC_POS)

    @property
    def qd(self):
        """The velocities the record's velocity terms belong to, or None."""
        return self._key("vkey", layout.REC_VEL)

    @property
    def qdd(self):
        """The accelerations the record's ``body_acceleration`` belongs to, or None."""
        return self._key("akey", layout.REC_ACC)

    @property
    def t(self):
        """The time the record belongs to (a float, or (B,) for a batch), None before any call."""
        if self.model.has_couplers or not self._has(layout.REC_POS):
            return None
        recs, _ = self._records()
        t = recs[:, layout.REC_T].copy()
        return float(t[0]) if self.batch is None else t

    @property
    def body_rotation(self):
        """(N+1, 3, 3) world axes of each body frame (body -> world): forward_kinematics' R,
        computed from ``frame_rotation`` and the child placements (a fresh array)."""
        RC = self.frame_rotation
        return RC @ np.swapaxes(self.model.kernel_model().body_Ec, -1, -2)

    @property
    def body_position(self):
        """(N+1, 3) world position of each body origin: forward_kinematics' p (a fresh array)."""
        RC, oC = self.frame_rotation, self.frame_origin
        return oC + np.einsum("...ij,...j->...i", RC, self.model.kernel_model().body_bo)

    # ------------------------------------------------------------------ the workspace
    @property
    def nbytes(self):
        arrays = [self._w] if self.batch is None else [self._R, self._S]
        return int(sum(a.nbytes for a in arrays) + sum(a.nbytes for a in self._results.values()))

    def _check(self, model, B):
        if model is not self.model:
            raise ValueError("data= belongs to another model (make one with ej.Data(model))")
        if (B is None) != (self.batch is None) or (B is not None and B != self.batch):
            want = "one state" if self.batch is None else f"a batch of {self.batch} states"
            got = "one state" if B is None else f"a batch of {B} states"
            raise ValueError(f"data= is the workspace of {want}, but the call has {got}")

    def _check_batch(self, B):
        if B != self.batch:
            raise ValueError(f"data= is the workspace of a batch of {self.batch} states, the call has {B}")

    def _one(self, name, shape):
        """The result array ``name`` of a one-state Data (its shape never changes)."""
        a = self._results.get(name)
        if a is None:
            a = self._results[name] = np.zeros(shape)
        return a

    def _result(self, name, shape):
        """The result array ``name`` of this Data (made on first use)."""
        a = self._results.get(name)
        if a is None or a.shape != shape:
            a = self._results[name] = np.zeros(shape)
        return a

    def __repr__(self):
        what = "one state" if self.batch is None else f"batch of {self.batch}"
        return f"<ej.Data of {self.model!r}, {what}, {self.nbytes / 1e6:.3g} MB>"


for _name, _table_name, _stage, _doc in VIEWS:
    setattr(Data, _name, _view(_name, _table_name, _stage, _doc))


def _data(self, batch=None):
    """A preallocated workspace for this model (``ej.Data``)."""
    return Data(self, batch)


# the model's ``data()``: defined here, beside Data, so that the model does not depend on its workspace
Model.data = _data
