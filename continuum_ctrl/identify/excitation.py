"""
Whether held-out data contradict a continuum fit, and what excitation the runs lacked.

A fit whose held-out R^2 falls below `--min-r2` for some PMA does not predict that PMA's force
on data it was not fitted to, whatever its standard errors say: `identify` refuses to write
it and names, per such PMA, what the runs lacked:
- quiet commands: a loop that chatters (the share of the command's power above
  CHATTER_FREQUENCY, after removing its mean) switches its PMAs through the dead zone and
  faster than the valves follow, so few samples stay pressurised over a window and the
  smoothed force pairs with a pressure the arm never felt;
- pressure above the dead zone: the share of its samples that entered the fit;
- motion: the length's RMS about its mean, against the stroke;
- parameters the data barely pin: a relative standard error above POOR_SE;
- failing all these, noisy positions (a short window passes their noise into the force).
"""

from dataclasses import dataclass

import numpy as np

from continuum_ctrl.control.command_quality import CHATTER_CUTOFF_HZ, chatter_index
from continuum_ctrl.identify.defaults import MIN_R2

#: commands with more than CHATTER_SHARE of their power above this (Hz) chatter
CHATTER_FREQUENCY = CHATTER_CUTOFF_HZ
CHATTER_SHARE = 0.5
#: a PMA whose samples entered the fit less often than this share stayed below the dead zone
MIN_PRESSURISED = 0.3
#: a PMA whose length's RMS about its mean is below this share of the stroke barely moved
MIN_MOTION = 0.025
#: a parameter with a standard error above this share of its value is barely excited
POOR_SE = 0.05
#: positions noisier than this (m RMS) may be what the force's misfit is: name it
NOISY = 2e-6


@dataclass
class PmaExcitation:
    """
    How the runs excited one PMA.

    `chatter`: the share of its command's power above CHATTER_FREQUENCY (the largest over the
    runs); `pressurised`: the share of the training samples that entered the fit;
    `motion_rms` (m): its length's RMS about its mean (the largest over the runs); `motion`:
    that as a share of the stroke; `noise` (m): its positions' noise RMS (the largest over
    the runs); `window` (s): the smoothing window.
    """

    chatter: float
    pressurised: float
    motion_rms: float
    motion: float
    noise: float
    window: float


def chatter_share(command_t, command):
    """
    Return each column's share of the command's power above CHATTER_FREQUENCY, (n,).

    The commands (M, n) at their times `command_t` (s), judged by the package's one chatter
    index (control/command_quality.py); a repeated time keeps its first command, and a run too
    short to tell (under 4 distinct times) or a channel with no finite sample gives 0.
    """
    keep = np.concatenate(([True], np.diff(command_t) > 0.0))
    if np.count_nonzero(keep) < 4:
        return np.zeros(command.shape[1])
    return np.nan_to_num(chatter_index(command_t[keep], command[keep], CHATTER_FREQUENCY))


def chatter_note(share):
    """Return what to say of a PMA whose commands have `share` of their power fast."""
    return (f'its commands chatter ({100 * share:.0f} % of their power above '
            f'{CHATTER_FREQUENCY:g} Hz): quiet the loop first (lower gains.kd, or a '
            'velocity_filter; config/identify_excitation.yaml)')


def poorly_pinned(result):
    """Return the estimates whose standard error exceeds POOR_SE of their value, as text."""
    return [f'{e.label} +-{100 * e.se / abs(e.value):.0f} %' for e in result.estimates
            if e.value and e.se > POOR_SE * abs(e.value)]


def refusals(result, names, threshold=MIN_R2):
    """
    Return one line per PMA whose held-out R^2 is below `threshold`, saying what it lacked.

    `result`: a fit.Result with its per-PMA `excitation` (PmaExcitation); `names`: the
    model's joint names.
    """
    lines = []
    poor = poorly_pinned(result)
    for j, r2 in enumerate(result.r2_test):
        if r2 >= threshold:
            continue
        x = result.excitation[j]
        why = []
        if x.chatter > CHATTER_SHARE:
            why.append(chatter_note(x.chatter))
        if x.pressurised < MIN_PRESSURISED:
            why.append(f'its pressure stayed above the dead zone over a whole window in only '
                       f'{100 * x.pressurised:.0f} % of the samples')
        if x.motion < MIN_MOTION:
            why.append(f'it moved only {1e3 * x.motion_rms:.2g} mm RMS '
                       f'({100 * x.motion:.1f} % of the stroke)')
        if poor:
            why.append(f'the data barely pin {", ".join(poor)}')
        if not why and x.noise > NOISY:
            # a short window passes the positions' noise into the force through qdd
            why.append(f'its positions are noisy ({1e6 * x.noise:.2g} um RMS) for a '
                       f'{1e3 * x.window:.0f} ms window: a longer --window')
        if not why:
            why.append('the model does not explain its force (check the joint order, the '
                       'masses and the valves: --fit ...,time_constant,delay)')
        figure = (f'held-out R^2 {r2:.3f} < {threshold:g}' if np.isfinite(r2) else
                  'no held-out sample above the dead zone')
        lines.append(f'{names[j]}: {figure}: ' + '; '.join(why))
    return lines
