"""The counter-based random streams of sweeps, kept under their former name: this module is
``ejce_nb.sweep.streams``."""
import sys

from .sweep import streams

sys.modules[__name__] = streams
