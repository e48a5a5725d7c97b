"""The named records the compiled time loop works on (namedtuples of arrays and numbers: Numba
passes them as flat arguments, caches kernels that take them, and reads their fields by name).

* ``SimParams``: what is fixed for a run (the method's tableau, step, tolerances, recording
  times, joint-force inputs, control law, external wrenches);
* ``DofTables``: per velocity variable, the passive forces (damping, springs, joint limits) and
  where it lives (its coordinate, its joint);
* ``Carry``: what each trajectory carries from one compiled segment to the next (its state, step
  counters, step size, status and where it stopped), one row per trajectory;
* ``Recording``: the recorded states and energies, (T, B, ...);
* ``Coupled`` (``couplers.Coupled``): a model with couplers, the couplers' tables and one chunk's
  workspace for the reduced dynamics on the expansion (``stage.coupled_accel``);
* ``Actuated`` (``actuate``): a model with actuation (``model.actuation``), its packed tables, the
  controls of the run, the activations carried and recorded, and one chunk's scratch;
* ``Closed``: a model with loop closures, the closure kernel's tables and one chunk's workspace
  for the constrained dynamics and the projection onto the loop constraints (``closed``).
"""
from collections import namedtuple

import numpy as np

# how tau is given: one row held constant, one row per step, one row per recorded time
TAU_CONST, TAU_STEP, TAU_INTERVAL = 0, 1, 2
# how ctrl is given: one row held constant, one row per step
CTRL_CONST, CTRL_STEP = 0, 1

SimParams = namedtuple("SimParams", [
    "kind", "stages", "taumode", "law", "passive", "nsteps",       # integers (law: a C address, 0: none)
    "dt", "tend", "rtol", "atol", "hmax", "emax",                  # floats (emax 0: from the initial state)
    "A", "b", "c", "e", "p",                                       # the tableau, dopri5's error and extension
    "rstep", "trec",                                               # steps and times of the records
    "tau", "law_params", "f_ext",                                  # (rows, 1 or B, nv), (1 or B, np), wrenches
    "full"])                                                       # the joint paths compiled (``python_layer.paths``)

DofTables = namedtuple("DofTables", [
    "damping", "stiffness", "spring_ref",     # (nv,)
    "limits",                                 # (nv, 4): lower, upper, stiffness, damping of the limits' law
    "dof_coord",                              # (nv,): the coordinate whose rate it is, -1 for none
    "dof_joint",                              # (nv,): its joint
    "coord_joint"])                           # (nq,): each coordinate's joint

Carry = namedtuple("Carry", [
    "q", "v",                 # (B, nq), (B, nv): the state at the end of the last segment
    "a",                      # (B, nv): dopri5's first-stage acceleration (FSAL)
    "fq", "fv",               # (B, nq), (B, nv): the state where a trajectory failed (NaN if none)
    "step", "next",           # steps taken (dopri5: accepted), the next record to write
    "status", "joint",        # SimulationStatus (0: running or done), the joint of the event (-1: none)
    "failstep",               # the step at which it stopped
    "nfev", "nrejected",      # dopri5's function evaluations and rejected steps
    "started", "have_k1",     # bools: the first records are written; "a" holds the first stage
    "rejected", "done",       # the last step was rejected; the trajectory reached t_final
    "t", "h", "errold",       # dopri5: time, next step size, the controller's memory
    "emax",                   # the energy threshold
    "tfail", "hfail", "efail"])   # time, step size and energy of the event that stopped it

Recording = namedtuple("Recording", "q v kinetic potential")


def new_carry(q0, v0, h0):
    """The carried state of a run from initial states q0 (B, nq), v0 (B, nv), first step h0."""
    n, nq = q0.shape
    nv = v0.shape[1]

    def ints():
        return np.zeros(n, dtype=np.int64)

    def flags():
        return np.zeros(n, dtype=np.bool_)

    def floats(x=0.0):
        return np.full(n, x)
    return Carry(q0.copy(), v0.copy(), np.zeros((n, nv)), np.full((n, nq), np.nan), np.full((n, nv), np.nan),
                 ints(), ints(), ints(), ints(), ints(), ints(), ints(), flags(), flags(), flags(), flags(),
                 floats(), floats(h0), floats(1e-4), floats(), floats(), floats(), floats())


def running(cr):
    """Which trajectories have neither stopped nor finished."""
    return (cr.status == 0) & ~cr.done


def new_recording(nrec, n, nq, nv):
    return Recording(np.full((nrec, n, nq), np.nan), np.full((nrec, n, nv), np.nan), np.full((nrec, n), np.nan),
                     np.full((nrec, n), np.nan))


Closed = namedtuple("Closed", [
    "cmb", "cw",              # the closure tree's model buffer and one-state workspace
    "full", "cfull",          # the joint paths compiled (``python_layer.paths``) of the tree and the closure tree
    "LI", "LF", "qn", "OFF",  # the kernel's tables (``constrained.prepare``)
    "lstsq", "tol", "max_iter",   # redundant="lstsq"; the projection's tolerance and iterations
    "ws",                     # one state's workspace of the kernel
    "tauc", "wrench", "qc", "sc", "dvel",   # its other outputs
    "zt", "qa",               # zero joint forces (nv), the projection's accelerations (unused)
    "q0", "qt", "dq",         # the projection's scratch (nq, nq, nv)
    "cp",                     # None, or with couplers their ``couplers.Coupled`` record (the kernel reads its
                              # tables, the energies expand into its arrays)
    "mbc"])                   # the integrators' chart (``driver._chart``; the model's buffer without couplers)

Actuated = namedtuple("Actuated", [
    "ab", "ib", "eb",         # the actuation's packed tables (``Actuation.packed``), the elements' (or None)
    "ctrl", "cmode",          # (rows, 1 or B, nu) controls, held over a step; CTRL_CONST or CTRL_STEP
    "actlim",                 # (na, 3): lower and upper clamp (-inf, inf where not actlimited) and the
                              # time constant of a filterexact activation (0: Euler update)
    "act", "rec_act",         # (B, na) the activations carried between segments; (T, B, na) recorded
    "rec_force", "foff",      # (T, B, nu) the actuator forces recorded ((0, B, nu): none); their offset in work
    "nuf",                    # how many of them the work holds (MuJoCo's actuators; the elements' stay NaN)
    "at", "ax", "astage",     # (na,) scratch: the step's start, its end, the stage's activations
    "KA",                     # (7, na): the stages' act_dot
    "work", "qfrc",           # the kernel's scratch (``Actuation.work_size``), its joint forces (nv,)
    "idx",                    # (2,) int64: the row and column of ``ctrl`` of the current step
    "ka0", "a0"])             # dopri5: (B, na) each trajectory's first-stage act_dot carried between
                              # segments (FSAL); (na,) scratch: the step's start while it is recorded
