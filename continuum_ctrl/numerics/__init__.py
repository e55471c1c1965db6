"""
Numerics under the models (no ROS, nothing of the arm): the Numba wrapper, short-vector kernels.

- `jit`: ``compiled`` kernels without Numba's runtime, cached on disk, and their entry points;
- `clipping`: element-wise clipping and the loop's effort limiter, compiled;
- `so3`: the SO(3) maps ``log3``, ``exp3`` and the Rodrigues assembly ``rodrigues``, compiled;
- `cholesky`: small SPD factorizations and solves, compiled;
- `ramps`: the minimum-jerk ramp, compiled.
"""
