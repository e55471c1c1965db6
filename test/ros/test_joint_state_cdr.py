"""
The in-place JointState reader (ros/joint_state_cdr.py) against rclpy's deserialization.

On 400 varied messages (0 to 12 names of 0 to 14 characters, some not ASCII, frame_ids of 0
to 9 characters, positions, velocities and efforts of their own lengths, any stamp) `parse`
returns what `deserialize_message` returns, also when given the name section of the message
before (which it must recognise only when equal). It returns None for another encapsulation
and for cut bytes that rclpy cannot read, and the controller's JointStateInput then rejects
them as rclpy does.
"""

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from continuum_ctrl.ros.conversion import JointStateReader, Rejected, stamp_seconds
from continuum_ctrl.ros.joint_state_cdr import decode_names, parse
from continuum_ctrl.ros.raw_input import joint_states_reader

ALPHABET = list('abcxyz_019') + ['é', '关', 'ß']


def varied(rng):
    """Return a random JointState (consistent or not in its lengths)."""
    count = int(rng.integers(0, 13))
    names = [''.join(rng.choice(ALPHABET, int(rng.integers(0, 15)))) for _ in range(count)]

    def array():
        length = int(rng.choice([0, count, count, int(rng.integers(0, 15))]))
        return rng.normal(size=length).tolist()
    msg = JointState(name=names, position=array(), velocity=array(), effort=array())
    msg.header.stamp.sec = int(rng.integers(0, 2**31))
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9))
    msg.header.frame_id = ''.join(rng.choice(ALPHABET, int(rng.integers(0, 10))))
    return msg


def check(fields, msg):
    assert fields is not None
    assert fields.stamp == stamp_seconds(msg.header.stamp)
    assert decode_names(fields.names) == msg.name and fields.count == len(msg.name)
    assert np.array_equal(fields.position, msg.position)
    assert np.array_equal(fields.velocity, msg.velocity)


def test_parse_reads_what_rclpy_deserializes():
    rng = np.random.default_rng(7)
    previous = b''
    for _ in range(400):
        msg = varied(rng)
        data = serialize_message(msg)
        assert deserialize_message(data, JointState) == msg
        check(parse(data), msg)
        fields = parse(data, previous)
        check(fields, msg)
        previous = fields.names


def test_a_known_name_section_is_reused_only_when_equal():
    msg = JointState(name=['a', 'bb'], position=[1.0, 2.0], velocity=[3.0, 4.0])
    data = serialize_message(msg)
    known = parse(data).names
    msg.header.frame_id = 'base'                        # the same section, further on
    moved = serialize_message(msg)
    start = moved.index(b'\x02\x00\x00\x00\x02\x00\x00\x00a')
    moved = moved[:start] + known + moved[start + len(known):]     # with the same padding
    for data in (data, moved):
        fields = parse(data, known)
        assert fields.names is known
        check(fields, deserialize_message(data, JointState))
    msg.name = ['a', 'bc']
    fields = parse(serialize_message(msg), known)
    assert fields.names is not known
    check(fields, msg)


def rclpy_reads(data):
    """Return the JointState rclpy deserializes from `data`, or None if it cannot."""
    try:
        return deserialize_message(data, JointState)
    except Exception:  # noqa: B902 - rclpy raises its own types for bad bytes
        return None


def test_other_encodings_go_to_rclpy_and_cut_bytes_are_read_as_rclpy_reads_them():
    msg = JointState(name=['j1', 'j2'], position=[0.5, -0.5], velocity=[0.0, 1.0])
    msg.header.frame_id = 'base'
    data = serialize_message(msg)
    assert parse(b'\x00\x00' + data[2:]) is None             # big-endian CDR
    assert parse(b'\x00\x07' + data[2:]) is None             # XCDR2
    reader = joint_states_reader(['j1', 'j2'])
    for cut in range(len(data) + 16):
        bytes_ = data[:cut] + b'\x00' * max(cut - len(data), 0)
        expected = rclpy_reads(bytes_)
        if expected is None:
            assert parse(bytes_) is None
            with pytest.raises(Rejected) as caught:
                reader.read(bytes_)
            assert caught.value.kind == 'size'
        else:
            check(parse(bytes_), expected)
            assert expected == msg
    assert rclpy_reads(data[:len(data) - 8]) is None            # the cuts reached the arrays


def test_names_that_are_not_utf8_are_rejected_as_names():
    msg = JointState(name=['j1', 'jx'], position=[0.5, -0.5], velocity=[0.0, 1.0])
    data = bytearray(serialize_message(msg))
    data[data.index(b'jx') + 1] = 0xff
    reader = JointStateReader(['j1', 'jx'], np.full(2, -1.0), np.full(2, 1.0))
    with pytest.raises(Rejected) as caught:
        reader.read_fields(parse(bytes(data)), 0.0)
    assert caught.value.kind == 'names'
