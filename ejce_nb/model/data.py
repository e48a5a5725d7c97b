"""``ej.Data``: the preallocated workspace of one state or a batch (as Pinocchio's Data and
MuJoCo's mjData).

It holds what the last computations produced, tagged with the state they belong to: the joints'
transforms, motion subspaces and bias terms, the body twists and accelerations and the world
frames (``layout.RECORD``).  A public function given ``data=`` reuses what is already there for
the same (q, qd, qdd, t), bitwise, and computes only the rest: ``forward_kinematics`` then
``rnea`` on the same state runs only RNEA's force sweep; ``mass_matrix`` then
``nonlinear_effects`` does not evaluate the joints' poses again.  Results computed with a Data
are identical to those computed without.

The result arrays a function returns with ``data=`` belong to the Data and are overwritten by its
next call of that function (copy them to keep them).  A batch Data keeps one record per state:
``data.nbytes`` says what that costs.
"""
import numpy as np

from ..algorithms.engine import max_chunks


class Data:
    """Workspace of ``model`` for one state (``batch=None``) or a batch of ``batch`` states."""

    def __init__(self, model, batch=None):
        from .model import Model
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
