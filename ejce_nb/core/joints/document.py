"""What joint specs and coordinate functions share as parts of a model document: the check that
numbers stand where numbers belong (``check_json_numbers``), and equality and ``repr`` by the
document form ``to_dict()``."""
import numpy as np

from ...errors import ModelError


_JSON_TYPES = ((bool, "a boolean"), (str, "a string"), (type(None), "null"), (dict, "an object"),
               (list, "an array"))


def _json_kind(x):
    return next((name for t, name in _JSON_TYPES if isinstance(x, t)), type(x).__name__)


def _is_number(x):
    return (isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_)))


def check_json_numbers(value, where, scalar=False, nulls=False):
    """Refuse anything in a model document that is not a number where numbers belong.

    ``value`` must be a number (int or float; not a boolean, string or null) or, unless
    ``scalar``, a list (nested to any depth) of numbers; ``nulls`` also allows null leaves
    (limits: no limit).  numpy numbers and numeric arrays pass, so that documents built in Python
    may hold them.  Shapes and values are the constructors' business; this only keeps strings
    such as ``"1.0"`` and booleans (which numpy would silently convert) out.  Errors name the
    offending element: ``bodies[2].com[1]: expected a number, got '0.5' (a string)``."""
    stack = [(value, where)]
    while stack:
        x, w = stack.pop()
        if _is_number(x):
            if isinstance(x, (int, np.integer)):
                try:
                    float(x)
                except OverflowError:
                    raise ModelError(f"{w}: the integer {x} is too large for a float") from None
            continue
        if x is None and nulls:
            continue
        if isinstance(x, np.ndarray) and x.dtype.kind in "iuf" and not (scalar and x.ndim):
            continue
        if isinstance(x, (list, tuple)) and not scalar:
            stack.extend((v, f"{w}[{k}]") for k, v in reversed(list(enumerate(x))))
            continue
        what = "a number" if scalar else "a number or a list of numbers"
        if nulls:
            what += " (or null)"
        text = repr(x) if len(repr(x)) <= 60 else repr(x)[:57] + "..."
        raise ModelError(f"{w}: expected {what}, got {text} ({_json_kind(x)})")
    return value


def document_kind(d, where):
    """The ``"type"`` of the document object ``d`` (a joint or a function); errors name ``where``."""
    if not isinstance(d, dict):
        raise ModelError(f"{where}: expected an object with a 'type', got {d!r}")
    if "type" not in d:
        raise ModelError(f"{where}.type is missing")
    return d["type"]


class ByDict:
    """Equality and ``repr`` by ``to_dict()``: two objects are equal when they are of one type and
    their document forms are equal; the ``repr`` reads ``Kind(field=value, ...)``."""

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __repr__(self):
        d = self.to_dict()
        kind = d.pop("type")
        return f"{kind}({', '.join(f'{k}={v!r}' for k, v in d.items())})"
