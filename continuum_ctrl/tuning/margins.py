"""
Stability margins of a LoopSystem broken at the plant input, all channels alike.

    margins = loop_margins(system)       # Margins: GM, PM, delay margin, bandwidth

The loop transfer is ``G(z) = -K (zI - A)^-1 Bv`` (n x n, the closed loop ``det(I + G) = 0``)
on the unit circle ``z = exp(j w T)`` up to the Nyquist frequency. Its eigenvalues, the
characteristic loci, give the simultaneous margins (every PMA's gain or delay changed alike,
as an area error or a late sensor would): the phase margin where a locus crosses the unit
circle, the delay margin ``pm / w`` there (a delay multiplies every locus by
``exp(-j w delay)``; for whole ticks it is exact), the gain margin where a locus crosses the
negative real axis. The gain margin is then found exactly: the smallest factor ``k > 1`` (and
the largest ``k < 1``) at the plant input for which the closed loop's spectral radius reaches
1, a root of it found by SciPy's `brentq`; the frequency of the pole that leaves the unit
circle there is the frequency the loop would chatter at. The bandwidth is the lowest
frequency at which the sensitivity ``(I + G)^-1`` reaches -3 dB in some direction: below it,
feedback rejects a force error at the plant input by at least that much in every direction.

All of it is computed on the closed loop with its plant-input chain folded (LoopSystem's
`folded`: 40 % fewer states behind 76 + 38 ms valves): G from the closed loop's response (one
Schur form, which also gives the closed loop's poles), the spectral radius from its poles.

python-control's margins (`stability_margins`) are for SISO loops; this loop is MIMO (a PMA
per channel), so the characteristic loci and the exact gain margin stay here, on SciPy.
"""

from dataclasses import dataclass
import functools
import math

import numpy as np
from scipy.linalg import matrix_balance, rsf2csf, schur, solve_triangular
from scipy.optimize import brentq, linear_sum_assignment

#: frequency points of the loci, log-spaced from LOWEST Hz to the Nyquist frequency
POINTS = 400
#: Hz, the lowest frequency of the loci
LOWEST = 0.05
#: the largest and smallest gain factors searched for the exact gain margin (+-40 / -20 dB)
GAIN_RANGE = (100.0, 0.1)
#: relative tolerance of the gain margin (its root in log k)
TOLERANCE = 1e-3
#: the factor either side of the loci's gain margin that brackets the exact one (behind
#: 76 + 38 ms valves the loci's was 0.02 % from the exact at 400 points, 0.2 % at 120)
NEAR = 1.02


@dataclass(frozen=True)
class Margins:
    """
    A loop's margins.

    `stable` (closed loop at k = 1), `radius` (its spectral radius);
    `gain` the gain margin (factor > 1; inf: none up to GAIN_RANGE), `gain_low` the factor
    < 1 below which it is unstable (0: none), `chatter` (Hz) the frequency of the pole that
    leaves the unit circle at `gain`; `phase` (deg), `delay` (s) and `crossover` (Hz, the
    crossing that sets `delay`) from the loci; `bandwidth` (Hz).
    """

    stable: bool
    radius: float
    gain: float
    gain_low: float
    chatter: float
    phase: float
    delay: float
    crossover: float
    bandwidth: float

    @property
    def gain_db(self):
        """Return the gain margin in dB."""
        return 20.0 * math.log10(self.gain) if self.gain > 0.0 else -math.inf


def frequencies(period, points=POINTS):
    """Return the loci's frequencies, Hz: log-spaced from LOWEST to the Nyquist frequency."""
    return np.geomspace(LOWEST, 0.5 / period, points)


