"""XML documents as ``xml.etree`` trees, read by expat *without* namespace processing.

A colon is a legal character of an XML name: OpenSim writes element names with C++ scopes
(``HuntCrossleyForce::ContactParametersSet``) and URDF files use prefixes such as ``drake:`` or
``xacro:`` that they may not declare.  The engines that read those files (OpenSim, urdfdom,
Drake) do not process namespaces, and neither does ``parse``; ElementTree's own parser does and
refuses such names.  Each element knows the line it starts on (``line_of``)."""
import xml.etree.ElementTree as ET
from xml.parsers import expat


class Element(ET.Element):
    """An element that knows the line it starts on (``line``; None when made in code)."""
    line = None


class XMLError(ValueError):
    """The document is not well-formed XML: ``reason``, ``line``, ``column``."""

    def __init__(self, reason, line=None, column=None):
        where = f": line {line}, column {column}" if line is not None else ""
        super().__init__(f"{reason}{where}")
        self.reason, self.line, self.column = reason, line, column


def parse(data):
    """The root element of ``data`` (bytes, read with the encoding the document declares, or str,
    read as text); ``XMLError`` when it is not well-formed."""
    tb = ET.TreeBuilder(element_factory=Element)
    p = expat.ParserCreate()
    p.buffer_text = True

    def start(tag, attrs):
        tb.start(tag, attrs).line = p.CurrentLineNumber

    p.StartElementHandler = start
    p.EndElementHandler = tb.end
    p.CharacterDataHandler = tb.data
    try:
        p.Parse(data, True)
    except expat.ExpatError as e:
        raise XMLError(expat.ErrorString(e.code), e.lineno, e.offset) from None
    try:
        return tb.close()
    except AssertionError:
        raise XMLError("the document ends inside an element") from None


def line_of(el):
    """`` (line N)`` for an element read from a file, else ''."""
    n = getattr(el, "line", None)
    return f" (line {n})" if n else ""
