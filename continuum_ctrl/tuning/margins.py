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

python-control's margins (`stability_margins`) are for SISO loops; this loop is MIMO (a PMA
per channel), so the characteristic loci and the exact gain margin stay here, on SciPy.
"""

from dataclasses import dataclass
import math

import numpy as np
from scipy.linalg import rsf2csf, schur, solve_triangular
from scipy.optimize import brentq, linear_sum_assignment

#: frequency points of the loci, log-spaced from LOWEST Hz to the Nyquist frequency
POINTS = 400
#: Hz, the lowest frequency of the loci
LOWEST = 0.05
#: the largest and smallest gain factors searched for the exact gain margin (+-40 / -20 dB)
GAIN_RANGE = (100.0, 0.1)
#: relative tolerance of the gain margin (its root in log k)
TOLERANCE = 1e-3


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


def loop_response(system, hz):
    """
    Return ``G(exp(j w T))`` at the frequencies `hz` (Hz), (len(hz), n, n).

    One Schur form of A (real, made complex: half the cost of a complex one), then a
    triangular solve per frequency.
    """
    T, Z = rsf2csf(*schur(system.A))
    K, B = system.K @ Z, Z.conj().T @ system.Bv
    shifted, diagonal = -T, np.diag_indices(T.shape[0])
    poles = np.diag(T).copy()
    out = np.empty((len(hz), K.shape[0], B.shape[1]), dtype=complex)
    for i, f in enumerate(hz):
        shifted[diagonal] = np.exp(2j * math.pi * f * system.period) - poles
        out[i] = -K @ solve_triangular(shifted, B, check_finite=False)
    return out


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


def _crossing(system, outward, guess=math.inf):
    """
    Return ``(k, chatter Hz)``: where the closed loop turns unstable as k leaves 1 `outward`.

    ``(inf, nan)`` above GAIN_RANGE[0], ``(0, nan)`` below GAIN_RANGE[1]. `guess` (the
    loci's gain margin) starts the scan just below it when the loop is stable there. The
    factor is bracketed by steps of 1.25 and then found by SciPy's `brentq` on the spectral
    radius (continuous in k), in log k.
    """
    limit = GAIN_RANGE[0] if outward else GAIN_RANGE[1]
    factor = 1.25 if outward else 0.8
    stable_k, k = 1.0, 1.0
    start = guess / 1.05
    if outward and 1.0 < start < limit and spectral_radius(system.closed(start)) < 1.0:
        stable_k = k = start
    while True:
        k = k * factor
        if (outward and k > limit) or (not outward and k < limit):
            return (math.inf if outward else 0.0), math.nan
        if spectral_radius(system.closed(k)) >= 1.0:
            break
        stable_k = k

    def excess(log_k):
        return spectral_radius(system.closed(math.exp(log_k))) - 1.0
    at = math.exp(brentq(excess, math.log(stable_k), math.log(k), xtol=TOLERANCE / 2))
    values = np.linalg.eigvals(system.closed(at))
    pole = values[np.argmax(np.abs(values))]
    return at, abs(np.angle(pole)) / (2 * math.pi * system.period)


def loci_margins(loci, hz):
    """
    Return ``(phase deg, delay s, crossover Hz, gain from the loci)`` of the loci (F, n).

    No unit-circle crossing: phase and delay inf. The gain is the smallest ``1/|l|`` > 1 where
    a locus crosses the negative real axis (inf: none).
    """
    phase, delay, crossover, gain = math.inf, math.inf, math.nan, math.inf
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
    return phase, delay, crossover, gain


def bandwidth(G, hz):
    """Return the lowest frequency (Hz) where the sensitivity's largest gain reaches 1/sqrt 2."""
    sensitivity = np.linalg.inv(np.eye(G.shape[1]) + G)
    reached = np.nonzero(np.linalg.norm(sensitivity, 2, axis=(1, 2)) >= math.sqrt(0.5))[0]
    return float(hz[reached[0]] if reached.size else hz[-1])


def loop_margins(system, exact=True, points=POINTS):
    """
    Return the Margins of `system` (a LoopSystem).

    `exact` False: the gain margin from the loci, not the root (for a gain search);
    `chatter` and `gain_low` are then nan and 0.
    """
    radius = spectral_radius(system.closed())
    hz = frequencies(system.period, points)
    G = loop_response(system, hz)
    phase, delay, crossover, loci_gain = loci_margins(characteristic_loci(G), hz)
    if radius >= 1.0:                   # no margin: the pole already outside says where
        values = np.linalg.eigvals(system.closed())
        pole = values[np.argmax(np.abs(values))]
        gain, gain_low = 1.0, 1.0
        chatter = abs(np.angle(pole)) / (2 * math.pi * system.period)
    elif exact:
        gain, chatter = _crossing(system, True, loci_gain)
        gain_low = _crossing(system, False)[0]
    else:
        gain, chatter, gain_low = loci_gain, math.nan, 0.0
    return Margins(radius < 1.0, radius, gain, gain_low, chatter, phase, delay, crossover,
                   bandwidth(G, hz))
