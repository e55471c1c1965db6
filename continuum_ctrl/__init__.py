"""
continuum_ctrl: computed-torque control of continuum (PMA) and rigid arms.

The dynamics, control and simulation code imports no ROS; ROS lives in
`continuum_ctrl.ros` only.
"""

from continuum_ctrl.params import ConfigError
from continuum_ctrl.models import load_model

__all__ = ['ConfigError', 'load_model']
