"""
The managed controller through its lifecycle services, with real node processes.

unconfigured -> inactive -> active -> inactive -> finalized: no command before activation,
the safe command on deactivation and nothing after it; a configure that fails on a bad
parameter, or on gains its check predicts unstable, leaves the node unconfigured, alive,
with the reason in its log.
"""

from pathlib import Path

import numpy as np
import pytest
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter

from continuum_ctrl.params.launch_description import controller, simulation
from support.ros_nodes import call_service, launched, params_file, START_TIMEOUT

#: starts node processes, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]
#: seconds to listen for commands that must not come
QUIET = 1.5


def state(rec):
    """Return the controller's lifecycle state id."""
    return call_service(rec, GetState, 'get_state', GetState.Request(),
                        timeout=START_TIMEOUT).current_state.id


#: the state each transition the tests ask for ends in when it succeeds
GOAL = {Transition.TRANSITION_CONFIGURE: State.PRIMARY_STATE_INACTIVE,
        Transition.TRANSITION_ACTIVATE: State.PRIMARY_STATE_ACTIVE,
        Transition.TRANSITION_DEACTIVATE: State.PRIMARY_STATE_INACTIVE,
        Transition.TRANSITION_INACTIVE_SHUTDOWN: State.PRIMARY_STATE_FINALIZED}


def change(rec, transition):
    """
    Ask the controller for a lifecycle transition; return whether it succeeded.

    A transition is not asked twice: when its response is lost (see `call_service`), the
    state the controller is in then tells.
    """
    request = ChangeState.Request(transition=Transition(id=transition))
    response = call_service(rec, ChangeState, 'change_state', request, idempotent=False)
    return state(rec) == GOAL[transition] if response is None else response.success


def test_transitions_gate_the_commands_and_deactivation_leaves_the_safe_command_last(tmp_path):
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={'autostart': False})
    with launched(tmp_path, simulation(path)) as (rec, processes, _):
        assert state(rec) == State.PRIMARY_STATE_UNCONFIGURED
        rec.run(QUIET)
        assert not rec.commands                       # unconfigured: silent
        assert change(rec, Transition.TRANSITION_CONFIGURE)
        assert state(rec) == State.PRIMARY_STATE_INACTIVE
        rec.run(QUIET)
        assert not rec.commands                       # inactive: silent
        assert change(rec, Transition.TRANSITION_ACTIVATE)
        assert state(rec) == State.PRIMARY_STATE_ACTIVE
        assert rec.wait(lambda: rec.active_since is not None, START_TIMEOUT, processes)
        rec.run(1.0)
        controlled = np.array([c for _, c in rec.commands])
        assert np.abs(controlled[-1]).max() > 0.1     # gravity compensation, not zero
        assert change(rec, Transition.TRANSITION_DEACTIVATE)
        assert state(rec) == State.PRIMARY_STATE_INACTIVE
        rec.run(QUIET)
        count = len(rec.commands)
        assert np.array_equal(rec.commands[-1][1], [0.0, 0.0])   # the safe command
        rec.run(QUIET)
        assert len(rec.commands) == count             # and nothing after it
        assert change(rec, Transition.TRANSITION_INACTIVE_SHUTDOWN)
        assert state(rec) == State.PRIMARY_STATE_FINALIZED
        rec.run(QUIET)
        assert len(rec.commands) == count
        assert all(p.poll() is None for p in processes)


def test_a_failing_configure_leaves_the_node_unconfigured_and_alive(tmp_path):
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={'autostart': False})
    with launched(tmp_path, controller(path)) as (rec, processes, _):
        assert state(rec) == State.PRIMARY_STATE_UNCONFIGURED
        bad = SetParameters.Request(parameters=[
            Parameter('gains.kp', value=[-1.0, 5.0]).to_parameter_msg()])
        assert call_service(rec, SetParameters, 'set_parameters', bad).results[0].successful
        assert not change(rec, Transition.TRANSITION_CONFIGURE)
        assert state(rec) == State.PRIMARY_STATE_UNCONFIGURED
        assert processes[0].poll() is None
        good = SetParameters.Request(parameters=[
            Parameter('gains.kp', value=[100.0, 100.0]).to_parameter_msg()])
        assert call_service(rec, SetParameters, 'set_parameters', good).results[0].successful
        assert change(rec, Transition.TRANSITION_CONFIGURE)
        assert state(rec) == State.PRIMARY_STATE_INACTIVE
    text = (Path(tmp_path) / f'{controller(path)[0].name}.log').read_text()
    assert "configure failed: parameter 'gains.kp'" in text
    assert 'Traceback' not in text


def test_configure_refuses_gains_predicted_unstable_with_one_line(tmp_path):
    # the 2R arm's integral at 1000 N m/(rad s), kp 100, kd 20: a pole at 3.2 Hz outside
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'autostart': False, 'gains': {'ki': [1000.0, 1000.0]}})
    with launched(tmp_path, controller(path)) as (rec, processes, _):
        assert not change(rec, Transition.TRANSITION_CONFIGURE)
        assert state(rec) == State.PRIMARY_STATE_UNCONFIGURED
        rec.run(QUIET)
        assert not rec.commands and processes[0].poll() is None
    text = (Path(tmp_path) / f'{controller(path)[0].name}.log').read_text()
    assert "configure failed: parameter 'gains': the gains are predicted unstable" in text
    assert 'Traceback' not in text
