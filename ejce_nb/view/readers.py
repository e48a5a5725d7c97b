"""Readers of visual geometry from model files: URDF ``<visual>`` elements, MuJoCo's compiled geoms
(MJCF) and OpenSim's ``attached_geometry``, each giving ``Visual`` pieces in the body frames of
the model the file was loaded as (``visual_geometry``)."""
import os

import numpy as np

from .geometry import (BODY_COLOR, Visual, _Geometry, _body_of, _find_file, _floats, _place, _pose, _primitive,
                       _quat_matrix, _read_mesh_file, _rpy, _rx, _source_root, _xyz_body)


def _urdf_visuals(model, source):
    root, base = _source_root(source)
    geo = _Geometry()
    materials = {}
    for m in root.findall("material"):
        c = m.find("color")
        if c is not None and m.get("name"):
            materials[m.get("name")] = _floats(c.get("rgba"), 4)
    for link in root.findall("link"):
        name = link.get("name")
        where = _body_of(model, name)
        for k, vis in enumerate(link.findall("visual")):
            if where is None:
                geo.notes.append(f"link {name!r}: not a body or frame of the model")
                break
            body, Tb = where
            o = vis.find("origin")
            T = Tb @ _pose(_rpy(*_floats(o.get("rpy") if o is not None else None, 3, [0, 0, 0])),
                           _floats(o.get("xyz") if o is not None else None, 3, [0, 0, 0]))
            g = vis.find("geometry")
            shape = g[0] if g is not None and len(g) else None
            rgba = None
            mat = vis.find("material")
            if mat is not None:
                c = mat.find("color")
                rgba = _floats(c.get("rgba"), 4) if c is not None else materials.get(mat.get("name"))
            label = f"{name}/visual{k}"
            try:
                if shape is None:
                    raise ValueError("no geometry")
                if shape.tag == "box":
                    v, f = _primitive("box", _floats(shape.get("size"), 3))
                    kind = "box"
                elif shape.tag == "sphere":
                    v, f = _primitive("sphere", [float(shape.get("radius"))])
                    kind = "sphere"
                elif shape.tag == "cylinder":
                    v, f = _primitive("cylinder", [float(shape.get("radius")), float(shape.get("length"))])
                    kind = "cylinder"
                elif shape.tag == "mesh":
                    path = _find_file(shape.get("filename", ""), base)
                    if path is None:
                        raise ValueError(f"mesh file {shape.get('filename')!r} not found")
                    v, f = _read_mesh_file(path)
                    v = v * np.asarray(_floats(shape.get("scale"), 3, [1, 1, 1]))
                    kind = "mesh"
                else:
                    raise ValueError(f"<{shape.tag}> is not drawn")
            except Exception as e:           # noqa: BLE001 - a file's defect: note it, draw the rest
                geo.notes.append(f"{label}: {e}")
                continue
            color = tuple(int(round(255 * x)) for x in rgba[:3]) if rgba else BODY_COLOR
            opacity = float(rgba[3]) if rgba and rgba[3] < 1 else 1.0
            geo.visuals.append(Visual(body, kind, _place(v, T), f, color, opacity, label))
    return geo


_MJ_KINDS = {0: "plane", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}


def _mjcf_visuals(model, source):
    import mujoco
    mj = (mujoco.MjModel.from_xml_string(source) if source.lstrip().startswith("<")
          else mujoco.MjModel.from_xml_path(source))
    geo = _Geometry()
    if mj.nbody != model.nbodies + 1:
        geo.notes.append(f"the MJCF file has {mj.nbody - 1} bodies, the model {model.nbodies}: no geometry drawn")
        return geo
    for g in range(mj.ngeom):
        if int(mj.geom_group[g]) > 2:
            continue
        kind = _MJ_KINDS.get(int(mj.geom_type[g]))
        size = np.asarray(mj.geom_size[g], float)
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        if kind is None:
            geo.notes.append(f"geom {name!r}: type {int(mj.geom_type[g])} is not drawn")
            continue
        if kind == "mesh":
            m = int(mj.geom_dataid[g])
            a, n = int(mj.mesh_vertadr[m]), int(mj.mesh_vertnum[m])
            fa, fn = int(mj.mesh_faceadr[m]), int(mj.mesh_facenum[m])
            v, f = np.asarray(mj.mesh_vert[a:a + n], float), np.asarray(mj.mesh_face[fa:fa + fn], np.int32)
        elif kind == "plane":
            v, f = _primitive("plane", [s if s > 0 else 1.0 for s in size[:2]])
        elif kind == "box":
            v, f = _primitive("box", 2 * size)
        elif kind in ("cylinder", "capsule"):
            v, f = _primitive(kind, (size[0], 2 * size[1]))
        else:
            v, f = _primitive(kind, size if kind == "ellipsoid" else size[:1])
        T = _pose(_quat_matrix(*mj.geom_quat[g]), mj.geom_pos[g])
        rgba = np.asarray(mj.geom_rgba[g], float)
        geo.visuals.append(Visual(int(mj.geom_bodyid[g]), kind, _place(v, T), f,
                                  tuple(int(round(255 * x)) for x in rgba[:3]), float(min(rgba[3], 1.0)) or 1.0,
                                  name))
    return geo


