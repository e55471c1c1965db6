"""
The simulator process under fault injection: bad commands are rejected whole and counted,
good ones between them are applied (each round of four bad and one good command waits
until the good one shows: the subscription keeps the last 10), and a stale command means
zero input (vented PMAs). Float64MultiArray commands in effort and pressure mode, and
stamped JointState ones (`output.message: joint_state`, stamped when sent).

Its `joint_states` carry the applied generalized force in `effort`, which the test reads.
"""

import time

import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from continuum_ctrl.params.launch_description import CONTROLLER, simulation
from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.ros.conversion import stamp_seconds
from support.ros_nodes import params_file, Recorder, START_TIMEOUT

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: bad commands of each kind
COUNT = 300
TIMEOUT = 0.5                        # command_timeout (long: a loaded machine stalls)
AREA, P_MIN, P_MAX = 1e-4, 1e4, 3e5
PRESSURE = {'output': {'mode': 'pressure', 'area': [AREA], 'p_min': P_MIN, 'p_max': P_MAX}}
CASES = {
    # mode: (good command for round k, bad commands, applied force of a command, zero input)
    'effort': (lambda k: [3.0 + 1e-3 * k, -1.5],
               [[1.0, 2.0, 3.0], [np.nan, 1.0], [1.0, np.inf], [1.0]],
               lambda c: np.array(c), [0.0, 0.0]),
    'pressure': (lambda k: [2e4 + k, 5e4],
                 [[1e4, 2e4, 3e4], [np.nan, 2e4], [5e5, 2e4], [2e4, 0.0]],
                 lambda c: AREA * np.array(c), [AREA * P_MIN] * 2),
}
CASES['joint_state'] = CASES['effort']          # efforts, as stamped JointStates


def command(mode, values):
    """
    Return the command message of `values` in `mode`.

    For 'joint_state' a JointState of the 2R's joints stamped now (a wrong count of values
    gives a wrong count of efforts), else a Float64MultiArray.
    """
    values = [float(v) for v in values]
    if mode != 'joint_state':
        return Float64MultiArray(data=values)
    msg = JointState(name=['joint1', 'joint2'], effort=values)
    msg.header.stamp = Time(nanoseconds=time.time_ns()).to_msg()
    return msg


@pytest.mark.parametrize('mode', sorted(CASES))
def test_bad_commands_rejected_and_stale_command_is_zero_input(tmp_path, mode):
    good, bad, force, zero = CASES[mode]
    nodes = {'all': PRESSURE} if mode == 'pressure' else {}
    if mode == 'joint_state':
        nodes['all'] = {'output': {'message': 'joint_state'}}
    nodes['continuum_simulator'] = {'command_timeout': TIMEOUT}
    path = params_file(tmp_path, 'planar_2r.yaml', **nodes)
    rows = []
    with Recorder(message='joint_state' if mode == 'joint_state' else 'multiarray') as rec:
        log = open(tmp_path / 'simulator.log', 'w')
        processes = start([simulation(path)[1]], outputs=[log])
        try:
            rec.node.create_subscription(
                JointState, '/joint_states', lambda m: rows.append(
                    (stamp_seconds(m.header.stamp), np.array(m.effort))),
                qos_profile_sensor_data)
            pub = rec.node.create_publisher(type(command(mode, [])), f'/{CONTROLLER}/commands',
                                            10)
            assert rec.wait(lambda: pub.get_subscription_count() > 0 and rows,
                            START_TIMEOUT, processes)
            sent = 0
            for k in range(COUNT):
                for values in bad:
                    pub.publish(command(mode, values))
                    sent += 1
                last = good(k)
                pub.publish(command(mode, last))
                applied = force(last)
                # the next round leaves once the good one is applied: all five were taken
                assert rec.wait(lambda: np.allclose(rows[-1][1], applied, rtol=1e-12), 10.0,
                                processes), (k, rows[-1])
            seen = next(t for t, effort in rows if np.allclose(effort, applied, rtol=1e-12))
            rec.run(TIMEOUT + 0.8)
            assert rec.wait(lambda: rec.sim_diagnostics and rec.sim_diagnostics[-1][
                'rejected_commands'] == str(sent), 10.0, processes), rec.sim_diagnostics[-1:]
            assert processes[0].poll() is None
        finally:
            stop(processes)
            log.close()
    goods = np.array([force(good(k)) for k in range(COUNT)])
    for t, effort in rows:
        # every applied input is a good command or zero input, never a bad one
        assert np.any(np.all(np.isclose(goods, effort, rtol=1e-12), axis=1)) or np.allclose(
            effort, zero, rtol=1e-12)
    late = [effort for t, effort in rows if t > seen + TIMEOUT + 0.1]
    assert len(late) > 100 and all(np.allclose(e, zero, rtol=1e-12) for e in late)
