"""
A serialized `sensor_msgs/JointState` read in place: stamp, names and arrays, no message objects.

rclpy's `deserialize_message` builds a JointState of Python objects (a `str` per name, lists of
floats) under the GIL: 10 us back to back, 70 us in the running controller, for every state.
Plain little-endian CDR, which rmw_fastrtps and rmw_cyclonedds send on x86 and ARM, has a
simple layout after its 4-byte encapsulation header (offsets below count from its end, and
each value is aligned to its size there):

    int32 sec, uint32 nanosec, string frame_id        (uint32 length with the NUL, bytes)
    sequence<string> name                              (uint32 count, then each string)
    sequence<double> position, velocity, effort        (uint32 count, then the doubles)

`parse` reads it by offsets: the doubles become NumPy views of the buffer, and the name section
(its count and strings, as bytes) is a key the caller compares with the last one it mapped, so
names are decoded (`decode_names`) only when they change. Padding is not cleared by the
serializer, so equal names can give unequal sections (the key then misses, and the strings are
walked again). Bytes after the effort are ignored, as rclpy ignores them (serialized messages
carry a few). Anything else (another encapsulation, a length that leaves the buffer) returns
None, and the caller deserializes with rclpy instead, which stays the reference: the tests
compare both on varied messages.
"""

import struct
from typing import List, NamedTuple, Optional, Sequence, Union

import numpy as np

#: encapsulation of plain CDR, little endian (options bytes follow)
CDR_LE = b'\x00\x01'
#: the encapsulation header's length, where CDR offsets start
ORIGIN = 4
_HEAD = struct.Struct('<iII')           # sec, nanosec, frame_id length
_COUNT = struct.Struct('<I')


class JointStateFields(NamedTuple):
    """
    What the controller reads of a JointState.

    `stamp`: header stamp, s (0.0 for a zero stamp); `names`: the serialized name section
    (bytes: a key, decoded by `decode_names`) or the names themselves (a list, from a
    deserialized message); `count`: the number of names; `position`, `velocity`: float64
    arrays (views of the serialized buffer) or sequences of floats.
    """

    stamp: float
    names: Union[bytes, List[str]]
    count: int
    position: Sequence[float]
    velocity: Sequence[float]


def _aligned(offset, size):
    """Return `offset` (bytes from the buffer start) moved up to a multiple of `size` in CDR."""
    return offset + (-(offset - ORIGIN)) % size


def _doubles(data, offset):
    """Return (float64 view, end offset) of the sequence<double> at `offset`, or None."""
    offset = _aligned(offset, 4)
    if offset + 4 > len(data):
        return None
    count = _COUNT.unpack_from(data, offset)[0]
    offset += 4
    if count:
        offset = _aligned(offset, 8)
        if offset + 8 * count > len(data):
            return None
    return np.frombuffer(data, '<f8', count, offset), offset + 8 * count


def parse(data: bytes, known: bytes = b'') -> Optional[JointStateFields]:
    """
    Return the fields of the serialized JointState `data`, or None if not plain LE CDR.

    `known`: a name section returned before; when `data` holds the same one, its strings are
    not walked again (and the returned `names` is `known` itself).
    """
    size = len(data)
    if size < ORIGIN + 16 or not data.startswith(CDR_LE):
        return None
    sec, nanosec, frame_length = _HEAD.unpack_from(data, ORIGIN)
    offset = _aligned(ORIGIN + 12 + frame_length, 4)
    if offset + 4 > size:
        return None
    if known and data.startswith(known, offset):
        names = known
        offset += len(known)
    else:
        start = offset
        offset += 4
        for _ in range(_COUNT.unpack_from(data, start)[0]):
            offset = _aligned(offset, 4)
            if offset + 4 > size:
                return None
            offset += 4 + _COUNT.unpack_from(data, offset)[0]
        if offset > size:
            return None
        names = data[start:offset]
    arrays = []
    for _ in range(3):                  # position, velocity, effort (checked to fit the data)
        found = _doubles(data, offset)
        if found is None:
            return None
        array, offset = found
        arrays.append(array)
    return JointStateFields(sec + 1e-9 * nanosec, names, _COUNT.unpack_from(names)[0],
                            arrays[0], arrays[1])


def decode_names(section: bytes) -> List[str]:
    """Return the names of a serialized name section (as `parse` returns it)."""
    names, offset = [], 4
    for _ in range(_COUNT.unpack_from(section)[0]):
        offset += (-offset) % 4             # the section starts aligned, so this aligns in CDR
        length = _COUNT.unpack_from(section, offset)[0]
        names.append(section[offset + 4:offset + 3 + length].decode('utf-8'))
        offset += 4 + length
    return names