def _osim_visuals(model, source):
    root, base = _source_root(source)
    geo = _Geometry()
    dirs = ("Geometry", "geometry", os.path.join("..", "Geometry"))
    frames = {}                               # PhysicalOffsetFrame name -> (parent name, 4x4)
    for pof in root.iter("PhysicalOffsetFrame"):
        parent = (pof.findtext("socket_parent") or "").strip().rsplit("/", 1)[-1]
        T = _pose(_xyz_body(*_floats(pof.findtext("orientation"), 3, [0, 0, 0])),
                  _floats(pof.findtext("translation"), 3, [0, 0, 0]))
        frames[pof.get("name")] = (parent, T)
    owners = list(root.iter("Body")) + list(root.iter("Ground"))
    for owner in owners:
        oname = owner.get("name") or "ground"
        for ag in owner.findall("attached_geometry"):
            for k, gel in enumerate(ag):
                label = f"{oname}/{gel.get('name') or gel.tag + str(k)}"
                sock = (gel.findtext("socket_frame") or "..").strip()
                fname = sock.rsplit("/", 1)[-1]
                T = np.eye(4)
                holder = oname
                if sock not in ("..", "") and fname in frames:
                    holder, T = frames[fname]
                where = _body_of(model, holder) if holder != "ground" else (0, np.eye(4))
                if where is None:
                    geo.notes.append(f"{label}: its body is not in the model")
                    continue
                scale = _floats(gel.findtext("scale_factors"), 3, [1, 1, 1])
                try:
                    if gel.tag == "Mesh":
                        fn = (gel.findtext("mesh_file") or "").strip()
                        path = _find_file(fn, base, dirs)
                        if path is None:
                            raise ValueError(f"mesh file {fn!r} not found beside the model or in its Geometry folder")
                        v, f = _read_mesh_file(path)
                        kind = "mesh"
                    elif gel.tag == "Brick":
                        v, f = _primitive("box", 2 * np.asarray(_floats(gel.findtext("half_lengths"), 3)))
                        kind = "box"
                    elif gel.tag == "Sphere":
                        v, f = _primitive("sphere", [float(gel.findtext("radius"))])
                        kind = "sphere"
                    elif gel.tag == "Ellipsoid":
                        v, f = _primitive("ellipsoid", _floats(gel.findtext("radii"), 3))
                        kind = "ellipsoid"
                    elif gel.tag == "Cylinder":
                        # OpenSim's cylinder is along y
                        v, f = _primitive("cylinder", [float(gel.findtext("radius")),
                                                       2 * float(gel.findtext("half_height"))])
                        v = v @ _rx(-np.pi / 2).T
                        kind = "cylinder"
                    else:
                        raise ValueError(f"<{gel.tag}> is not drawn")
                except Exception as e:       # noqa: BLE001 - a file's defect: note it, draw the rest
                    geo.notes.append(f"{label}: {e}")
                    continue
                color = BODY_COLOR
                app = gel.find("Appearance")
                if app is not None and app.findtext("color"):
                    color = tuple(int(round(255 * x)) for x in _floats(app.findtext("color"), 3))
                opacity = float(app.findtext("opacity") or 1.0) if app is not None else 1.0
                body, Tb = where
                geo.visuals.append(Visual(body, kind, _place(v, Tb @ T, scale), f, color, opacity or 1.0, label))
    return geo


def visual_geometry(model, source):
    """The visual geometry of ``model``'s bodies in the model file ``source`` (a path to a URDF,
    MJCF ``.xml`` or OpenSim ``.osim`` file, or such a file's text): ``(visuals, notes)``, a list
    of ``Visual`` and a list of strings saying what was not drawn and why. Other sources (JSON
    files, ``None``) have no geometry: ``([], [])``."""
    if source is None:
        return [], []
    source = os.fspath(source)
    text = source.lstrip().startswith("<")
    low = source.lower()
    if text:
        head = source[:2000]
        kind = "urdf" if "<robot" in head else "mjcf" if "<mujoco" in head else "osim" if "<OpenSim" in head else None
    else:
        kind = {".urdf": "urdf", ".xml": "mjcf", ".osim": "osim"}.get(os.path.splitext(low)[1])
    if kind is None:
        return [], []
    geo = {"urdf": _urdf_visuals, "mjcf": _mjcf_visuals, "osim": _osim_visuals}[kind](model, source)
    return geo.visuals, geo.notes
