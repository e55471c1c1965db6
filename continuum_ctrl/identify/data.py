"""
Recorded runs: joint positions and commands on their log times, read from MCAP bags or CSV.

A run holds the measured positions ``q`` (model order, m or rad) at the times they held and the
commands (model order: Pa in pressure mode, N or N m in effort mode) at their send times.
Readers accept a rosbag2 bag directory (``metadata.yaml`` and ``.mcap`` files), a single
``.mcap`` file, or the closed-loop demo's CSV (``t, q_des_*, q_*, effort_*, command_*``). Only
positions are read: velocities, where a bag has them, are not used (identification
differentiates the positions, identify/signals.py), so lengths-only bags serve as well. A
command holds from its time until the next one. Bad data raise ConfigError with one line
naming the file and the problem.
"""

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from continuum_ctrl.models.joint_order import FOREIGN, joint_columns, JointOrderError
from continuum_ctrl.params import ConfigError, read_text
from continuum_ctrl.params.files import check_readable

#: default topics, as `ros2 bag record /joint_states /continuum_controller/commands` names them
STATES_TOPIC = '/joint_states'
COMMANDS_TOPIC = '/continuum_controller/commands'
#: header stamps further than this (median, s) from the publish times run on another clock
STAMP_SKEW = 1.0
#: how the positions were timed (`Run.timing`)
STAMPED = 'the header stamps (measurement times)'


@dataclass
class Run:
    """One recorded run: `t` (N,) s and `q` (N, n); `command_t` (M,) s and `command` (M, n)."""

    name: str
    t: np.ndarray
    q: np.ndarray
    command_t: np.ndarray
    command: np.ndarray
    #: joint states skipped as foreign: naming none of the arm's joints (another robot's)
    foreign: int = 0
    #: what times `t` are: STAMPED, or the send times and why the stamps were not used
    timing: str = STAMPED


class Joints:
    """
    Map recorded joint names and command vectors onto the model's coordinate order.

    `model_names`: the model's joints; `command_names`: the `joints` parameter (command order).
    """

    def __init__(self, model_names, command_names):
        self.model_names = list(model_names)
        self.command_names = list(command_names)
        index = {name: i for i, name in enumerate(self.model_names)}
        self.command_order = np.array([index[name] for name in self.command_names], dtype=int)

    @property
    def n(self):
        """Return the number of joints."""
        return len(self.model_names)

    def position_columns(self, names, source, foreign=False):
        """
        Return the columns of recorded `names` that give each model joint, in model order.

        Names that hold none of the model joints (another robot's) give None when `foreign`
        is allowed; any other mismatch raises ConfigError naming `source`.
        """
        try:
            return joint_columns(names, self.model_names)
        except JointOrderError as exc:
            if foreign and exc.kind == FOREIGN:
                return None
            raise ConfigError('', f"{source}: joint names {list(names)} do not match the "
                                  f"parameter file's joints {self.model_names}: "
                                  f"{exc}") from None

    def commands_to_model(self, values, source):
        """Return commands (M, n) in command order as model order; checks their length."""
        values = np.asarray(values, dtype=float)
        if values.ndim != 2 or values.shape[1] != self.n:
            got = values.shape[1] if values.ndim == 2 else values.size
            raise ConfigError('', f'{source}: commands have {got} values, expected {self.n} '
                                  f'(one per joint, in joints order {self.command_names})')
        out = np.empty_like(values)
        out[:, self.command_order] = values
        return out


def _finite(run, source):
    for name, array in (('positions', run.q), ('commands', run.command)):
        if not np.all(np.isfinite(array)):
            raise ConfigError('', f'{source}: non-finite {name}')
    return run


