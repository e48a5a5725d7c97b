"""The version of ejce_nb."""
__version__ = "0.1.0"
