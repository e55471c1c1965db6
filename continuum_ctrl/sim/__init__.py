"""Simulation without ROS: fixed-step integrators and the embedded closed loop."""

from continuum_ctrl.sim.integrators import INTEGRATORS, rk4_step, semi_implicit_euler_step

__all__ = ['INTEGRATORS', 'rk4_step', 'semi_implicit_euler_step']
