"""``ejce-nb view MODEL [--traj FILE]``: the viewer's command (``python -m ejce_nb.view`` runs it
alone)."""
import os

from .viewer import _require_viser, view


def add_parser(subparsers, parents=()):
    """Add the ``view`` command to the ``ejce-nb`` parser's subparsers; returns its parser."""
    p = subparsers.add_parser("view", parents=list(parents), help="show a model (and a trajectory) in 3-D in the "
                              "browser (Viser)",
                              description="Serve a 3-D view of a model in the browser: its bodies' frames, a stick "
                              "figure and the file's visual geometry; a time slider and a play button over a "
                              "trajectory, or a slider per coordinate. Open the printed address; over SSH, forward "
                              "the port (ssh -L PORT:localhost:PORT host). Ctrl-C stops it.")
    p.add_argument("model", help="shipped model name, .json, .urdf, .xml (MJCF) or .osim file")
    p.add_argument("--traj", metavar="FILE.npz", help="a trajectory written by ejce-nb simulate --out FILE.npz "
                   "(Trajectory.save)")
    p.add_argument("--sample", type=int, default=0, help="the trajectory of a batch shown first (default 0)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; the next free one if taken)")
    p.add_argument("--no-geometry", action="store_true", help="frames and stick figure only")
    return p


def view_command(args, block=True):
    """Run ``ejce-nb view`` with the parsed ``args``: serve until Ctrl-C and return the exit
    status 0; with ``block=False``, return the running ``Viewer`` instead."""
    from ..cli import load_model
    from ..io import zoo
    _require_viser()
    model = load_model(args)
    name = args.model
    source = name if os.path.isfile(name) else zoo.shipped_path(name)
    v = view(model, args.traj, source=source if os.path.isfile(source) else None, host=args.host,
             port=args.port, sample=args.sample, geometry=not args.no_geometry, block=False)
    print(f"ejce-nb view: {model.nbodies} bodies, {len(v.visuals)} visual geometries; open {v.url} "
          "(Ctrl-C stops)", flush=True)
    if not block:
        return v
    v.wait()
    return 0


def cli_view(argv=None):
    """``python -m ejce_nb.view MODEL [--traj FILE] ...``: the ``ejce-nb view`` command alone."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="ejce-nb")
    sub = parser.add_subparsers(dest="cmd", required=True)
    opts = argparse.ArgumentParser(add_help=False)
    opts.add_argument("--joints", action="append", metavar="FILE.py")
    opts.add_argument("--floating-base", default=None, metavar="PARAM")
    add_parser(sub, parents=[opts])
    args = parser.parse_args(["view"] + list(sys.argv[1:] if argv is None else argv))
    try:
        return view_command(args)
    except (ValueError, OSError, ImportError) as e:
        print(f"ejce-nb: error: {e}", file=sys.stderr)
        return 2
