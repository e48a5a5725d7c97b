"""``python -m ejce_nb.view MODEL [--traj FILE] ...``: the ``ejce-nb view`` command alone."""
import sys

from .command import cli_view

sys.exit(cli_view())
