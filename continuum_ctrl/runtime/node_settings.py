"""
The nodes' own settings: timing, threads and start-up, which the ROS-free loop and plant never see.

The runtime's options (`ControllerRuntime(loop, options)`: the period, the starvation and
diagnostics thresholds) and the loop thread's (rate, priority, spin); pure Python, so the
nodes, `apps.node_pair` and the tests split a controller's parameter tree alike:

    node, loop_tree = ControllerNodeSettings.split(tree)   # tree: nested, without `model`

The keys are parameters of the node, top-level or in its own namespaces (`input.*`,
`loop.*`); `split` takes them out of the tree and leaves the rest for
`ControllerSettings.parse` (or `PlantSettings.parse`); `apps.node_pair.check_parameter_file`
parses a file as the nodes would. Units: Hz, s, us, bytes.
"""

from dataclasses import dataclass
from typing import Any, Dict, Tuple, Type, TypeVar

from continuum_ctrl.params import Field, Schema

REALTIME_PRIORITY = Field('integer', 0, 'SCHED_FIFO priority of the loop thread, as '
                          "ros2_control's thread_priority; 0: normal scheduling", 0, 99)

#: the controller node's own parameters (besides `model.*` and the loop's)
CONTROLLER_NODE_FIELDS = {
    'autostart': Field('bool', True, 'configure and activate at start; false: wait '
                       'unconfigured for lifecycle transitions'),
    'rate_hz': Field('number', 500.0, 'control loop rate, Hz', 1.0, 10000.0),
    'state_decimation': Field('integer', 1, 'publish ~/state every N control ticks', 1, 1000),
    'realtime_priority': REALTIME_PRIORITY,
    'stamp_tolerance': Field('number', 0.25, 'joint_states whose non-zero header stamp is '
                             'further than this from the receive time (s) are rejected; 0: '
                             'stamps not checked', 0.0, 3600.0),
    'input.max_joint_states_bytes': Field(
        'integer', 19308, 'joint_states longer than this (serialized, bytes) are rejected '
        "unread; default: a 200-joint robot's (raised to what the configured joints need)",
        1, 2 ** 31 - 1),
    'input.max_trajectory_points': Field('integer', 1000, '~/joint_trajectory messages '
                                         'longer than this many full points are rejected '
                                         'unread', 1, 1000000),
    'diagnostics.chatter_warning': Field(
        'number', 0.5, '/diagnostics warns while the chatter index of a command channel '
        '(its share of power above 10 Hz over the last window) is above this; 0: never',
        0.0, 1.0),
    'loop.max_missed_share': Field('number', 0.2, 'share of the deadlines of the last 0.5 s '
                                   'missed above which the loop reports degraded', 0.01, 0.99),
    'loop.safe_on_overrun': Field('bool', False, 'send the safe command while degraded'),
    'loop.spin_before_us': Field('number', 0.0, 'spin this long before each deadline, us, '
                                 'against the wake-up penalty (at most 200)', 0.0, 200.0),
    'loop.state_phase': Field('number', 0.5, 'share of a period a new joint state waits for '
                              'the tick that uses it: the loop moves its deadlines to keep '
                              'it, so the transport\'s jitter does not make ticks use a state '
                              'one period older (0: fixed deadlines)', 0.0, 0.95),
}
#: the simulator node's own parameters (besides `model.*` and the plant's)
SIMULATOR_NODE_FIELDS = {'realtime_priority': REALTIME_PRIORITY}

S = TypeVar('S', bound='NodeSettings')


class NodeSettings:
    """Base of the node settings: parse the top-level keys of `FIELDS` out of a tree."""

    FIELDS: Dict[str, Field] = {}

    @classmethod
    def split(cls: Type[S], tree: Dict[str, Any]) -> Tuple[S, Dict[str, Any]]:
        """Return ``(settings, rest)``: the node's keys of `tree` parsed, and the others."""
        tops = {name.split('.')[0] for name in cls.FIELDS}
        values = Schema(cls.FIELDS).parse({k: v for k, v in tree.items() if k in tops})
        rest = {k: v for k, v in tree.items() if k not in tops}
        return cls(**{name.split('.')[-1]: values[name] for name in cls.FIELDS}), rest


@dataclass(frozen=True)
class ControllerNodeSettings(NodeSettings):
    """The controller node's settings; `period` is the loop period, s."""

    FIELDS = CONTROLLER_NODE_FIELDS

    autostart: bool
    rate_hz: float
    state_decimation: int
    realtime_priority: int
    stamp_tolerance: float
    max_joint_states_bytes: int
    max_trajectory_points: int
    chatter_warning: float
    max_missed_share: float
    safe_on_overrun: bool
    spin_before_us: float
    state_phase: float

    @property
    def period(self) -> float:
        """Return the control period, s."""
        return 1.0 / self.rate_hz


@dataclass(frozen=True)
class SimulatorNodeSettings(NodeSettings):
    """The simulator node's settings."""

    FIELDS = SIMULATOR_NODE_FIELDS

    realtime_priority: int