def closed_response(system, hz):
    """
    Return ``(H, poles)``: the closed loop's ``u / w`` at the frequencies `hz` (Hz).

    `w` a force added at the plant input (``v = u + w``), ``H = K (zI - A_closed)^-1 B_w(z)``,
    (len(hz), n, n), on the system's FoldedLoop; `poles` its poles. One Schur form of the
    closed loop (real, made complex: half the cost of a complex one) gives both, then a
    triangular solve per frequency. The loop is balanced first (SciPy's `matrix_balance`, a
    diagonal scaling): its states span ten decades, and unbalanced the Schur form lost
    1e-4 of G at 0.05 Hz behind 76 + 38 ms valves (balanced: 2e-9, against a dense solve).
    """
    folded = system.folded
    balanced, (scale, _) = matrix_balance(folded.closed(), permute=False, separate=True)
    T, Z = rsf2csf(*schur(balanced))
    left = Z.conj().T / scale
    N, n = folded.direct.shape
    K = (folded.K * scale) @ Z
    blocks = (left @ np.hstack([folded.direct, *folded.taps])).reshape(N, -1, n)
    z = np.exp(2j * math.pi * np.asarray(hz) * system.period)
    delays = z[:, None] ** -np.concatenate([[0], folded.ticks])
    inflows = (delays @ blocks.transpose(1, 0, 2).reshape(-1, N * n)).reshape(len(z), N, n)
    shifted, diagonal = -T, np.diag_indices(N)
    poles = np.diag(T).copy()
    out = np.empty((len(z), K.shape[0], n), dtype=complex)
    for i in range(len(z)):
        shifted[diagonal] = z[i] - poles
        out[i] = K @ solve_triangular(shifted, inflows[i], check_finite=False)
    return out, poles


def loop_response(system, hz):
    """
    Return ``G(exp(j w T))`` at the frequencies `hz` (Hz), (len(hz), n, n).

    From the closed loop's `H` (`closed_response`): ``G = -(I + H)^-1 H``, since
    ``H = (I + G)^-1 (-G)`` with ``(I + G)^-1 = I + H``, the sensitivity.
    """
    return _opened(closed_response(system, hz)[0])


def _opened(H):
    """Return the loop transfer ``G = -(I + H)^-1 H`` of the closed loop's `H` (F, n, n)."""
    return -np.linalg.solve(np.eye(H.shape[1]) + H, H)


def characteristic_loci(G):
    """Return the eigenvalues of each G (F, n, n) as (F, n) continuous curves over F."""
    values = np.linalg.eigvals(G)
    loci = np.empty(G.shape[:2], dtype=complex)
    loci[0] = values[0]
    for i in range(1, len(G)):
        rows, cols = linear_sum_assignment(np.abs(loci[i - 1][:, None] - values[i][None, :]))
        loci[i, rows] = values[i, cols]
    return loci


def spectral_radius(matrix):
    """Return the largest eigenvalue magnitude of `matrix`."""
    return float(np.max(np.abs(np.linalg.eigvals(matrix))))


def _chatter(poles, period):
    """Return the frequency (Hz) of the largest of `poles`, per tick of `period` s."""
    pole = poles[np.argmax(np.abs(poles))]
    return abs(np.angle(pole)) / (2 * math.pi * period)


def _crossing(system, outward, guess):
    """
    Return ``(k, chatter Hz)``: where the closed loop turns unstable as k leaves 1 `outward`.

    ``(inf, nan)`` above GAIN_RANGE[0], ``(0, nan)`` below GAIN_RANGE[1]. `guess` (the
    loci's factor, inf or 0 for none) brackets it within NEAR when the loop is stable just
    inside it; else the factor is bracketed by steps of 1.25 from 1. The root is then found
    by SciPy's `brentq` on the spectral radius (continuous in k), in log k.
    """
    sign = 1.0 if outward else -1.0
    limit = math.log(GAIN_RANGE[0] if outward else GAIN_RANGE[1])
    step = sign * math.log(1.25)
    poles = functools.lru_cache(maxsize=None)(lambda log_k: system.poles(math.exp(log_k)))

    def excess(log_k):
        return float(np.max(np.abs(poles(log_k)))) - 1.0
    inside, ahead = 0.0, step
    if 0.0 < guess < math.inf:
        near = math.log(guess) - sign * math.log(NEAR)
        if sign * near > 0.0 and sign * (limit - near) > 0.0 and excess(near) < 0.0:
            inside, ahead = near, near + 2.0 * sign * math.log(NEAR)
    while True:
        if sign * (ahead - limit) > 0.0:
            return (math.inf if outward else 0.0), math.nan
        if excess(ahead) >= 0.0:
            break
        inside, ahead = ahead, ahead + step
    at = brentq(excess, min(inside, ahead), max(inside, ahead), xtol=TOLERANCE / 2)
    return math.exp(at), _chatter(poles(at), system.period)


