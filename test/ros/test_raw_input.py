"""Serialized input with a size bound: oversized messages are rejected before deserializing."""

import time

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.qos import qos_profile_sensor_data
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from continuum_ctrl.ros.conversion import Rejected, stamp_seconds
from continuum_ctrl.ros.joint_state_cdr import decode_names
from continuum_ctrl.ros.raw_input import (BOUND_JOINTS, commands_reader, joint_states_bytes,
                                          joint_states_reader, MAX_JOINT_STATES_BYTES,
                                          MAX_TRAJECTORY_POINTS, NAME_CHARS, tip_target_reader,
                                          trajectory_reader)
from continuum_ctrl.runtime.node_settings import CONTROLLER_NODE_FIELDS


JOINTS = [f'seg{s}_{axis}' for s in range(1, 4) for axis in ('u', 'v', 'w')]


def joint_state(names, value=0.25):
    n = len(names)
    return JointState(name=list(names), position=[value] * n, velocity=[-value] * n,
                      effort=[2.0 * value] * n)


def same(fields, msg):
    """Tell whether JointStateFields hold what a JointState message holds (but effort)."""
    names = decode_names(fields.names) if isinstance(fields.names, bytes) else fields.names
    return (fields.stamp == stamp_seconds(msg.header.stamp) and names == msg.name
            and fields.count == len(msg.name)
            and np.array_equal(fields.position, msg.position)
            and np.array_equal(fields.velocity, msg.velocity))


def test_a_valid_state_passes_with_its_values():
    reader = joint_states_reader(JOINTS)
    msg = joint_state(JOINTS + ['gripper'], 0.125)
    msg.header.stamp.sec, msg.header.frame_id = 12, 'base'
    assert same(reader.read(serialize_message(msg)), msg)


def test_a_100000_name_state_is_rejected_by_its_size():
    reader = joint_states_reader(JOINTS)
    data = serialize_message(joint_state([f'joint_{k}' for k in range(100000)]))
    with pytest.raises(Rejected, match=f'{len(data)} bytes, above the bound of '
                                       f'{MAX_JOINT_STATES_BYTES}') as caught:
        reader.read(data)
    assert caught.value.kind == 'size' and len(data) > 100 * MAX_JOINT_STATES_BYTES


def test_the_default_bound_admits_a_200_joint_robot_and_no_more():
    reader = joint_states_reader(JOINTS)
    names = [f'{k:0{NAME_CHARS}d}' for k in range(BOUND_JOINTS + 1)]
    msg = joint_state(names[:-1])
    msg.header.frame_id = 'f' * NAME_CHARS
    assert len(serialize_message(msg)) == MAX_JOINT_STATES_BYTES == joint_states_bytes(200)
    assert same(reader.read(serialize_message(msg)), msg)
    with pytest.raises(Rejected, match='above the bound'):
        reader.read(serialize_message(joint_state(names)))


def test_the_parameter_default_is_the_200_joint_bound():
    field = CONTROLLER_NODE_FIELDS['input.max_joint_states_bytes']
    assert field.default == MAX_JOINT_STATES_BYTES
    assert CONTROLLER_NODE_FIELDS['input.max_trajectory_points'].default == MAX_TRAJECTORY_POINTS


def test_the_bound_grows_to_the_configured_joints():
    many = [f'a_rather_long_joint_name_of_this_robot_{k:05d}' for k in range(400)]
    reader = joint_states_reader(many, max_bytes=1000)
    msg = joint_state(many)
    msg.header.frame_id = 'f' * NAME_CHARS
    assert same(reader.read(serialize_message(msg)), msg)
    msg = joint_state(many + ['one_more'])
    msg.header.frame_id = 'f' * NAME_CHARS
    with pytest.raises(Rejected, match='above the bound'):
        reader.read(serialize_message(msg))


def test_bytes_that_do_not_deserialize_are_rejected():
    reader = joint_states_reader(JOINTS)
    data = serialize_message(joint_state(JOINTS))
    for bad in (b'', data[:10], data[:4] + b'\xff' * 40):   # the last: a 4 G name count
        with pytest.raises(Rejected, match='do not deserialize') as caught:
            reader.read(bad)
        assert caught.value.kind == 'size'


def trajectory(names, points):
    n = len(names)
    point = JointTrajectoryPoint(positions=[0.1] * n, velocities=[0.0] * n,
                                 accelerations=[0.0] * n, effort=[0.0] * n)
    point.time_from_start.sec = 1
    return JointTrajectory(joint_names=list(names), points=[point] * points)


def test_trajectories_are_bounded_by_their_number_of_points():
    reader = trajectory_reader(JOINTS, max_points=50)
    assert len(reader.read(serialize_message(trajectory(JOINTS, 50))).points) == 50
    with pytest.raises(Rejected, match='above the bound'):
        reader.read(serialize_message(trajectory(JOINTS, 51)))


def test_commands_of_n_doubles_pass_with_or_without_a_layout_and_longer_ones_do_not():
    reader = commands_reader(9)
    plain = Float64MultiArray(data=[float(k) for k in range(9)])
    labelled = Float64MultiArray(data=plain.data)
    labelled.layout.dim = [MultiArrayDimension(label='x' * NAME_CHARS, size=9, stride=9)]
    for msg in (plain, labelled):
        assert reader.read(serialize_message(msg)) == msg
    with pytest.raises(Rejected, match='above the bound'):
        reader.read(serialize_message(Float64MultiArray(data=[0.0] * 20)))


def test_tip_targets_pass_in_the_base_frame_and_a_long_frame_id_does_not():
    for base in ('base', 'b' * (3 * NAME_CHARS)):        # a long base frame raises the bound
        reader = tip_target_reader(base)
        target = PoseStamped()
        target.header.frame_id = base
        target.pose.position.x, target.pose.orientation.w = 0.1, 1.0
        assert reader.read(serialize_message(target)) == target
        target.header.frame_id = 'f' * 100_000
        with pytest.raises(Rejected, match='above the bound'):
            reader.read(serialize_message(target))


@pytest.mark.ros
def test_a_raw_subscription_delivers_bytes_that_the_reader_bounds():
    """Real DDS: a huge and a valid JointState through a raw=True subscription."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('raw_input_test', context=context)
    try:
        reader = joint_states_reader(JOINTS)
        accepted, rejected = [], []

        def on_state(data):
            try:
                accepted.append(reader.read(data))
            except Rejected as exc:
                rejected.append(exc.kind)

        node.create_subscription(JointState, 'joint_states', on_state, qos_profile_sensor_data,
                                 raw=True)
        publisher = node.create_publisher(JointState, 'joint_states', qos_profile_sensor_data)
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        big = joint_state([f'joint_{k}' for k in range(100000)])
        valid = joint_state(JOINTS, 0.5)
        end = time.monotonic() + 30.0
        while (not accepted or not rejected) and time.monotonic() < end:
            publisher.publish(big)
            publisher.publish(valid)
            for _ in range(4):
                executor.spin_once(timeout_sec=0.05)
        assert rejected and set(rejected) == {'size'}
        assert accepted and all(same(fields, valid) for fields in accepted)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
