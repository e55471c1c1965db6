"""
Compiled tip frames of the sections on the model's workspace: pose, Jacobian and its rate.

`tip_pose` is `kinematics.tip_frame` on the workspace block; `tip_frame_derivative` adds the
exact time derivative ``Jdot`` of its Jacobian, from the chain's q-derivatives, which
`task_step.task_step` reads through `derivative_from_chain`.
"""

from continuum_ctrl.models.continuum.data import layout
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.models.continuum.kinematics import (chain, cx, frame_from_chain,
                                                        rotate_tensor, section_point, tip_frame,
                                                        WITH_DERIVATIVES)
from continuum_ctrl.models.continuum.terms import cumulative_rates, point_rate


@compiled()
def tip_pose(arm, memory, q, sec, T, J):
    """`kinematics.tip_frame` on the model's workspace block `memory` (see `data.layout`)."""
    data = layout(memory, arm.length.shape[0])[1]
    tip_frame(arm, q, data.chain, data.section, sec, T, J)


@compiled()
def tip_frame_derivative(arm, memory, q, qd, sec, T, J, Jdot):
    """
    Fill section `sec`'s tip pose ``T``, Jacobian ``J`` and ``Jdot = dJ/dt`` (6, 3n) at (q, qd).

    `kinematics.tip_frame`'s ``T`` and ``J``, and their exact time derivative along ``qd``
    from the chain's q-derivatives. `memory`: the model's workspace block.
    """
    data = layout(memory, arm.length.shape[0])[1]
    chain(arm, q, data.chain, data.section, WITH_DERIVATIVES)
    frame_from_chain(data.chain, sec, T, J)
    derivative_from_chain(arm, data, q, qd, sec, J, Jdot)


@compiled()
def derivative_from_chain(arm, data, q, qd, sec, J, Jdot):
    """
    Fill ``Jdot`` (6, 3n) of section `sec`'s tip frame from a chain filled with derivatives.

    Linear column l: the rate of the tip's point-Jacobian column (`terms.point_rate`);
    angular: ``Wc[s_l] x om_l + sum_b dom[l, b] qd_(3 s_l + b)``, base axes
    (``LOCAL_WORLD_ALIGNED``); the columns of later sections are zero. `J`: the frame's
    Jacobian (`kinematics.frame_from_chain`).
    """
    n = arm.length.shape[0]
    ch, work, body = data.chain, data.section, data.body
    Wc, P, Jd, o = body.Wc, body.J, body.Jd, ch.tip_o[sec]
    cumulative_rates(ch.om, qd, n, Wc)
    N = 3 * sec + 3
    for L in range(N):
        for c in range(3):
            P[L, c] = J[c, L]
    section_point(arm.length[sec], arm.radius[sec], q[3 * sec:N], 1.0, body.p, body.dp,
                  body.d2p, work)
    rotate_tensor(ch.Rb[sec], body.d2p, body.d2pw)
    point_rate(sec, o, P, ch.om, ch.dom, ch.dv0, body.d2pw, qd, Wc, Jd)
    for L in range(Jdot.shape[1]):
        if L >= N:
            for c in range(6):
                Jdot[c, L] = 0.0
            continue
        s = L // 3
        w = cx(Wc[s, 0], Wc[s, 1], Wc[s, 2], ch.om[L, 0], ch.om[L, 1], ch.om[L, 2])
        for c in range(3):
            r = w[c]
            for b in range(3):
                r += ch.dom[L, b, c] * qd[3 * s + b]
            Jdot[c, L] = Jd[L, c]
            Jdot[3 + c, L] = r
