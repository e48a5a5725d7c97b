"""The compiled views of an Actuation's packed buffers (``tables``): generated from
``tables.TABLES`` and ``tables.WORK`` by ``python -m ejce_nb.actuation.tables``; do not edit."""
import collections

import numpy as np

from .._jit import jit
from ..model.layout import rows, vec

ActView = collections.namedtuple("ActView", ['actuator_trntype', 'actuator_dyntype', 'actuator_gaintype', 'actuator_biastype', 'actuator_trnid', 'actuator_ctrllimited', 'actuator_forcelimited', 'actuator_actlimited', 'actuator_actearly', 'actuator_actadr', 'actuator_actnum', 'actuator_jnttype', 'actuator_qadr', 'actuator_dofadr', 'tendon_adr', 'tendon_num', 'wrap_type', 'wrap_objid', 'wrap_qadr', 'wrap_dofadr', 'wrap_geombody', 'site_bodyid', 'dof_actgravcomp', 'dof_actfrclimited', 'opt_flags', 'actuator_gear', 'actuator_dynprm', 'actuator_gainprm', 'actuator_biasprm', 'actuator_ctrlrange', 'actuator_forcerange', 'actuator_actrange', 'actuator_lengthrange', 'actuator_acc0', 'actuator_cranklength', 'tendon_stiffness', 'tendon_damping', 'tendon_lengthspring', 'wrap_prm', 'wrap_geompos', 'wrap_geommat', 'wrap_radius', 'site_pos', 'site_mat', 'body_gravcomp', 'body_ipos', 'dof_actfrcrange', 'opt_timestep'])
WorkView = collections.namedtuple("WorkView", ['ten_length', 'ten_velocity', 'ten_J', 'actuator_length', 'actuator_velocity', 'actuator_moment', 'actuator_force', 'ctrl', 'qfrc_actuator', 'qfrc_tendon', 'qfrc_gravcomp', 'site_xpos', 'site_xmat', 'wrap_xpos', 'wrap_xmat', 'wsc'])


@jit(forceinline=True)
def act_view(ab, ib):
    """The tables of ``tables.TABLES`` in the packed buffers (ab float64, ib int64)."""
    nu = ib[0]
    na = ib[1]
    nt = ib[2]
    nwrap = ib[3]
    nsite = ib[4]
    nv = ib[5]
    n1 = ib[6]
    return ActView(
        vec(ib, ib[9], nu),
        vec(ib, ib[10], nu),
        vec(ib, ib[11], nu),
        vec(ib, ib[12], nu),
        rows(ib, ib[13], nu, 2),
        vec(ib, ib[14], nu),
        vec(ib, ib[15], nu),
        vec(ib, ib[16], nu),
        vec(ib, ib[17], nu),
        vec(ib, ib[18], nu),
        vec(ib, ib[19], nu),
        vec(ib, ib[20], nu),
        vec(ib, ib[21], nu),
        vec(ib, ib[22], nu),
        vec(ib, ib[23], nt),
        vec(ib, ib[24], nt),
        vec(ib, ib[25], nwrap),
        vec(ib, ib[26], nwrap),
        vec(ib, ib[27], nwrap),
        vec(ib, ib[28], nwrap),
        vec(ib, ib[29], nwrap),
        vec(ib, ib[30], nsite),
        vec(ib, ib[31], nv),
        vec(ib, ib[32], nv),
        vec(ib, ib[33], 8),
        rows(ab, ib[34], nu, 6),
        rows(ab, ib[35], nu, 10),
        rows(ab, ib[36], nu, 10),
        rows(ab, ib[37], nu, 10),
        rows(ab, ib[38], nu, 2),
        rows(ab, ib[39], nu, 2),
        rows(ab, ib[40], nu, 2),
        rows(ab, ib[41], nu, 2),
        vec(ab, ib[42], nu),
        vec(ab, ib[43], nu),
        vec(ab, ib[44], nt),
        vec(ab, ib[45], nt),
        rows(ab, ib[46], nt, 2),
        vec(ab, ib[47], nwrap),
        rows(ab, ib[48], nwrap, 3),
        rows(ab, ib[49], nwrap, 9),
        vec(ab, ib[50], nwrap),
        rows(ab, ib[51], nsite, 3),
        rows(ab, ib[52], nsite, 9),
        vec(ab, ib[53], n1),
        rows(ab, ib[54], n1, 3),
        rows(ab, ib[55], nv, 2),
        vec(ab, ib[56], 1),
    )


@jit(forceinline=True)
def work_view(ib, work):
    """The tables of ``tables.WORK`` in one state's scratch ``work``."""
    nu = ib[0]
    na = ib[1]
    nt = ib[2]
    nwrap = ib[3]
    nsite = ib[4]
    nv = ib[5]
    n1 = ib[6]
    return WorkView(
        vec(work, ib[57], nt),
        vec(work, ib[58], nt),
        rows(work, ib[59], nt, nv),
        vec(work, ib[60], nu),
        vec(work, ib[61], nu),
        rows(work, ib[62], nu, nv),
        vec(work, ib[63], nu),
        vec(work, ib[64], nu),
        vec(work, ib[65], nv),
        vec(work, ib[66], nv),
        vec(work, ib[67], nv),
        rows(work, ib[68], nsite, 3),
        rows(work, ib[69], nsite, 9),
        rows(work, ib[70], nwrap, 3),
        rows(work, ib[71], nwrap, 9),
        vec(work, ib[72], 16),
    )