def loci_margins(loci, hz):
    """
    Return ``(phase deg, delay s, crossover Hz, gain, gain_low)`` of the loci (F, n).

    No unit-circle crossing: phase and delay inf. The gain is the smallest ``1/|l|`` > 1 where
    a locus crosses the negative real axis (inf: none), `gain_low` the largest < 1 (0: none).
    """
    phase, delay, crossover, gain, gain_low = math.inf, math.inf, math.nan, math.inf, 0.0
    magnitude = np.abs(loci)
    w = 2 * math.pi * hz
    for i in range(loci.shape[1]):
        above = magnitude[:, i] >= 1.0
        for k in np.nonzero(above[1:] != above[:-1])[0]:
            share = (1.0 - magnitude[k, i]) / (magnitude[k + 1, i] - magnitude[k, i])
            value = loci[k, i] + share * (loci[k + 1, i] - loci[k, i])
            at = w[k] + share * (w[k + 1] - w[k])
            margin = math.pi - abs(np.angle(value))
            phase = min(phase, math.degrees(margin))
            if margin / at < delay:
                delay, crossover = margin / at, at / (2 * math.pi)
        im = loci[:, i].imag
        for k in np.nonzero(np.signbit(im[1:]) != np.signbit(im[:-1]))[0]:
            share = im[k] / (im[k] - im[k + 1])
            value = loci[k, i] + share * (loci[k + 1, i] - loci[k, i])
            if value.real < 0.0 and abs(value) < 1.0:
                gain = min(gain, 1.0 / abs(value))
            elif value.real < 0.0:
                gain_low = max(gain_low, 1.0 / abs(value))
    return phase, delay, crossover, gain, gain_low


def bandwidth(sensitivity, hz):
    """
    Return the lowest frequency (Hz) where the sensitivity's largest gain reaches 1/sqrt 2.

    `sensitivity`: ``(I + G)^-1`` at `hz`, (F, n, n): the closed loop's ``I + H``.
    """
    reached = np.nonzero(np.linalg.norm(sensitivity, 2, axis=(1, 2)) >= math.sqrt(0.5))[0]
    return float(hz[reached[0]] if reached.size else hz[-1])


def loop_margins(system, exact=True, points=POINTS):
    """
    Return the Margins of `system` (a LoopSystem).

    `exact` False: the gain margin from the loci, not the root (for a gain search);
    `chatter` and `gain_low` are then nan and 0.
    """
    hz = frequencies(system.period, points)
    H, poles = closed_response(system, hz)
    G = _opened(H)
    radius = float(np.max(np.abs(poles)))
    phase, delay, crossover, loci_gain, loci_low = loci_margins(characteristic_loci(G), hz)
    if radius >= 1.0:                   # no margin: the pole already outside says where
        gain, gain_low = 1.0, 1.0
        chatter = _chatter(poles, system.period)
    elif exact:
        gain, chatter = _crossing(system, True, loci_gain)
        gain_low = _crossing(system, False, loci_low)[0]
    else:
        gain, chatter, gain_low = loci_gain, math.nan, 0.0
    return Margins(radius < 1.0, radius, gain, gain_low, chatter, phase, delay, crossover,
                   bandwidth(np.eye(H.shape[1]) + H, hz))
