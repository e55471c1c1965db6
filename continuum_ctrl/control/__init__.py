"""
Control without ROS: the computed-torque law, reference trajectories, the control loop.

    from continuum_ctrl.control import computed_torque, ComputedTorqueLaw
    from continuum_ctrl.control import ControllerSettings, ControlLoop   # the node's cycle

The loop and its settings load at first use (PEP 562): a process that needs only a part
(the simulator reads the controller's settings, not its loop) does not import the loop's
references, fused tick and SciPy at start-up.
"""

import importlib

from continuum_ctrl.control.computed_torque import ComputedTorqueLaw, computed_torque
from continuum_ctrl.control.gains import validate_gain

#: public name -> the module that defines it, imported at the name's first use
_LAZY = {'ControlLoop': 'loop', 'ControllerSettings': 'settings'}

__all__ = ['ComputedTorqueLaw', 'computed_torque', 'validate_gain', *_LAZY]


def __getattr__(name):
    """Return `ControlLoop` or `ControllerSettings` from its module (imported now if need be)."""
    if name not in _LAZY:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'{__name__}.{_LAZY[name]}'), name)
