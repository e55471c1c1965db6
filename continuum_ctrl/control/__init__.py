"""
Control without ROS: the computed-torque law, reference trajectories, the control loop.

    from continuum_ctrl.control import computed_torque, ComputedTorqueLaw
    from continuum_ctrl.control import ControllerSettings, ControlLoop   # the node's cycle
"""

from continuum_ctrl.control.computed_torque import ComputedTorqueLaw, computed_torque
from continuum_ctrl.control.gains import validate_gain
from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.settings import ControllerSettings

__all__ = ['ComputedTorqueLaw', 'computed_torque', 'validate_gain', 'ControlLoop',
           'ControllerSettings']
