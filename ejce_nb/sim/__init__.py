"""Time integration of the forward dynamics: ``ej.simulate``, compiled control laws, trajectories
and their figures."""
