"""
Limits in a real closed loop (Panda controller and simulator processes): the reference asks
the four big joints for 2 rad around the start pose at 0.2 Hz, beyond the URDF joint limits,
and for effort changes faster than `limits.effort_rate` allows; `limits.effort` is the URDF
default. (Effort limits below what gravity needs, or saturated light wrists, make the arm
fall or oscillate, worse with the late ticks of a loaded machine, until the simulated arm,
which has no joint stops, leaves the accepted range: then the controller rightly refuses its
states and sends the safe command. Saturation is tested tick by tick in test_safety_loop.)
The simulated arm has no gravity: it has no joint stops either, and under gravity with zero
input it falls out of the accepted range while DDS discovery between the two processes
completes on a loaded machine. The controller still compensates the model's gravity, a
constant disturbance for the plant, which feedback absorbs.

Every command received is finite and within the URDF effort limits; every reference on
`~/state` lies within the URDF joint limits; consecutive ticks change the effort by at most
`limits.effort_rate` times the period. A tick missing from the record (the subscription
may drop one under load) shows as a gap of more than 1.5 periods; the bound then allows one
step per period elapsed, plus one.
"""

import math
import time

import numpy as np
import pytest

from continuum_ctrl.params.launch_description import config_path
from continuum_ctrl.models import load_model
from continuum_ctrl.runtime.controller_runtime import CONTROLLING
from support.ros_nodes import params_file, running
from support.safety_tools import Timeline, within

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

RATE = 2000.0                        # limits.effort_rate, N m/s
PERIOD = 1.0 / 500.0


def test_limits_rate_limit_and_joint_limits_on_every_command(tmp_path):
    model = load_model(config_path('panda.yaml'))
    (low, high), effort = model.joint_limits(), model.effort_limits()    # from the URDF
    # the gains the file had (kp 100, no integral): at its kp 900 and ki_inertial the
    # rate-limited loop on this unreachable reference throws the arm out of range
    path = params_file(tmp_path, 'panda.yaml', continuum_controller={
        'reference': {'amplitude': [2.0, 2.0, 2.0, 2.0, 0.1, 0.1, 0.1], 'frequency': [0.2],
                      'blend_time': 0.0},
        'gains': {'kp': [100.0] * 7, 'kd': [20.0] * 7, 'ki_inertial': [0.0] * 7},
        'adapt': {'time_constant': 0.0},
        'limits': {'effort_rate': [RATE]}}, continuum_simulator={
        'model': {'gravity': [0.0, 0.0, 0.0]}})
    with running(tmp_path, path) as (rec, processes):
        timeline = Timeline(rec)
        rec.run(4.0)
        # a loaded machine may start control late or hold it up: at most 30 s for 1200 ticks
        end = time.monotonic() + 30.0
        while sum(row[1] in CONTROLLING for row in timeline.rows) < 1200 and \
                time.monotonic() < end:
            rec.run(1.0)
        assert all(p.poll() is None for p in processes)
    commands = np.array([c for _, c in rec.commands])
    assert len(commands) > 1000 and within(commands, -effort, effort)
    rows = [row for row in timeline.rows if row[1] in CONTROLLING]
    assert len(rows) > 1000
    step = RATE * PERIOD
    saturated = limited = clamped = 0
    for (t0, _, _, _, e0), (t1, _, q_des, _, e1) in zip(rows, rows[1:]):
        assert within(q_des, low, high)
        ticks = 1 if t1 - t0 <= 1.5 * PERIOD else math.ceil((t1 - t0) / PERIOD) + 1
        assert np.all(np.abs(e1 - e0) <= ticks * step * (1 + 1e-9)), (t1 - t0, e1 - e0)
        saturated += np.any(np.abs(e1) >= effort - 1e-9)
        limited += np.any(np.abs(e1 - e0) >= step - 1e-9)
        clamped += np.any((q_des == low) | (q_des == high))
    # the rate limit and the joint limits were reached many times, so the checks above were
    # exercised; the URDF effort limits only now and then (tested tick by tick without ROS)
    print(f'\nlimits: {len(rows)} ticks, {limited} rate-limited, {clamped} with a clamped '
          f'reference, {saturated} at an effort limit')
    assert limited > 20 and clamped > 20, (saturated, limited, clamped)
