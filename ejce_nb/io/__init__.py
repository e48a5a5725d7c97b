"""Models in and out: JSON, URDF, MJCF (through MuJoCo), OpenSim, and the generated and shipped
models (``ej.models``)."""