def read_csv(path, joints):
    """
    Read the closed-loop demo's CSV: positions `q_*` and commands `command_*` per row.

    The first rows, whose command fields are all empty (ticks before the first command was
    sent), are left out.
    """
    source = str(path)
    rows = list(csv.reader(io.StringIO(read_text(path, 'run file'), newline='')))
    if not rows or 't' not in rows[0]:
        raise ConfigError('', f"{source}: not a demo CSV (no header with a 't' column)")
    header = rows[0]
    commanded = [k for k, h in enumerate(header) if h.startswith('command_')]
    first = next((i for i, row in enumerate(rows[1:], 1)
                  if any(row[k:k + 1] != [''] for k in commanded)), len(rows))
    rows = rows[:1] + rows[first:]
    q_names = [h[2:] for h in header if h.startswith('q_') and not h.startswith('q_des_')]
    c_names = [h[8:] for h in header if h.startswith('command_')]
    try:
        data = np.array(rows[1:], dtype=float).reshape(-1, len(header))
    except ValueError:
        raise ConfigError('', f'{source}: rows are not all numbers of {len(header)} '
                              f'columns') from None
    columns = joints.position_columns(q_names, source)
    q = data[:, [header.index('q_' + q_names[k]) for k in columns]]
    if sorted(c_names) != sorted(joints.command_names):
        raise ConfigError('', f'{source}: commands have {len(c_names)} values, expected '
                              f'{joints.n} (command_* columns {c_names} against joints '
                              f'{joints.command_names})')
    command = data[:, [header.index('command_' + name) for name in joints.command_names]]
    t = data[:, header.index('t')]
    return _finite(Run(Path(path).name, t, q, t.copy(), joints.commands_to_model(
        command, source), timing="the CSV's t column"), source)


