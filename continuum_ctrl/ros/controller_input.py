"""
The controller node's input, serialized messages to checked arrays (model order).

    read = ControllerInput(model, settings)     # settings: ControllerNodeSettings
    q, qd, stamp = read.state(data, t)          # joint_states; qd None: none; stamp 0: none
    times, positions, velocities, accelerations = read.trajectory(data, now)
    pressures = read.pressures(data)            # ~/pressures, Pa, joints order

Each raises `conversion.Rejected` with the kind the node counts: a joint_states kind
(`conversion.REJECT_KINDS`, 'size'), 'trajectory_size' or 'trajectory', 'pressures'. Sizes are
bounded before anything is read (ros/raw_input.py). The task topics (ros/task_topics.py)
count theirs as 'tip_target' and 'tip_measured'.
"""

import numpy as np

from continuum_ctrl.ros.conversion import (FOREIGN, JointStateReader, REJECT_KINDS, Rejected,
                                           stamp_seconds, trajectory_arrays)
from continuum_ctrl.ros.raw_input import commands_reader, joint_states_reader, trajectory_reader

#: rejection kinds of joint_states, counted in /diagnostics
STATE_KINDS = REJECT_KINDS + ('size',)
#: every rejection kind the node counts (`rejected_<kind>` in /diagnostics)
KINDS = STATE_KINDS + ('trajectory', 'trajectory_size', 'pressures', 'tip_target',
                       'tip_measured')
#: those of a bad measurement of this arm: they count against the streak needed to resume.
#: Foreign states (another robot's on a shared topic) do not, nor do states longer than any
#: state of this arm can be ('size'): interleaved with valid ones, as in a flood, each would
#: reset the streak and keep the arm from resuming after a stall until the flood ends.
BAD_STATE_KINDS = tuple(kind for kind in STATE_KINDS if kind not in (FOREIGN, 'size'))


class ControllerInput:
    """The node's readers for `model` (see the module doc); `configure` takes new bounds."""

    def __init__(self, model, settings):
        self.names = model.joint_names
        low, high = (np.asarray(b, dtype=float) for b in model.joint_limits())
        self.reader = JointStateReader(self.names, low, high, settings.stamp_tolerance)
        self.pressure_input = commands_reader(model.n)
        self.configure(settings)

    def configure(self, settings):
        """Take the size bounds and the stamp tolerance of `settings`."""
        self.state_input = joint_states_reader(self.names, settings.max_joint_states_bytes)
        self.trajectory_input = trajectory_reader(self.names, settings.max_trajectory_points)
        self.reader.stamp_tolerance = settings.stamp_tolerance

    def state(self, data, t):
        """Return ``(q, qd or None, stamp)`` of serialized joint_states received at `t` (s)."""
        fields = self.state_input.read(data)
        q, qd = self.reader.read_fields(fields, t)
        return q, qd, fields.stamp

    def trajectory(self, data, now):
        """Return the waypoints of a serialized JointTrajectory, times in s after `now`."""
        try:
            msg = self.trajectory_input.read(data)
        except Rejected as exc:
            raise Rejected('trajectory_size', str(exc)) from None
        start = stamp_seconds(msg.header.stamp)
        return trajectory_arrays(msg, self.names, start - now if start > 0.0 else 0.0)

    def pressures(self, data):
        """Return the measured pressures of a serialized Float64MultiArray (Pa, joints order)."""
        try:
            return np.array(self.pressure_input.read(data).data, dtype=float)
        except Rejected as exc:
            raise Rejected('pressures', str(exc)) from None
