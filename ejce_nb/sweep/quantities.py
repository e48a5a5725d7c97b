"""The quantities a sweep evaluates, as a registry: each is registered once, with the inputs it
needs besides q and t, the arrays it stores per sample and the batch call that computes them
(with ``errors="flag"``).  A new quantity is one ``register`` entry.

Quantities of the same states share what they can, through ``Batch.shared``: ``rnea`` and
``aba`` one forward sweep (``ej.evaluate``), the poses of several bodies one forward
kinematics.

A model with loop closures is swept on its closed states (``plan``: each sample assembled, its
velocities projected, its constrained dynamics solved, ``sim.closed.assemble_batch``): its
quantities are the loop ones (``constrained_dynamics``, ``loop_residual``) and those of the
kinematics, which hold for the closed mechanism; the open tree's dynamics (``rnea``, ``aba``,
``mass_matrix``, ``nonlinear_effects``) would ignore the loops and are refused there."""
import numpy as np

from ..calls import public
from ..calls.public import (body_jacobian, forward_kinematics, joint_terms, kinetic_energy, mass_matrix,
                              nonlinear_effects)
from ..errors import ModelError


class Quantity:
    """``kind``, ``inputs`` (besides q and t), ``description``, ``arrays(model)`` → [(suffix,
    trailing shape)] stored per sample, ``compute(batch, body)`` → ({suffix: (m, ...)}, status
    (m,)); ``body``: named ``kind:BODY``."""

    def __init__(self, kind, inputs, description, arrays, compute, body, models):
        self.kind, self.inputs, self.description = kind, tuple(inputs), description
        self.arrays, self.compute, self.body = arrays, compute, body
        # "any" model, the open "tree"'s dynamics (not for a model with loops), or "loops" only
        self.models = models


QUANTITIES = {}


def register(kind, inputs, description, arrays, body=False, models="any"):
    def add(compute):
        QUANTITIES[kind] = Quantity(kind, inputs, description, arrays, compute, body, models)
        return compute
    return add


class Batch:
    """The states of one evaluation: ``model``, the inputs ``x`` (``x["t"]`` a float or (m,)),
    the kinds asked for, output arrays reused from chunk to chunk (``buffer``) and the results
    that several quantities share (``shared``)."""

    def __init__(self, model, x, kinds, buf=None):
        self.model, self.x, self.kinds = model, x, kinds
        self.q, self.t = x["q"], x["t"]
        self._buf = buf
        self._shared = {}

    def buffer(self, tag):
        """An (m, nv) array kept for the next chunk, or None (the call allocates)."""
        return None if self._buf is None else self._buf(tag, (len(self.q), self.model.nv))

    def shared(self, key, compute):
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]


def _vector(model):
    return [("", (model.nv,))]


def _dynamics(b):
    """rnea and aba (those of the two asked for) of the same states on one forward sweep."""
    kinds = [k for k in ("rnea", "aba") if k in b.kinds]
    x = b.x
    return b.shared("dynamics", lambda: public.evaluate(b.model, b.q, x["qd"], x.get("qdd"), x.get("tau"), t=b.t,
                                                     quantities=kinds, errors="flag",
                                                     out={k: b.buffer(k) for k in kinds}))


@register("rnea", ("qd", "qdd"), "joint forces tau (nv,) of inverse dynamics at (q, qd, qdd)", _vector, models="tree")
def _rnea(b, body):
    values, codes = _dynamics(b)
    return {"": values["rnea"]}, codes["rnea"]


@register("aba", ("qd", "tau"), "accelerations qdd (nv,) of forward dynamics at (q, qd, tau)", _vector, models="tree")
def _aba(b, body):
    values, codes = _dynamics(b)
    return {"": values["aba"]}, codes["aba"]


@register("mass_matrix", (), "joint-space mass matrix (nv, nv)", lambda m: [("", (m.nv, m.nv))], models="tree")
def _mass_matrix(b, body):
    value, st = mass_matrix(b.model, b.q, t=b.t, errors="flag")
    return {"": value}, st


@register("nonlinear_effects", ("qd",), "h(q, qd) (nv,)", _vector, models="tree")
def _nonlinear_effects(b, body):
    value, st = nonlinear_effects(b.model, b.q, b.x["qd"], t=b.t, errors="flag")
    return {"": value}, st


@register("kinetic_energy", ("qd",), "kinetic energy ()", lambda m: [("", ())])
def _kinetic_energy(b, body):
    value, st = kinetic_energy(b.model, b.q, b.x["qd"], t=b.t, errors="flag")
    return {"": value}, st


def _joint_term_arrays(model):
    # the terms of a model with mimic joints are those of its expansion
    nvx = model.expanded().nv if model.has_mimic else model.nv
    n1 = model.nbodies + 1
    return [(".J", (6, nvx)), (".sigma", (n1, 6)), (".bias", (n1, 6))]


@register("joint_terms", ("qd",), "EJCE terms: J (6, nv), sigma and bias (N+1, 6)", _joint_term_arrays)
def _joint_terms(b, body):
    terms, st = joint_terms(b.model, b.q, b.x["qd"], t=b.t, errors="flag")
    return {".J": terms.J, ".sigma": terms.sigma, ".bias": terms.bias}, st


@register("forward_kinematics", (), "pose of a body (4, 4): [[R, p], [0, 0, 0, 1]], world frame",
          lambda m: [("", (4, 4))], body=True)
def _pose(b, body):
    kin, st = b.shared("forward_kinematics", lambda: forward_kinematics(b.model, b.q, t=b.t, errors="flag"))
    value = np.zeros((len(b.q), 4, 4))
    value[:, :3, :3] = kin.R[:, body]
    value[:, :3, 3] = kin.p[:, body]
    value[:, 3, 3] = 1.0
    value[st != 0] = np.nan
    return {"": value}, st


