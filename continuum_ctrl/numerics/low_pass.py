"""
A first-order low-pass step on the control loop's short vectors, as one compiled call.

``step = low_pass_step(); step(x, sample, share)`` moves `x` by `share` of the way to
`sample` in place: three NumPy calls and two temporaries otherwise, on every state of a
filtered arm (in the loop thread, at 500 Hz to 1 kHz).
"""

import numpy as np

from continuum_ctrl.numerics.jit import cached_entry_point, compiled


@compiled()
def low_pass_kernel(x, sample, share):
    """``x += share (sample - x)``: `x`, `sample` (n,) float64, `share` in [0, 1]."""
    for i in range(x.size):
        x[i] += share * (sample[i] - x[i])


#: returns the compiled step for (n,) C-contiguous float64 arrays, loaded once per process:
#: call it where a loop is built, not in a tick
low_pass_step = cached_entry_point(low_pass_kernel, np.zeros(1), np.zeros(1), 0.5)
