"""
Writing rosbag2-compatible MCAP files without ROS, for `ros2 bag info`, Foxglove and identify.

    with BagWriter('run.mcap') as bag:
        bag.write('/joint_states', 'sensor_msgs/msg/JointState', message, t_ns)

`message` is a mapping or an object with the message's fields (nested the same way). Schemas
are the ``.msg`` definitions installed with the message packages (``share/<pkg>/msg``), with
their dependencies appended as rosbag2 stores them; messages are CDR-encoded by
mcap-ros2-support.
"""

import re
import sys
from pathlib import Path

from continuum_ctrl.params import ConfigError

#: ROS 2 primitive field types (no definition to look up)
PRIMITIVES = {'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16',
              'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring'}
SEPARATOR = '=' * 80


def _share_roots():
    yield Path(sys.prefix) / 'share'
    try:
        from ament_index_python.packages import get_search_paths
        for prefix in get_search_paths():
            yield Path(prefix) / 'share'
    except ImportError:
        pass


def _definition_text(name):
    package, _, message = name.replace('/msg/', '/').partition('/')
    for root in _share_roots():
        path = root / package / 'msg' / f'{message}.msg'
        if path.is_file():
            return path.read_text()
    raise ConfigError('', f"no message definition for '{name}' (share/{package}/msg)")


def _field_types(text, package):
    for line in text.splitlines():
        tokens = line.split('#', 1)[0].split()
        if len(tokens) < 2 or '=' in tokens[1]:        # blank, comment or constant
            continue
        base = re.sub(r'\[.*\]$', '', tokens[0])
        base = re.sub(r'<=\d+$', '', base)
        if base in PRIMITIVES:
            continue
        yield base if '/' in base else ('std_msgs/Header' if base == 'Header'
                                        else f'{package}/{base}')


def message_definition(name):
    """Return the rosbag2 (ros2msg) definition of `name` ('pkg/msg/Type') with dependencies."""
    short = name.replace('/msg/', '/')
    parts, seen, pending = [_definition_text(short)], {short}, [short]
    while pending:
        current = pending.pop(0)
        text = _definition_text(current)
        for dep in _field_types(text, current.split('/')[0]):
            dep = dep.replace('/msg/', '/')
            if dep not in seen:
                seen.add(dep)
                pending.append(dep)
                parts.append(f'{SEPARATOR}\nMSG: {dep}\n{_definition_text(dep)}')
    return '\n'.join(parts)


class BagWriter:
    """A single-file rosbag2 MCAP bag (``profile: ros2``, CDR messages) written in log order."""

    def __init__(self, path):
        from mcap_ros2.writer import Writer

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, 'wb')
        self._writer = Writer(self._file)
        self._schemas = {}
        self._bytes = set()         # types with a `byte` field (rclpy gives it as bytes)

    def write(self, topic, type_name, message, log_time_ns, publish_time_ns=None):
        """
        Write one message of `type_name` ('pkg/msg/Type') on `topic` at `log_time_ns`.

        `publish_time_ns`: when it was sent (default: the log time).
        """
        schema = self._schemas.get(type_name)
        if schema is None:
            definition = message_definition(type_name)
            schema = self._writer.register_msgdef(type_name, definition)
            self._schemas[type_name] = schema
            if re.search(r'^byte\b', definition, re.MULTILINE):
                self._bytes.add(type_name)
        if type_name in self._bytes:
            message = plain(message)
        self._writer.write_message(
            topic, schema, message, log_time=int(log_time_ns),
            publish_time=int(log_time_ns if publish_time_ns is None else publish_time_ns))

    def close(self):
        """Finish the file (summary and index) and close it."""
        self._writer.finish()
        self._file.close()

    def __enter__(self):
        """Return the writer."""
        return self

    def __exit__(self, *exc):
        """Close the writer."""
        self.close()


def plain(message):
    """
    Return an rclpy `message` as mappings and lists, its `byte` fields (bytes) as ints.

    The CDR encoder takes an int for a `byte` field (a DiagnosticStatus's level, say).
    """
    if isinstance(message, bytes) and len(message) == 1:
        return message[0]
    if isinstance(message, (list, tuple)):
        return [plain(item) for item in message]
    if hasattr(message, 'get_fields_and_field_types'):
        return {name: plain(getattr(message, name))
                for name in message.get_fields_and_field_types()}
    return message


def stamp(t):
    """Return a builtin_interfaces/Time mapping for `t` seconds."""
    sec = int(t // 1)
    return {'sec': sec, 'nanosec': int(round((t - sec) * 1e9)) % 1000000000}


def write_run(path, joint_names, t, q, command, command_topic='/continuum_controller/commands',
              t0=0.0, stamps=None):
    """
    Write a run as a bag of JointState positions and Float64MultiArray commands; return the path.

    Positions in `joint_names` order (no velocities) and commands logged at times `t` (s after
    `t0`, a Unix time); the states' header stamps are `stamps` (s after `t0`: when each was
    measured), or their log times.
    """
    start = int(round(t0 * 1e9))
    stamps = t if stamps is None else stamps
    with BagWriter(path) as bag:
        for time, measured, position, values in zip(t, stamps, q, command):
            ns = start + int(round(time * 1e9))
            measured_ns = start + int(round(measured * 1e9))    # exact: no float Unix seconds
            header = {'stamp': {'sec': measured_ns // 1000000000,
                                'nanosec': measured_ns % 1000000000}, 'frame_id': ''}
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': header, 'name': list(joint_names), 'position': list(position),
                       'velocity': [], 'effort': []}, ns)
            bag.write(command_topic, 'std_msgs/msg/Float64MultiArray',
                      {'layout': {'dim': [], 'data_offset': 0}, 'data': list(values)}, ns)
    return Path(path)
