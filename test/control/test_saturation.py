"""The loop's learning held through a saturation episode (control/saturation.py), ROS-free."""

import numpy as np

from continuum_ctrl.apps.node_pair import controller_runtime

CONFIG = 'continuum_3section.yaml'
#: the file's limits.saturation_hold (s), _error (m) and _gain
HOLD, ERROR, GAIN = 0.3, 0.003, 0.1


def at_bound(loop, error):
    """Put PMA 0 at its upper effort bound `error` m from its reference, the rest inside."""
    low, high = loop._effort_range
    loop.effort[:] = 0.5 * (low + high)
    loop.effort[0] = high[0]
    loop.q_des[:] = 0.01
    loop.q[:] = loop.q_des
    loop.q[0] += error


def test_learning_is_held_at_a_bound_far_off_and_given_back_after_the_hold():
    """
    Gains and gate zeroed, the law's softened, in place from a tick at a bound far off.

    From the tick at a bound 4.5 mm off until `hold` s after the last such tick: the
    integral's gains and the observer's gate zero, the law's `kp` times `gain`, `kd` times
    its square root (the arrays the compiled ticks read).

    At a bound within the error (tracking, a PMA vented at activation) or with the reference at
    a joint limit (resting on a stop) nothing is held; new
    settings during a hold give the gains and the gate back to the arrays that had them.
    """
    loop = controller_runtime(CONFIG).loop
    guard, integral, observer = loop.saturation, loop.integral, loop.observer
    assert (guard.hold, guard.error, guard.gain) == (HOLD, ERROR, GAIN)
    ki, gate = integral.ki.copy(), observer.gate.copy()
    kp, kd = loop.law.kp.copy(), loop.law.kd.copy()
    assert np.all(ki > 0.0) and np.all(gate > 0.0)
    at_bound(loop, 0.5 * ERROR)
    guard.watch(1.0)
    loop.q_des[0] = loop.low[0]                 # at its stop: the integral's own anti-windup
    loop.q[0] = loop.q_des[0] + 2.0 * ERROR
    guard.watch(1.0)
    assert guard.episodes == 0 and np.all(integral.ki == ki)
    at_bound(loop, -1.5 * ERROR)
    guard.watch(1.0)
    assert guard.episodes == 1 and not np.any(integral.ki) and not np.any(observer.gate)
    np.testing.assert_allclose(loop.law.kp, GAIN * kp, rtol=1e-15)
    np.testing.assert_allclose(loop.law.kd, np.sqrt(GAIN) * kd, rtol=1e-15)
    assert loop.fused._rest[0][0] is loop.law.kp          # what the fused tick reads
    at_bound(loop, 0.0)
    loop.effort[0] = 0.0                        # the arm back: inside the bounds
    guard.watch(1.0 + HOLD - 0.01)
    assert not np.any(integral.ki)
    guard.watch(1.0 + HOLD)
    assert np.all(integral.ki == ki) and np.all(observer.gate == gate)
    assert np.all(loop.law.kp == kp) and np.all(loop.law.kd == kd)
    at_bound(loop, 2.0 * ERROR)
    guard.watch(2.0)
    assert guard.episodes == 2 and not np.any(observer.gate)
    loop.configure(loop.settings)
    assert np.all(loop.integral.ki == ki) and np.all(loop.observer.gate == gate)
    assert np.all(loop.law.kp == kp) and np.all(loop.law.kd == kd)