def mcap_files(path):
    """Return the ``.mcap`` files of a bag directory (in metadata order) or of a single file."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ConfigError('', f"'{path}': no such file or bag directory")
    listed = []
    metadata = path / 'metadata.yaml'
    if metadata.is_file():
        try:
            info = yaml.safe_load(read_text(metadata, 'bag metadata')) or {}
            listed = [path / p for p in info['rosbag2_bagfile_information'].get(
                'relative_file_paths', [])]
        except (yaml.YAMLError, KeyError, TypeError, AttributeError):
            raise ConfigError('', f"{metadata}: not a rosbag2 metadata file") from None
    files = [p for p in listed if p.suffix == '.mcap'] or sorted(path.glob('*.mcap'))
    if not files:
        raise ConfigError('', f"'{path}': no .mcap files (only MCAP storage is read)")
    return files


def read_mcap(path, joints, states_topic=STATES_TOPIC, commands_topic=COMMANDS_TOPIC):
    """
    Read a rosbag2 MCAP bag (directory or file): JointState positions and the commands.

    A joint state's time is its header stamp, when the position was measured; a command's,
    its send time: the bag's publish time (its log time, the receive time, where the publish
    time is missing: 0): a recorder that falls behind receives late and in bursts, the
    sender's clock does not. Stamps that are zero, do not increase or lie on another clock
    (STAMP_SKEW from the publish times) give way to the states' send times (`Run.timing`
    says why). On several machines the clocks must agree (chrony, PTP). The times (ns)
    become seconds after the bag's first message (float seconds since 1970 would keep only
    about 0.2 us). Joint states are mapped by name on
    every message, and those naming none of the arm's joints (another robot's, on a shared
    topic) are skipped and counted (`Run.foreign`), as the controller skips them.
    """
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    source = str(path)
    states, commands, topics = [], [], set()
    columns, names, origin = None, None, None
    foreign, example = 0, None
    for file in mcap_files(path):
        try:
            with open(file, 'rb') as handle:
                reader = make_reader(handle, decoder_factories=[DecoderFactory()])
                summary = reader.get_summary()
                if summary is not None:
                    topics |= {c.topic for c in summary.channels.values()}
                for _, channel, message, decoded in reader.iter_decoded_messages(
                        topics=[states_topic, commands_topic]):
                    sent = message.publish_time or message.log_time
                    origin = sent if origin is None else origin
                    t = (sent - origin) * 1e-9
                    if channel.topic == states_topic:
                        if list(decoded.name) != names:
                            names = list(decoded.name)
                            columns = joints.position_columns(names, source, foreign=True)
                        if columns is None:
                            foreign += 1
                            example = example or names[:3]
                            continue
                        position = np.asarray(decoded.position, dtype=float)
                        if position.size != len(names):
                            raise ConfigError('', f'{source}: a joint state has {position.size}'
                                                  f' positions for {len(names)} names')
                        header = decoded.header.stamp
                        measured = header.sec * 1000000000 + header.nanosec
                        states.append((t, (measured - origin) * 1e-9 if measured else None,
                                       position[columns]))
                    else:
                        # a stamped command (output.message: joint_state) holds its values
                        # in effort, in joints order as the controller names them
                        values = decoded.effort if hasattr(decoded, 'effort') else decoded.data
                        commands.append((t, np.asarray(values, dtype=float)))
        except (McapError, ValueError, KeyError, EOFError, OSError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError('', f"{file}: cannot read as MCAP: {exc}") from None
    _check_rows(source, joints, (states_topic, states), (commands_topic, commands), topics,
                foreign, example)
    states, repeated = _repeats_dropped(states)
    sent = np.array([row[0] for row in states])
    stamped = [row[1] for row in states]
    timing = _stamp_problem(sent, stamped)
    t = np.array(stamped) if timing is None else sent
    if timing is None and repeated:
        timing = f'{STAMPED}; {repeated} repeated samples dropped'
    order = np.argsort(t, kind='stable')
    commands.sort(key=lambda row: row[0])
    command_t = np.array([row[0] for row in commands])
    run = Run(Path(path).name, t[order], np.array([states[k][2] for k in order]), command_t,
              joints.commands_to_model(np.array([row[1] for row in commands]), source),
              foreign, timing or STAMPED)
    return _finite(run, source)


def _check_rows(source, joints, states, commands, topics, foreign, example):
    """
    Refuse a bag without states of the arm or without commands, or commands of another size.

    `states`, `commands`: ``(topic, rows)`` read; `topics`: those in the bag; `foreign`: the
    joint states skipped for naming none of the arm's joints, `example` the names of one.
    """
    if foreign and not states[1]:
        raise ConfigError('', f"{source}: joint names {example} do not match the parameter "
                              f"file's joints {joints.model_names}: none of the {foreign} "
                              f"joint states on '{states[0]}' names one of them")
    for topic, rows in (states, commands):
        if not rows:
            raise ConfigError('', f"{source}: no messages on topic '{topic}' (topics in the "
                                  f"bag: {sorted(topics)})")
    lengths = {len(v) for _, v in commands[1]}
    if lengths != {joints.n}:
        raise ConfigError('', f'{source}: commands have {sorted(lengths)} values, expected '
                              f'{joints.n} (one per joint, in joints order '
                              f'{joints.command_names})')


def read_diagnostics(path, hardware_id=''):
    """
    Return the bag's `/diagnostics` statuses: ``[(stamp s, name, level, message, figures)]``.

    `figures`: {key: value}, the strings as published; `hardware_id`: only the statuses
    whose hardware_id ends with it (a node's name, say ``continuum_controller``). In the
    order of the bag's files and messages; none when the bag has no `/diagnostics`.
    """
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out = []
    for file in mcap_files(path):
        with open(file, 'rb') as handle:
            reader = make_reader(handle, decoder_factories=[DecoderFactory()])
            for _, _, _, decoded in reader.iter_decoded_messages(topics=['/diagnostics']):
                stamp = decoded.header.stamp.sec + 1e-9 * decoded.header.stamp.nanosec
                out += [(stamp, status.name, int(status.level), status.message,
                         {kv.key: kv.value for kv in status.values})
                        for status in decoded.status if status.hardware_id.endswith(hardware_id)]
    return out


def _repeats_dropped(states):
    """
    Return ``(states, count)``: the joint states less those stamped as the one before.

    A sample sent again (a driver's timer catching up, a sensor not yet updated) repeats its
    measurement time; kept, it would have the stamps not increase, and the whole run fall
    back to its send times, which carry the transport's jitter.
    """
    kept = [row for k, row in enumerate(states)
            if not (k and row[1] is not None and row[1] == states[k - 1][1])]
    return kept, len(states) - len(kept)


def _stamp_problem(sent, stamps):
    """Return why the header `stamps` (s, None: zero) cannot time the states, or None."""
    where = 'the publish times'
    if any(s is None for s in stamps):
        return f'{where}: the header stamps are zero'
    stamps = np.asarray(stamps)
    if np.any(np.diff(stamps) <= 0.0):
        return f'{where}: the header stamps do not increase'
    skew = float(np.median(np.abs(sent - stamps)))
    if skew > STAMP_SKEW:
        return f'{where}: the header stamps lie {skew:.3g} s from them (another clock)'
    return None


def check_run(path):
    """Raise the ConfigError `read_run` gives for a missing or unreadable run; read nothing."""
    if Path(path).suffix.lower() == '.csv':
        check_readable(path, 'run file')
    else:
        mcap_files(path)


def read_run(path, joints, states_topic=STATES_TOPIC, commands_topic=COMMANDS_TOPIC):
    """Read one recorded run by its kind: ``.csv``, else a rosbag2 MCAP bag or file."""
    if Path(path).suffix.lower() == '.csv':
        return read_csv(path, joints)
    return read_mcap(path, joints, states_topic, commands_topic)
