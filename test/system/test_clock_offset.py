"""
A driver whose clock disagrees with the controller's (docs/two-hosts.md, clocks).

A fault-injecting node stands in for a driver on another host: it publishes valid joint
states of the planar 2R arm, stamped by a clock `offset` s off the controller's. Beyond
`stamp_tolerance` (0.25 s by default) either way every state is rejected and counted
(`rejected_stamp`): the controller does not start, or, started, turns stale and sends its
safe command. A few milliseconds behind are taken.
"""

import time

import numpy as np
import pytest

from continuum_ctrl.runtime.controller_runtime import CONTROLLING
from support.ros_nodes import params_file, running, START_TIMEOUT
from support.safety_tools import joint_state, latest, state_publisher

pytestmark = [pytest.mark.ros, pytest.mark.slow]

NAMES = ['joint1', 'joint2']
#: s; the driver's clock against the controller's: beyond the tolerance, and a near one
FAR_OFF, NEAR = 0.5, -0.005
#: s a rejected stream is fed before it is judged: many times `state_timeout` (0.1 s)
FEED = 1.5


def feed(rec, pub, offset, seconds, until=None):
    """Publish states at about 250 Hz stamped `offset` s off for `seconds` (or `until()`)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until is not None and until()):
        pub.publish(joint_state(NAMES, [0.2, -0.1], [0.0, 0.0], time.time() + offset))
        rec.run(0.004)


def test_stamps_beyond_the_tolerance_stop_the_arm_a_few_ms_do_not(tmp_path):
    """Ahead or behind by FAR_OFF: never active, counted; NEAR: active; then FAR_OFF: stale."""
    path = params_file(tmp_path, 'planar_2r.yaml')
    with running(tmp_path, path, with_simulator=False) as (rec, _):
        pub = state_publisher(rec)
        rejected = []
        for offset in (FAR_OFF, -FAR_OFF):
            feed(rec, pub, offset, FEED)
            rejected.append(latest(rec, 'rejected_stamp', 0.0))
            assert rec.active_since is None, f'active on states {offset} s off'
        feed(rec, pub, NEAR, START_TIMEOUT, until=lambda: rec.status in CONTROLLING)
        assert rec.status in CONTROLLING, f'not active on states {NEAR} s off: {rec.status}'
        commands = len(rec.commands)
        feed(rec, pub, FAR_OFF, FEED)
        stale = rec.status
    safe = [values for _, values in rec.commands[commands:] if np.all(values == 0.0)]
    print(f'\nrejected_stamp {rejected}; after the clock jumped {FAR_OFF} s: status {stale}, '
          f'{len(safe)} safe commands')
    assert 0 < rejected[0] < rejected[1]
    assert stale == 'stale' and len(safe) > 0
