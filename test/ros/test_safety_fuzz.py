"""
Property-based fuzzing (Hypothesis) of the controller's callback path, in process.

A real ControllerNode is built from a parameter file (not spun, its loop thread stopped: its
callbacks and its tick are called directly, as the executor and the loop thread would), then
fed arbitrary JointState and JointTrajectory messages:
arbitrary names, lengths, float values (NaN, infinities, huge) and stamps. Properties:
- no callback raises;
- a joint state is accepted exactly when an independent oracle says it is valid, and then
  its values are the loop's state; otherwise it is counted under one rejection kind;
- every command after every message is finite and within the limits (efforts within
  `limits.effort`, changes within `limits.effort_rate` per tick; pressures within
  [p_min, p_max]), and the reference within the joint limits (or gliding into them from a
  measured pose outside).
"""

import math
import time

import numpy as np
import pytest
import rclpy
from hypothesis import given, HealthCheck, settings, strategies as st
from rclpy.serialization import serialize_message
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.ros.controller_node import ControllerNode
from continuum_ctrl.ros.conversion import MAX_POSITION, MAX_SPEED
from support.ros_nodes import params_file
from support.safety_tools import joint_state, within

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
#: values Hypothesis mixes into messages: non-finite, huge, and ordinary ones
SPECIAL = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 0.0, 1e3, -1e3])
#: stamp offsets from now, s (None: zero stamp)
STAMPS = st.one_of(st.none(), st.floats(-5.0, 5.0), st.sampled_from([-1e6, 1e6]))


def _make_node(tmp_path_factory, base, **controller):
    path = params_file(tmp_path_factory.mktemp('fuzz'), base, continuum_controller={
        'state_timeout': 10.0, 'resume_count': 1, **controller})
    context = rclpy.Context()
    rclpy.init(context=context)
    node = ControllerNode(context=context, cli_args=[
        '--ros-args', '--params-file', str(path)])
    return node, context


@pytest.fixture(scope='module', params=['panda_effort', 'planar_2r_pressure'])
def node(request, tmp_path_factory):
    """A controller node: Panda in effort mode with a rate limit, or the 2R in pressure mode."""
    if request.param == 'panda_effort':
        made = _make_node(tmp_path_factory, 'panda.yaml',
                          limits={'effort_rate': [5000.0]})
    else:
        made = _make_node(tmp_path_factory, 'planar_2r.yaml', output={
            'mode': 'pressure', 'area': [1e-4], 'p_min': 1e4, 'p_max': 3e5,
            'deadzone': [5e3]}, limits={'effort': [25.0]})
    node, context = made
    assert node.runner.thread.stop()               # the test ticks the loop itself
    yield node
    node.destroy_node()
    rclpy.shutdown(context=context)


def _valid(node, names, position, velocity, stamp_offset):
    """Return whether a joint state must be accepted (an oracle independent of the reader)."""
    joints = node.model.joint_names
    if len(position) != len(names) or len(velocity) not in (0, len(names)):
        return False
    if len(set(names)) != len(names) or not set(joints) <= set(names):
        return False
    used = [names.index(j) for j in joints]
    q = np.array([position[i] for i in used])
    qd = np.array([velocity[i] for i in used]) if velocity else np.zeros(len(joints))
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        return False
    low, high = node.loop.low, node.loop.high
    span = np.where(np.isfinite(high - low), high - low, np.inf)
    if np.any(q < low - span) or np.any(q > high + span) or np.any(np.abs(qd) > MAX_SPEED):
        return False
    if np.any(np.abs(q) > MAX_POSITION):        # unbounded joints too
        return False
    tolerance = node.node_settings.stamp_tolerance
    return stamp_offset is None or abs(stamp_offset) <= 0.9 * tolerance


def _ambiguous_stamp(node, stamp_offset):
    """Return whether a stamp offset is too close to the tolerance to predict (clock moves)."""
    tolerance = node.node_settings.stamp_tolerance
    return stamp_offset is not None and 0.9 * tolerance < abs(stamp_offset) <= 1.1 * tolerance


def _check_command(node, previous, failures):
    """
    Assert the published command and reference are finite and within every limit.

    The rate limit holds between two controlled ticks; the safe command (after `failures`
    changed, i.e. a non-finite law result) is exempt: it applies at once.
    """
    settings = node.loop.settings
    cycle = node.loop.cycle
    command = np.array(node.loop.command)
    order = settings.order
    assert command.shape == (node.model.n,)
    if settings.actuation is not None:
        act = settings.actuation
        assert within(command, act.p_min[order], act.p_max[order])
    else:
        limit = settings.effort_limit[order]
        assert within(command, -limit, limit)
        step = (settings.effort_rate * node.loop.period)[order]
        if cycle.nonfinite == failures and cycle.status == 'active':
            assert np.all(np.abs(command - previous) <= step * (1 + 1e-9) + 1e-9)
    if cycle.status == 'active':
        # within the limits; during the blend from a measured pose outside them, between that
        # pose and the limits (Anchored glides in instead of clipping in one tick)
        start = node.loop.reference.q_start
        assert within(cycle.q_des, np.minimum(node.loop.low, start),
                      np.maximum(node.loop.high, start))
    assert np.all(np.isfinite(node.loop.qd_des)) and np.all(np.isfinite(node.loop.qdd_des))
    return command