@register("body_jacobian", (), "world-frame Jacobian (6, nv) of a body origin",
          lambda m: [("", (6, m.nv))], body=True)
def _body_jacobian(b, body):
    value, st = body_jacobian(b.model, b.q, body, t=b.t, errors="flag")
    return {"": value}, st


def _closed(b):
    """(QDD, TC, WR, SC) of the chunk's closed states (``plan``, ``sim.closed.assemble_batch``)."""
    return b.x["_closed"]


@register("constrained_dynamics", ("qd", "tau"),
          "constrained forward dynamics of the closed mechanism at (q, qd, tau): accelerations qdd (nv,), "
          "constraint forces tau_constraint = Jc^T lam (nv,), each loop's constraint wrench on body_b "
          "(n_loops, 6)", lambda m: [(".qdd", (m.nv,)), (".tau_constraint", (m.nv,)), (".wrench", (len(m.loops), 6))],
          models="loops")
def _constrained_dynamics(b, body):
    QDD, TC, WR, SC = _closed(b)
    return {".qdd": QDD, ".tau_constraint": TC, ".wrench": WR}, np.zeros(len(b.q), dtype=np.int8)


@register("loop_residual", ("qd",), "residuals of the loop constraints at the closed state: position "
          "max_l |N_l^T e_l| (), velocity max |Jc qd + s| ()", lambda m: [(".position", ()), (".velocity", ())],
          models="loops")
def _loop_residual(b, body):
    SC = _closed(b)[3]
    return {".position": SC[:, 3], ".velocity": SC[:, 4]}, np.zeros(len(b.q), dtype=np.int8)


# ---------------------------------------------------------------------------- names and arrays
def names():
    return [k + (":BODY" if q.body else "") for k, q in QUANTITIES.items()]


def parse(quantities, model):
    """[(name, kind, body index or None)] from names or one comma-separated string."""
    if isinstance(quantities, str):
        items = [s.strip() for s in quantities.split(",") if s.strip()]
    else:
        try:
            items = list(quantities)
        except TypeError:
            raise ValueError(f"quantities must be names or a comma-separated string, got {quantities!r}") from None
    if not items:
        raise ValueError("quantities is empty; name at least one of " + ", ".join(names()))
    out, seen = [], set()
    for q in items:
        if not isinstance(q, str):
            raise ValueError(f"quantity names must be strings, got {q!r}")
        kind, _, body = q.partition(":")
        if kind not in QUANTITIES:
            raise ValueError(f"unknown quantity {q!r}; known: {', '.join(names())}")
        if QUANTITIES[kind].models == "tree" and model.has_loops:
            raise ValueError(
                f"quantity {q!r}: the model has loop closures ({', '.join(repr(L.name) for L in model.loops)}), and "
                f"{kind} would be the open tree's, as if the loops were cut; a sweep of a loop model samples closed "
                "states and gives constrained_dynamics (accelerations, constraint forces and wrenches), loop_residual "
                "and the kinematics (forward_kinematics:BODY, body_jacobian:BODY, joint_terms, kinetic_energy)")
        if QUANTITIES[kind].models == "loops" and not model.has_loops:
            raise ValueError(f"quantity {q!r} is for models with loop closures; this model has none (use aba, rnea)")
        if QUANTITIES[kind].body:
            if not body:
                raise ValueError(f"quantity {q!r} needs a body: '{kind}:BODY' with BODY one of "
                                 f"{', '.join(model.body_names[1:])}")
            try:
                b = model.body_index(int(body) if body.isdigit() and body not in model.body_names else body)
            except ModelError:
                raise ValueError(f"quantity {q!r}: the model has no body {body!r}; bodies: "
                                 f"{', '.join(model.body_names)}") from None
            name = f"{kind}:{model.body_names[b]}"
        else:
            if body:
                raise ValueError(f"quantity {q!r}: {kind} takes no body")
            name, b = kind, None
        if name in seen:
            raise ValueError(f"quantity {name!r} is listed twice")
        seen.add(name)
        out.append((name, kind, b))
    return out


def output_arrays(quantity, model):
    """[(array name, trailing shape)] stored for a parsed quantity."""
    name, kind, _ = quantity
    return [(name + suffix, shape) for suffix, shape in QUANTITIES[kind].arrays(model)]


class EvalError(Exception):
    """A batch call failed as a whole (not one sample)."""

    def __init__(self, quantity, exc):
        super().__init__(quantity, exc)
        self.quantity, self.exc = quantity, exc


def evaluate(model, quantities, x, out, status, rows=None, buf=None):
    """Every quantity at the states x into ``out[array][rows]`` where ``out`` has the array (else
    ``out[array]`` is the array the call returned); ``status[rows]`` gets each sample's first
    non-zero ``ej.Status`` code over the quantities, in their order.  ``buf(tag, shape)``: output
    arrays kept from chunk to chunk (for the whole chunk only, ``rows`` None)."""
    b = Batch(model, x, {kind for _, kind, _ in quantities}, buf if rows is None else None)
    sel = slice(None) if rows is None else rows
    own = status[sel]
    for name, kind, body in quantities:
        try:
            values, st = QUANTITIES[kind].compute(b, body)
        except Exception as e:
            raise EvalError(name, e) from e
        for suffix, v in values.items():
            if name + suffix in out:
                out[name + suffix][sel] = v
            else:
                out[name + suffix] = v
        np.copyto(own, st, where=(own == 0) & (st != 0), casting="unsafe")
