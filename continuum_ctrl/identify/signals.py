"""
Signals of a run on a uniform time grid: smoothed positions and their derivatives, pressures.

Positions are interpolated onto a grid at the median sample period (over the times the run
gives them: the header stamps of a bag, identify/data.py) and differentiated by a short
non-causal Savitzky-Golay filter (cubic, `differentiate`): velocities and accelerations come
from the positions alone, so bags without velocities (a driver that sends lengths only) serve
as well, and noise is smoothed by fitting a cubic over the window on both sides of each
sample, at no phase lag, which only offline data allow. Forces computed from them (the
model's inverse dynamics, nonlinear in the state) are then smoothed by a longer
Savitzky-Golay filter (the window, in seconds), and so is everything else on both sides of
the dynamics: the same linear filter on both sides keeps the equation exact, and smoothing
the force after the nonlinear model (not the state before it) keeps fast motions from
biasing it. Commands hold from
their log time until the next one; `applied_mean` predicts what the actuator makes of them: a
pure delay, then a first-order lag ``T dp/dt = u - p``, averaged exactly over each grid cell,
which is what pairs with the sample there.
"""

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import minimum_filter1d
from scipy.signal import savgol_coeffs, savgol_filter

from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.params import ConfigError

#: default Savitzky-Golay window, s: a cut-off near 12 Hz, above any excitation
DEFAULT_WINDOW = 0.1
#: the differentiating window is this share of the smoothing window
DERIVATIVE_SHARE = 0.3
#: polynomial order of the Savitzky-Golay filter
POLYORDER = 3
#: the cubic smoother's -3 dB cut-off (Hz) times its window (s), nearly whatever the sample
#: rate (1.065-1.068 for windows of 25 to 151 samples)
CUTOFF_TIMES_WINDOW = 1.067


