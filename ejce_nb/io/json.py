"""The JSON form of a model (``Model.to_json`` / ``Model.from_json``; ``Model``'s docstring states
it for users): writing a model's document, and reading one strictly into a ``ModelBuilder`` whose
errors name the path in the file.

The Model methods ``to_dict``, ``to_json``, ``from_dict`` and ``from_json`` are defined here and
attached to the class below: reading a document needs the builder, which builds a Model, so the
model module cannot depend on this one.
"""
import contextlib
import json

import numpy as np

from ..core.joints import fn as _fn
from ..core.joints import specs as _specs
from ..core.joints.fn import check_json_numbers
from ..core.transform import Transform, check_rotation, check_vector
from ..errors import ModelError
from ..model.builder import ModelBuilder
from ..model.inertia import inertia_defect
from ..model.model import Model
from ..model.loops import LOOP_FIELDS


def _scalar(x):
    return not isinstance(x, (dict, list))


def _dumps(obj, indent, level=0):
    """json.dumps with objects and lists of objects indented, and every vector (list of numbers)
    or matrix (list of vectors) on a single line."""
    pad, inner = " " * (indent * level), " " * (indent * (level + 1))
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{json.dumps(k)}: {_dumps(v, indent, level + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and not all(_scalar(x) or (isinstance(x, list) and all(map(_scalar, x))) for x in obj):
        return "[\n" + ",\n".join(inner + _dumps(v, indent, level + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj)


def to_dict(self):
    """The model as the JSON form's document (a dict of lists and numbers)."""
    bodies = []
    # a mimic joint with armature of its own is written as a coupler (a mimic body takes none)
    as_coupler = {jk[0] for jk, _ in self.coupled_armature}
    for i in range(1, self.nbodies + 1):
        # limits and passive forces per coordinate of the whole joint (a coupler's dependent
        # coordinate has none: its entries are unbounded, zero)
        lm = self.expanded()
        qs, vs = lm.q_slice(i), lm.v_slice(i)
        b = {
            "name": self.body_names[i],
            "parent": self.body_names[self.body_parent[i]],
            "joint_name": self.joint_names[i],
            "joint": self.joint_specs[i].to_dict(),
            "placement": {"rotation": self.joint_P_rot[i].tolist(), "translation": self.joint_P_pos[i].tolist()},
            "child_placement": {"rotation": self.joint_C_rot[i].tolist(), "translation": self.joint_C_pos[i].tolist()},
            "mass": float(self.body_mass[i]),
            "com": self.body_com[i].tolist(),
            "inertia": self.body_inertia[i].tolist(),
        }
        if inertia_defect(self.body_inertia[i]) is not None:    # a URDF's, kept as written
            b["inertia_as_written"] = True
        lim = {}
        for key, arr, s in (("q_lower", lm.q_lower, qs), ("q_upper", lm.q_upper, qs),
                            ("v_limit", lm.v_limit, vs), ("effort_limit", lm.effort_limit, vs)):
            if np.any(np.isfinite(arr[s])):
                lim[key] = [float(x) if np.isfinite(x) else None for x in arr[s]]
        if lim:
            b["limits"] = lim
        dyn = {key: [float(x) for x in arr[vs]]
               for key, arr in (("damping", lm.dof_damping), ("stiffness", lm.dof_stiffness),
                                ("spring_ref", lm.dof_springref), ("armature", lm.dof_armature))
               if np.any(arr[vs] != 0.0)}
        if dyn:
            b["dynamics"] = dyn
        full = self.expanded()
        fq = slice(int(full.jnt_qadr[i]), int(full.jnt_qadr[i] + full.jnt_nq[i]))
        auto = [self.joint_names[i]] if fq.stop - fq.start == 1 else [
            f"{self.joint_names[i]}[{k}]" for k in range(fq.stop - fq.start)]
        if list(self._qnames_full[fq]) != auto:
            b["coordinate_names"] = list(self._qnames_full[fq])
        if np.any(self._q_default_full[fq] != self.joint_specs[i].neutral()):
            b["q_default"] = self._q_default_full[fq].tolist()
        if self.joint_mimic[i] >= 0 and i not in as_coupler:
            b["mimic"] = {"joint": self.joint_names[self.joint_mimic[i]],
                          "multiplier": float(self.joint_mimic_multiplier[i]),
                          "offset": float(self.joint_mimic_offset[i])}
        bodies.append(b)
    d = {"format": "ejce_nb.model", "version": 1, "gravity": self.gravity.tolist(), "bodies": bodies}
    general = [c for c in self.couplers if self.joint_mimic[c.dependent[0]] < 0 or c.dependent[0] in as_coupler]
    if general:
        d["couplers"] = [{"dependent": [self.joint_names[c.dependent[0]], c.dependent[1]],
                          "independent": [[self.joint_names[j], k] for j, k in c.independent],
                          "function": c.function.to_dict(), "scale": c.scale} for c in general]
    if self.loops:
        d["loops"] = [L.to_dict(self.body_names) for L in self.loops]
    if self.nframes:
        d["frames"] = [{"name": n, "body": self.body_names[self.frame_body[f]],
                        "placement": {"rotation": self.frame_rot[f].tolist(), "translation": self.frame_pos[f].tolist()}}
                       for f, n in enumerate(self.frame_names)]
    return d

def to_json(self, path=None, indent=1):
    """Write the model as JSON to ``path`` (or return the text when ``path`` is None).

    Numbers are written with Python's shortest round-trip repr, so ``from_json`` gives back
    bit-identical tables; vectors and matrices are kept on one line each to stay readable."""
    text = _dumps(self.to_dict(), indent)
    if path is None:
        return text
    with open(path, "w") as f:
        f.write(text + "\n")
    return None

def from_dict(cls, d, source="model"):
    """A model from the JSON form's document (errors name the path in it)."""
    return builder_from_dict(d, source).build()

def from_json(cls, path_or_text):
    """Load a model from a JSON file (or JSON text)."""
    if isinstance(path_or_text, str) and path_or_text.lstrip().startswith("{"):
        text, source = path_or_text, "model"
    else:
        source = str(path_or_text)
        try:
            with open(path_or_text) as f:
                text = f.read()
        except OSError as e:
            raise ModelError(f"{source}: cannot read model file: {e}") from None
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as e:     # JSONDecodeError, too many digits, too deep
        raise ModelError(f"{source}: not valid JSON: {e}") from None
    return cls.from_dict(d, source)


def _transform_from(d, where):
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object with 'rotation' and 'translation', got {d!r}")
    unknown = set(d) - {"rotation", "translation"}
    if unknown:
        raise ModelError(f"{where}: unknown fields {sorted(unknown, key=str)} (expected 'rotation', 'translation')")
    R = t = None
    if "rotation" in d:
        R = check_rotation(check_json_numbers(d["rotation"], f"{where}.rotation"), f"{where}.rotation")
    if "translation" in d:
        t = check_vector(check_json_numbers(d["translation"], f"{where}.translation"), f"{where}.translation")
    return Transform(R, t)


# add_body's messages read "body 'name': <field> ..."; these prefixes tell which field of the
# JSON body object is at fault, so that errors can name its path in the file
_FIELD_OF_MESSAGE = (("duplicate body name", "name"), ("body name", "name"), ("unknown parent", "parent"),
                     ("parent", "parent"), ("joint name", "joint_name"), ("duplicate joint name", "joint_name"),
                     ("mass", "mass"), ("inertia", "inertia"), ("com", "com"),
                     ("q_lower", "limits.q_lower"), ("q_upper", "limits.q_upper"), ("v_limit", "limits.v_limit"),
                     ("effort_limit", "limits.effort_limit"), ("a mimic joint", "limits"), ("mimic", "mimic"),
                     ("only a one-coordinate joint", "mimic"), ("damping", "dynamics.damping"),
                     ("stiffness", "dynamics.stiffness"), ("spring_ref", "dynamics.spring_ref"),
                     ("armature", "dynamics.armature"))

_BODY_FIELDS = {"name", "parent", "joint_name", "joint", "placement", "child_placement", "mass", "com",
                "inertia", "inertia_as_written", "limits", "mimic", "dynamics", "coordinate_names", "q_default"}
_DYNAMICS_FIELDS = {"damping", "stiffness", "spring_ref", "armature"}
_LIMIT_FIELDS = {"q_lower", "q_upper", "v_limit", "effort_limit"}
_TOP_FIELDS = {"format", "version", "gravity", "bodies", "description", "couplers", "loops", "frames"}


def _field_path(where, body_name, err):
    """Path in the file of the body field an add_body error is about (``where`` if unknown)."""
    msg = str(err)
    prefix = f"body {body_name!r}: "
    rest = msg[len(prefix):] if msg.startswith(prefix) else msg
    for start, field in _FIELD_OF_MESSAGE:
        if rest.startswith(start):
            return f"{where}.{field}: {msg}"
    return f"{where}: {msg}"


def _json_mimic(mimic, where):
    """A body's ``mimic`` field with its numbers checked: a joint name, an object
    ``{"joint", "multiplier", "offset"}`` or a list ``[joint, multiplier, offset]``."""
    if isinstance(mimic, dict):
        for key in ("multiplier", "offset"):
            if key in mimic:
                check_json_numbers(mimic[key], f"{where}.{key}", scalar=True)
    elif isinstance(mimic, list):
        for k, x in enumerate(mimic[1:3], start=1):
            check_json_numbers(x, f"{where}[{k}]", scalar=True)
    elif not isinstance(mimic, (str, int)) or isinstance(mimic, bool):
        raise ModelError(f"{where}: expected a joint name or an object {{\"joint\", \"multiplier\", "
                         f"\"offset\"}}, got {mimic!r}")
    return mimic


def _number_lists(obj, where, fields, expected, nulls):
    """A body's ``limits`` or ``dynamics`` object checked: known fields only, each a list of one
    number (or null, for a limit: none) per coordinate or velocity variable."""
    if not isinstance(obj, dict):
        raise ModelError(f"{where}: expected {expected}, got {obj!r}")
    if set(obj) - fields:
        raise ModelError(f"{where}: unknown fields {sorted(set(obj) - fields, key=str)} (expected {sorted(fields)})")
    for key, values in obj.items():
        per = "coordinate" if key.startswith("q") else "velocity" if nulls else "velocity variable"
        if not isinstance(values, list):
            raise ModelError(f"{where}.{key}: expected a list of one number{' or null' if nulls else ''} per "
                             f"{per}, got {values!r}")
        for k, x in enumerate(values):
            check_json_numbers(x, f"{where}.{key}[{k}]", scalar=True, nulls=nulls)
    return obj


def builder_from_dict(d, source="model"):
    """A ModelBuilder filled from the JSON form; errors name the path in the file
    (``source: bodies[3].joint.axis: ...``).

    The document is read strictly: numbers must be JSON numbers (not strings or booleans), a
    field that is present must hold its kind of value (null only where a limit may be absent),
    unknown fields are errors and there must be at least one body."""
    if not isinstance(d, dict):
        raise ModelError(f"{source}: top level must be an object")
    unknown = set(d) - _TOP_FIELDS
    if unknown:
        raise ModelError(f"{source}: unknown top-level fields {sorted(unknown, key=str)} (expected {sorted(_TOP_FIELDS)})")
    if d.get("format", "ejce_nb.model") != "ejce_nb.model":
        raise ModelError(f"{source}: format: expected 'ejce_nb.model', got {d['format']!r}")
    version = d.get("version", 1)
    if type(version) is not int or version != 1:
        raise ModelError(f"{source}: version: this ejce_nb reads version 1, got {version!r}")
    if not isinstance(d.get("description", ""), str):
        raise ModelError(f"{source}: description: expected a string, got {d['description']!r}")
    if "bodies" not in d or not isinstance(d["bodies"], list):
        raise ModelError(f"{source}: bodies: expected a list of body objects")
    gravity = d.get("gravity", (0.0, 0.0, -9.81))
    check_json_numbers(gravity, f"{source}: gravity")
    try:
        b = ModelBuilder(gravity=gravity)
    except ModelError as e:
        raise ModelError(f"{source}: gravity: {e}") from None
    for i, body in enumerate(d["bodies"]):
        where = f"{source}: bodies[{i}]"
        if not isinstance(body, dict):
            raise ModelError(f"{where}: expected an object, got {body!r}")
        for key in ("name", "joint"):
            if key not in body:
                raise ModelError(f"{where}.{key} is missing")
        unknown = set(body) - _BODY_FIELDS
        if unknown:
            raise ModelError(f"{where}: unknown fields {sorted(unknown, key=str)}")
        for key in ("parent", "joint_name"):
            if key in body and body[key] is None:
                raise ModelError(f"{where}.{key}: expected a name, got null (leave the field out for the default)")
        for key, scalar in (("mass", True), ("com", False), ("inertia", False)):
            if key in body:
                check_json_numbers(body[key], f"{where}.{key}", scalar=scalar)
        as_written = body.get("inertia_as_written", False)
        if not isinstance(as_written, bool):
            raise ModelError(f"{where}.inertia_as_written: expected true or false, got {as_written!r}")
        joint = _specs.from_dict(body["joint"], f"{where}.joint")
        P = _transform_from(body.get("placement", {}), f"{where}.placement")
        Cp = _transform_from(body.get("child_placement", {}), f"{where}.child_placement")
        lim = _number_lists(body.get("limits", {}), f"{where}.limits", _LIMIT_FIELDS, "an object", True)
        mimic = _json_mimic(body["mimic"], f"{where}.mimic") if "mimic" in body else None
        dyn = _number_lists(body.get("dynamics", {}), f"{where}.dynamics", _DYNAMICS_FIELDS,
                            "an object with 'damping', 'stiffness', 'spring_ref', 'armature'", False)
        try:
            b.add_body(body["name"], parent=body.get("parent", "world"), joint=joint, placement=P,
                       child_placement=Cp, mass=body.get("mass", 0.0), com=body.get("com", (0, 0, 0)),
                       inertia=body.get("inertia"), joint_name=body.get("joint_name"),
                       q_lower=lim.get("q_lower"), q_upper=lim.get("q_upper"),
                       v_limit=lim.get("v_limit"), effort_limit=lim.get("effort_limit"),
                       mimic=mimic, inertia_as_written=as_written, damping=dyn.get("damping"),
                       stiffness=dyn.get("stiffness"), spring_ref=dyn.get("spring_ref"), armature=dyn.get("armature"),
                       coordinate_names=body.get("coordinate_names"),
                       q_default=check_json_numbers(body["q_default"], f"{where}.q_default")
                       if "q_default" in body else None)
        except ModelError as e:
            raise ModelError(_field_path(where, body["name"], e)) from None
    # mimic sources may come later in the file: check them now, while the path is known
    for i, body in enumerate(b._bodies):
        if body["mimic"] is not None:
            try:
                b._resolve_mimic(body)
            except ModelError as e:
                raise ModelError(f"{source}: bodies[{i}].mimic: {e}") from None
    for where, c in _entries(d, source, "couplers", "coupler", ("dependent", "independent", "function"), ("scale",)):
        def ref(x, w):
            if isinstance(x, list) and len(x) == 2:
                return tuple(x)
            if isinstance(x, str):
                return x
            raise ModelError(f"{w}: expected a coordinate name or [joint name, coordinate index], got {x!r}")
        ind = c["independent"]
        if not isinstance(ind, list) or not ind:
            raise ModelError(f"{where}.independent: expected a non-empty list of coordinates")
        scale = c.get("scale", 1.0)
        check_json_numbers(scale, f"{where}.scale", scalar=True)
        try:
            b.add_coupler(ref(c["dependent"], f"{where}.dependent"),
                          [ref(x, f"{where}.independent[{k}]") for k, x in enumerate(ind)],
                          _fn.from_dict(c["function"], f"{where}.function"), scale)
            b._resolved_couplers()[-1]
        except ModelError as e:
            raise ModelError(f"{where}: {e}" if not str(e).startswith(where) else str(e)) from None
    required = ("name", "body_a", "body_b")
    for where, L in _entries(d, source, "loops", "loop", required, tuple(sorted(LOOP_FIELDS - set(required)))):
        joint = _specs.from_dict(L["joint"], f"{where}.joint") if "joint" in L else None
        Pa = _transform_from(L.get("placement_a", {}), f"{where}.placement_a")
        Pb = _transform_from(L.get("placement_b", {}), f"{where}.placement_b")
        with _at(where):
            b.add_loop(L["name"], L["body_a"], L["body_b"], joint=joint, placement_a=Pa, placement_b=Pb)
    for where, F in _entries(d, source, "frames", "frame", ("name", "body"), ("placement",)):
        T = _transform_from(F.get("placement", {}), f"{where}.placement")
        with _at(where):
            b.add_frame(F["name"], F["body"], placement=T)
    return b


def _entries(d, source, key, what, required, optional):
    """(path, object) of each entry of the list ``d[key]`` of a model document, each an object
    with the ``required`` fields and perhaps the ``optional`` ones, and no others."""
    items = d.get(key, [])
    if not isinstance(items, list):
        raise ModelError(f"{source}: {key}: expected a list of {what} objects")
    allowed = set(required) | set(optional)
    for i, x in enumerate(items):
        where = f"{source}: {key}[{i}]"
        if not isinstance(x, dict) or set(x) - allowed or not set(required) <= set(x):
            raise ModelError(f"{where}: expected an object with {', '.join(map(repr, required))} (and optional "
                             f"{', '.join(map(repr, optional))}), got {x!r}")
        yield where, x


@contextlib.contextmanager
def _at(where):
    """A ModelError inside names ``where`` first."""
    try:
        yield
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None


Model.to_dict = to_dict
Model.to_json = to_json
Model.from_dict = classmethod(from_dict)
Model.from_json = classmethod(from_json)
