"""
How quiet a recorded command is, per channel: its total variation rate and chatter index.

    rate = variation_rate(t, command)         # (n,): sum |dc| / duration, command units/s
    share = chatter_index(t, command)         # (n,): power share above 10 Hz, 0..1

`t` (N,) s, increasing, possibly not uniform; `command` (N,) or (N, n), one column per
channel: PMA pressures (Pa: Pa/s) or efforts (N, N m: N/s, N m/s). A NaN sample is a gap:
no difference spans it, and the resampled series bridges it by a straight line. The tracking
error hides chatter: the valves' lag filters a command swinging at 25 Hz before the arm feels
it, so only the command shows it (issue 39). The controller's runtime keeps an online
estimate of both per diagnostics window (runtime/command_watch.py); these are the offline
ones, of a recording, by which the demo, `continuum-ctrl simulate` and the tests judge a run.
"""

import numpy as np

#: the frequency above which a command's power counts as chatter, Hz: above the arm's
#: tracking bandwidth, below the 25 Hz switching seen on the MuJoCo arm
CHATTER_CUTOFF_HZ = 10.0


def _series(t, command):
    """Return `t` (N,) and `command` as (N, n) float arrays, checked; ValueError if bad."""
    t = np.asarray(t, dtype=float)
    command = np.asarray(command, dtype=float)
    if command.ndim == 1:
        command = command[:, None]
    if t.ndim != 1 or command.ndim != 2 or command.shape[0] != t.size:
        raise ValueError(f'need times (N,) and commands (N,) or (N, n), got shapes '
                         f'{t.shape} and {command.shape}')
    if t.size < 2 or command.shape[1] == 0:
        raise ValueError(f'need at least 2 samples of at least one channel, got shape '
                         f'{command.shape}')
    if not np.all(np.isfinite(t)) or not np.all(np.diff(t) > 0.0):
        raise ValueError('the times must be finite and increasing')
    return t, command


def variation_rate(t, command):
    """
    Return each channel's total variation per second, (n,): sum |dc| over the time it spans.

    Only differences of two finite samples count, and only their intervals make up the
    duration, so a gap neither adds a jump nor dilutes the rate. A channel without two
    consecutive finite samples gives NaN. A sinusoid of amplitude A and frequency f: 4 A f.
    """
    t, command = _series(t, command)
    steps = np.abs(np.diff(command, axis=0))
    valid = np.isfinite(steps)
    duration = np.sum(np.where(valid, np.diff(t)[:, None], 0.0), axis=0)
    total = np.sum(np.where(valid, steps, 0.0), axis=0)
    with np.errstate(invalid='ignore', divide='ignore'):
        return np.where(duration > 0.0, total / duration, np.nan)


def chatter_index(t, command, cutoff=CHATTER_CUTOFF_HZ):
    """
    Return each channel's share of power above `cutoff` Hz, (n,), 0..1.

    The series is resampled at its median step (linear, over the finite samples), its
    straight-line trend removed, Hann-windowed (against the leakage of a slow motion into
    the high band) and its periodogram split at `cutoff`. A constant channel gives 0; one
    with fewer than 2 finite samples, or a series under 4 steps, NaN. ValueError when
    `cutoff` is not below the resampled series' Nyquist frequency.
    """
    t, command = _series(t, command)
    step = float(np.median(np.diff(t)))
    if not 0.0 < cutoff < 0.5 / step:
        raise ValueError(f'the cutoff must be > 0 and below the Nyquist frequency '
                         f'{0.5 / step:g} Hz of the samples, got {cutoff!r}')
    grid = t[0] + step * np.arange(int(np.floor((t[-1] - t[0]) / step + 1e-9)) + 1)
    window = np.hanning(grid.size)
    high = np.fft.rfftfreq(grid.size, step) >= cutoff
    out = np.full(command.shape[1], np.nan)
    for k, column in enumerate(command.T):
        finite = np.isfinite(column)
        if np.count_nonzero(finite) < 2 or grid.size < 4:
            continue
        if np.ptp(column[finite]) == 0.0:           # constant: no power, none above
            out[k] = 0.0
            continue
        x = np.interp(grid, t[finite], column[finite])
        x = x - np.polyval(np.polyfit(grid - grid[0], x, 1), grid - grid[0])
        power = np.abs(np.fft.rfft(window * x)) ** 2
        out[k] = float(np.sum(power[high]) / np.sum(power[1:]))
    return out