@dataclass
class Grid:
    """
    A run on a uniform grid: `t` (N,) s, `dt` s, `window` (samples) of the smoother.

    `state`: ``(q, qd, qdd)`` (N, n) from the short differentiator over `short` samples, for
    the model; `q`, `qd`: the same smoothed by the window; `q_raw`: the positions on the
    grid. `timing`: what the positions' times were (identify/data.py `Run.timing`).
    """

    t: np.ndarray
    dt: float
    window: int
    state: tuple
    q: np.ndarray
    qd: np.ndarray
    short: int
    timing: str
    q_raw: np.ndarray

    def how(self):
        """Return how the velocities and accelerations were obtained, for the report."""
        return (f'velocities and accelerations: cubic Savitzky-Golay derivatives of the '
                f'positions over {self.short} samples ({self.short * self.dt * 1e3:.3g} ms, '
                f'zero phase) on a {self.dt * 1e3:.3g} ms grid, positions timed by '
                f'{self.timing}')

    def noise(self):
        """
        Return the positions' noise on the grid (n,), m or rad RMS: what the short cubic leaves.

        The filter projects onto cubics, so white noise of variance ``s^2`` leaves
        ``s^2 (1 - c0)`` (``c0``: the filter's own weight of the middle sample); a smooth
        motion leaves next to nothing over the short window. Samples off the grid's times are
        interpolated, which averages some of their noise away (down to 0.7 of it halfway).
        """
        c0 = savgol_coeffs(self.short, POLYORDER)[self.short // 2]
        residual = self.q_raw - self.state[0]
        return np.sqrt(np.mean(residual ** 2, axis=0) / (1.0 - c0))

    def smooth(self, x):
        """Return `x` (N, n) through the grid's Savitzky-Golay smoother (zero phase)."""
        return savgol_filter(x, self.window, POLYORDER, axis=0)

    def lowest(self, x):
        """Return the smallest value of `x` (N, n) within the filter window around each sample."""
        return minimum_filter1d(x, self.window, axis=0)


def window_samples(dt, window=None):
    """Return the odd Savitzky-Golay window in samples for a period `dt` and a window in s."""
    seconds = DEFAULT_WINDOW if window is None else window
    samples = int(round(seconds / dt)) | 1
    if samples < POLYORDER + 2:
        raise ConfigError('--window', f'{seconds} s is {samples} samples at {dt:.4g} s; needs '
                                      f'at least {POLYORDER + 2}')
    return samples


def window_for_cutoff(hz):
    """Return the smoothing window (s) whose -3 dB cut-off is `hz` (Hz)."""
    return CUTOFF_TIMES_WINDOW / hz


def grid(run, window=None):
    """Return the run's positions on a uniform grid, smoothed and differentiated."""
    t = run.t
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    if not dt > 0.0:
        raise ConfigError('', f'{run.name}: joint-state log times do not increase')
    samples = window_samples(dt, window)
    times = t[0] + dt * np.arange(int(np.floor((t[-1] - t[0]) / dt)) + 1)
    if len(times) < 3 * samples:
        raise ConfigError('', f'{run.name}: too little data: {len(times)} samples '
                              f'({times[-1] - times[0]:.2f} s), need at least {3 * samples}')
    q = np.column_stack([np.interp(times, t, column) for column in run.q.T])
    short = max(int(round(DERIVATIVE_SHARE * samples)) | 1, POLYORDER + 2)
    state = differentiate(q, dt, short)
    smooth = [savgol_filter(x, samples, POLYORDER, axis=0) for x in state[:2]]
    return Grid(times, dt, samples, state, *smooth, short, run.timing, q)


def differentiate(q, dt, samples):
    """
    Return ``(q, qd, qdd)`` (N, n) of positions `q` (N, n) on a uniform grid of period `dt` s.

    A cubic Savitzky-Golay filter over `samples` (odd) samples: each sample's cubic
    least-squares fit over the window around it, and that cubic's value and derivatives there
    (m, m/s, m/s^2 for lengths). Zero phase: it looks ahead as far as behind.
    """
    return tuple(savgol_filter(q, samples, POLYORDER, deriv=d, delta=dt, axis=0)
                 for d in range(3))


@compiled()
def _cell_means(switch, values, edges, time_constant, work, out):
    """
    Fill `out` (len(edges) - 1, n) with the first-order lag's mean between consecutive edges.

    The input holds ``values[k]`` from ``switch[k]`` (``values[0]`` before); the lag starts at
    rest at ``values[0]``. One pass over edges and switches, exact between switches:
    ``mean p = (int u - T [p]) / cell``. `work`: (3, n) scratch.
    """
    n = work.shape[1]
    p, total, p_start = work[0], work[1], work[2]
    for j in range(n):
        total[j] = 0.0
    k = 0
    t_now = min(switch[0], edges[0])
    for j in range(n):
        p[j] = values[0, j]
    for i in range(edges.shape[0]):
        while True:
            last = k + 1 >= switch.shape[0] or switch[k + 1] > edges[i]
            t_next = edges[i] if last else switch[k + 1]
            span = t_next - t_now
            if span > 0.0:
                a = np.exp(-span / time_constant) if time_constant > 0.0 else 0.0
                for j in range(n):
                    total[j] += values[k, j] * span
                    p[j] = values[k, j] + (p[j] - values[k, j]) * a
                t_now = t_next
            if last:
                break
            k += 1
        if i > 0:
            cell = edges[i] - edges[i - 1]
            for j in range(n):
                out[i - 1, j] = (total[j] - time_constant * (p[j] - p_start[j])) / cell
        for j in range(n):
            total[j] = 0.0
            p_start[j] = p[j]


def applied_mean(command_t, command, times, time_constant=0.0, delay=0.0):
    """
    Return the applied pressure's mean over each grid cell (N, n), and where it is defined.

    The commands (held from `command_t`, s) reach the actuator after `delay` s and pass a
    first-order lag of `time_constant` s starting at rest at the first command's value. The
    cell of ``times[i]`` (a uniform grid) spans half a period either side: the mean is what a
    smoother sees of a piecewise-constant command, and a command logged at a sample's own time
    counts half in its cell (a point value would take the command before or after it as
    rounding falls).
    """
    dt = float(times[1] - times[0])
    edges = np.append(times - 0.5 * dt, times[-1] + 0.5 * dt)
    switch = np.ascontiguousarray(command_t + delay, dtype=float)
    out = np.empty((len(times), command.shape[1]))
    _cell_means(switch, np.ascontiguousarray(command, dtype=float), edges,
                float(time_constant), np.empty((3, command.shape[1])), out)
    return out, edges[:-1] >= switch[0]
