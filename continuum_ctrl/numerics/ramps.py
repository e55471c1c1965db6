"""
The minimum-jerk ramp, compiled.

Its one definition, for the joint references (as Python), their compiled samplers and the
task-space step.
"""

from continuum_ctrl.numerics.jit import compiled


@compiled()
def minimum_jerk_ramp(elapsed, duration):
    """
    Return the minimum-jerk ramp ``s`` from 0 to 1 and its time derivatives ``(s, s', s'')``.

    ``s = 10 x^3 - 15 x^4 + 6 x^5`` with ``x = elapsed/duration`` clipped to [0, 1]: zero slope
    and curvature at both ends, so blends built from it are C2. Times in seconds. The Python
    references run it as Python (`.py_func`, control.references).
    """
    x = min(max(elapsed / duration, 0.0), 1.0)
    return (x ** 3 * (10.0 + x * (-15.0 + 6.0 * x)),
            x ** 2 * (30.0 + x * (-60.0 + 30.0 * x)) / duration,
            x * (60.0 + x * (-180.0 + 120.0 * x)) / duration ** 2)
