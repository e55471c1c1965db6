"""
The simulator's `commands` of either `output.message` kind: values in `joints` order, a stamp.

- `multiarray`: a std_msgs/Float64MultiArray of the command values in `joints` order; no
  stamp (the receive time stands in);
- `joint_state`: a sensor_msgs/JointState naming each configured joint once, in any order
  (other names are ignored, as `joint_states` are read: models/joint_order.py), one `effort`
  per name (N, N m or Pa, as `output.mode` says), positions and velocities ignored; its
  header stamp is when the command was issued, s on the receiver's clock (a zero stamp is
  the epoch: every such command is late).
Both are taken serialized and rejected unread above their size bound (ros/raw_input.py); a
JointState is rejected whole (Rejected) with a joint missing or repeated (``names``) or an
effort count unlike the names' (``length``). Values are checked by the plant (finite, within
the pressure range).
"""

import numpy as np

from continuum_ctrl.models.joint_order import joint_columns, JointOrderError
from continuum_ctrl.ros.conversion import Rejected, stamp_seconds
from continuum_ctrl.ros.raw_input import commands_reader, joint_state_commands_reader


class CommandInput:
    """
    Read serialized commands of `message` kind for `joint_names` (joints order).

    ``read(data)`` returns ``(values, stamp)``: the values in joints order and the stamp, s
    (None for a Float64MultiArray); raises Rejected with the reason.
    """

    def __init__(self, joint_names, message):
        self.joint_names = list(joint_names)
        self.stamped = message == 'joint_state'
        self._reader = (joint_state_commands_reader(self.joint_names) if self.stamped
                        else commands_reader(len(self.joint_names)))
        self._names, self._columns = None, None     # the names mapped last, their columns

    def read(self, data):
        """Return ``(values, stamp or None)`` of the serialized command `data` (bytes)."""
        msg = self._reader.read(data)
        if not self.stamped:
            return msg.data, None
        if len(msg.effort) != len(msg.name):
            raise Rejected('length', f'{len(msg.effort)} efforts for {len(msg.name)} names')
        if msg.name != self._names:
            try:
                self._columns = joint_columns(msg.name, self.joint_names)
            except JointOrderError as exc:
                raise Rejected(exc.kind, str(exc)) from None
            self._names = msg.name
        return np.asarray(msg.effort)[self._columns], stamp_seconds(msg.header.stamp)
