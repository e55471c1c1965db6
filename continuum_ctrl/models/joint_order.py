"""
Recorded or streamed joint names to the model's order: the one rule for every reader.

A `sensor_msgs/JointState` (live, or in a bag) or a CSV header lists joints in any order,
possibly with other joints besides the model's. `joint_columns` finds each model joint in it,
or says why it cannot: a state that names none of the model joints is ``foreign`` (another
robot's on a shared topic, or joints misnamed in the configuration); one that repeats a name
or lacks a model joint is a bad state of this arm (``names``). The controller rejects and
counts both (ros/conversion.py); identification skips foreign states and refuses the rest
(identify/data.py).
"""

import numpy as np

#: states naming none of the model joints: someone else's, not a bad measurement of this arm
FOREIGN = 'foreign'
#: states of this arm with a joint missing or a name repeated
NAMES = 'names'


class JointOrderError(ValueError):
    """Names that give no model order; `kind` is FOREIGN or NAMES, the message says why."""

    def __init__(self, kind, reason):
        super().__init__(reason)
        self.kind = kind


def joint_columns(names, joints):
    """
    Return the index in `names` of each of `joints` (model order), an int array.

    Names not among `joints` are ignored. Raises JointOrderError: FOREIGN when `names`
    holds none of `joints`; NAMES when a name repeats or some of `joints` are missing.
    """
    where = {}
    twice = None
    for i, name in enumerate(names):
        if twice is None and name in where:
            twice = name
        where[name] = i
    missing = [name for name in joints if name not in where]
    if len(missing) == len(joints):
        raise JointOrderError(FOREIGN, f'names none of the joints {list(joints)} (first '
                                       f'names: {list(names[:3])})')
    if twice is not None:
        raise JointOrderError(NAMES, f"joint '{twice}' appears twice")
    if missing:
        raise JointOrderError(NAMES, f'joints {missing} are missing')
    return np.array([where[name] for name in joints], dtype=int)
