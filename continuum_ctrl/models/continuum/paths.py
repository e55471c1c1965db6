"""
Compiled tip path tables: rows of polynomial segments (`path_segment`), read by `path_sample`.

A table is a C-contiguous float64 array (rows, `PATH_ROW`); `segment_layout` names the parts
of one row (`Segment`), in Python and inside compiled code alike (views, as `data.layout`).
Polynomial paths, minimum-jerk moves and circles with a polynomial phase all take this form
(`control.task_space.path_table` builds the tables of its paths).
"""

from collections import namedtuple
import math

import numpy as np

from continuum_ctrl.models.continuum.data import also_compiled, take
from continuum_ctrl.numerics.jit import compiled

#: polynomial coefficients per segment and coordinate (ascending powers of tau)
PATH_COEFFICIENTS = 8

#: one row of a path table: its start time [s] (1,), circle radius [m] (1,), the ascending
#: coefficients of the centre's x, y, z (3, PATH_COEFFICIENTS) [m, m/s^k] and of the circle's
#: phase (PATH_COEFFICIENTS,) [rad, rad/s^k], the circle's in-plane axes u and v (3,)
Segment = namedtuple('Segment', 'start radius position phase u v')


@also_compiled
def segment_layout(row):
    """Return ``(size, Segment)``: the named views of a path table's `row` (None: measure)."""
    at, start = take(row, 0, (1,))
    at, radius = take(row, at, (1,))
    at, position = take(row, at, (3, PATH_COEFFICIENTS))
    at, phase = take(row, at, (PATH_COEFFICIENTS,))
    at, u = take(row, at, (3,))
    at, v = take(row, at, (3,))
    return at, Segment(start, radius, position, phase, u, v)


#: floats in one row of a path table
PATH_ROW = segment_layout(None)[0]


def path_segment(start, coefficients, radius=0.0, phase=(0.0,), u=(1.0, 0.0, 0.0),
                 v=(0.0, 1.0, 0.0)):
    """
    Return one row of a tip path table, from `start` [s] until the next row's start.

    The tip at ``tau = t - start``: ``P(tau) + radius (cos th u + sin th v)``, ``P`` the
    polynomial of ascending `coefficients` (k, 3) [m, m/s^k] and ``th`` that of `phase` [rad,
    rad/s^k] (k <= PATH_COEFFICIENTS each).
    """
    row = np.zeros(PATH_ROW)
    named = segment_layout(row)[1]
    named.start[0], named.radius[0] = start, radius
    c = np.asarray(coefficients, dtype=float).reshape(-1, 3)
    named.position[:, :len(c)] = c.T
    named.phase[:len(phase)] = phase
    named.u[:], named.v[:] = u, v
    return row


@compiled()
def _polynomial(coefficients, tau):
    """Return the value and two tau-derivatives of the polynomial of ascending `coefficients`."""
    p, dp, ddp = 0.0, 0.0, 0.0
    for k in range(PATH_COEFFICIENTS - 1, -1, -1):
        ddp = ddp * tau + 2.0 * dp
        dp = dp * tau + p
        p = p * tau + coefficients[k]
    return p, dp, ddp


@compiled()
def path_sample(path, t, x, xd, xdd):
    """
    Fill the tip position, velocity and acceleration (3,) of the path table `path` at `t` [s].

    Rows in increasing start times (`path_segment`); before the first, its start point at rest.
    """
    i = 0
    while i + 1 < path.shape[0] and segment_layout(path[i + 1])[1].start[0] <= t:
        i += 1
    row = segment_layout(path[i])[1]
    before = t < row.start[0]
    tau = 0.0 if before else t - row.start[0]
    r = row.radius[0]
    th, dth, ddth = _polynomial(row.phase, tau)
    ct, st = math.cos(th), math.sin(th)
    for c in range(3):
        p, dp, ddp = _polynomial(row.position[c], tau)
        radial, tangent = ct * row.u[c] + st * row.v[c], ct * row.v[c] - st * row.u[c]
        x[c] = p + r * radial
        xd[c] = 0.0 if before else dp + r * dth * tangent
        xdd[c] = 0.0 if before else ddp + r * ddth * tangent - r * dth * dth * radial
