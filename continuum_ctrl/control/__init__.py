"""
Control without ROS: the computed-torque law, reference trajectories, actuation maps.

    from continuum_ctrl.control import computed_torque, ComputedTorqueLaw
"""

from continuum_ctrl.control.computed_torque import ComputedTorqueLaw, computed_torque
from continuum_ctrl.control.gains import validate_gain

__all__ = ['ComputedTorqueLaw', 'computed_torque', 'validate_gain']