def _floats(max_value):
    return st.one_of(SPECIAL, st.floats(-max_value, max_value), st.floats(allow_nan=True))


@st.composite
def joint_states(draw, joints):
    """Draw (names, position, velocity, stamp offset): near-valid or arbitrary."""
    extra = ['', 'x', 'panda_finger_joint1', 'joint1', joints[0]]
    if draw(st.booleans()):
        names = draw(st.permutations(joints + draw(st.lists(st.sampled_from(extra[:3]),
                                                            max_size=2, unique=True))))
        n = len(names)
        position = draw(st.lists(st.one_of(st.floats(-4.0, 4.0), SPECIAL), min_size=n,
                                 max_size=n))
        velocity = draw(st.one_of(st.just([]), st.lists(st.floats(-20.0, 20.0),
                                                        min_size=n, max_size=n)))
    else:
        names = draw(st.lists(st.sampled_from(joints + extra), max_size=len(joints) + 3))
        position = draw(st.lists(_floats(10.0), max_size=len(joints) + 3))
        velocity = draw(st.lists(_floats(1e4), max_size=len(joints) + 3))
    return names, position, velocity, draw(STAMPS)


@FUZZ
@given(data=st.data())
def test_joint_state_callback_never_raises_and_commands_stay_within_limits(node, data):
    """Arbitrary joint states: accepted iff valid, counted otherwise; commands always safe."""
    joints = list(node.model.joint_names)
    previous = np.array(node.loop.command)
    for _ in range(data.draw(st.integers(1, 4))):
        names, position, velocity, offset = data.draw(joint_states(joints))
        stamp = None if offset is None else time.time() + offset
        msg = joint_state(names, position, velocity, stamp)
        before = dict(node.runtime.rejected)
        failures, too_fast = node.loop.nonfinite, node.loop.too_fast
        node._on_joint_states(serialize_message(msg))
        node._loop_tick(0.0)                    # takes the state the callback handed over
        grown = [kind for kind in before if node.runtime.rejected[kind] != before[kind]]
        # without velocities, the loop refuses a position jump whose estimated speed is too
        # high (the estimate depends on the previous message)
        estimated_too_fast = node.loop.too_fast != too_fast
        accepted = not grown and not estimated_too_fast
        assert len(grown) <= 1 and all(node.runtime.rejected[k] == before[k] + 1 for k in grown)
        valid = _valid(node, names, position, velocity, offset)
        if not _ambiguous_stamp(node, offset):
            assert accepted == valid or (valid and not velocity and estimated_too_fast)
        if accepted:
            expect = np.array([position[names.index(j)] for j in joints])
            assert np.array_equal(node.loop.q, expect)
        previous = _check_command(node, previous, failures)


def _point(draw, sizes, values):
    point = JointTrajectoryPoint()
    point.positions = draw(st.lists(values, min_size=sizes[0], max_size=sizes[0]))
    point.velocities = draw(st.lists(values, min_size=sizes[1], max_size=sizes[1]))
    point.accelerations = draw(st.lists(values, min_size=sizes[2], max_size=sizes[2]))
    point.time_from_start.sec = draw(st.integers(-2, 5))
    point.time_from_start.nanosec = draw(st.integers(0, 999_999_999))
    return point


@st.composite
def trajectories(draw, joints):
    """Draw a JointTrajectory: near-valid (right joints and sizes) or arbitrary."""
    msg = JointTrajectory()
    n = len(joints)
    near = draw(st.booleans())
    msg.joint_names = (draw(st.permutations(joints)) if near else
                       draw(st.lists(st.sampled_from(joints + ['', 'x']), max_size=n + 2)))
    values = st.one_of(st.floats(-3.0, 3.0), SPECIAL) if near else _floats(1e3)
    size = st.sampled_from([0, n]) if near else st.integers(0, n + 2)
    points = []
    for _ in range(draw(st.integers(0, 4))):
        sizes = (n if near else draw(size), draw(size), draw(size))
        points.append(_point(draw, sizes, values))
    msg.points = points
    return msg


@FUZZ
@given(data=st.data())
def test_trajectory_callback_never_raises_and_commands_stay_within_limits(node, data):
    """Arbitrary trajectories: never raise; the reference stays finite and within limits."""
    joints = list(node.model.joint_names)
    mid = np.where(np.isfinite(node.loop.low), (node.loop.low + node.loop.high) / 2, 0.0)
    node._on_joint_states(serialize_message(joint_state(joints, mid, np.zeros(len(joints)))))
    node._loop_tick(0.0)                        # takes the state: active (resume_count 1)
    previous = np.array(node.loop.command)
    node._on_trajectory(serialize_message(data.draw(trajectories(joints))))
    for _ in range(data.draw(st.integers(1, 5))):
        failures = node.loop.nonfinite
        node._loop_tick(0.0)
        previous = _check_command(node, previous, failures)
