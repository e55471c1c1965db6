"""Simulation without ROS: the plants, the embedded closed loop, the integrators (from models)."""

from continuum_ctrl.models.integrators import INTEGRATORS, rk4_step, semi_implicit_euler_step

__all__ = ['INTEGRATORS', 'rk4_step', 'semi_implicit_euler_step']
