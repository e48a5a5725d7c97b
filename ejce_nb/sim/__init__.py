"""Time integration of the forward dynamics: ``ej.simulate``, compiled control laws, trajectories,
their files, figures and animations.

    tableaux      Butcher tableaux and Dormand-Prince's controller
    records       the named records of the compiled loop (run parameters, per-DOF tables, carried
                  state, recordings, the coupled workspace)
    stage         the dynamics of one stage (forces, aba or the couplers' reduced dynamics, energies)
    integrators   the compiled time loop: fixed-step RKMK, semi-implicit Euler, Dormand-Prince
    control       compiled control laws (``ej.control_law``)
    prepare       the input layer of ``ej.simulate``
    driver        ``ej.simulate``: segments, threads, progress, interruption
    results       the trajectory of a run, messages, SimulationError
    status        SimulationStatus, SimulationError
    trajectory    ``ej.Trajectory``: arrays, work of the passive forces, files
    plot, animate its figures and animations (matplotlib)
"""
