"""
The MJCF of a continuum arm as a disc stack: a model the controller was not derived from.

    xml = continuum_mjcf(spec, discs=[4, 4, 4], step=5e-4, obstacles=Obstacles())

`spec` is a continuum model's ContinuumSpec (models/continuum/params.py, SI units). Section `i`
becomes `discs[i]` rigid bodies in a chain, disc `k` at rest at ``xi = k / N`` of the section
(N discs, segment ``h = L / N``). Each disc hangs on a universal joint (hinges about its x and
y axes, through the segment's middle) followed by a slide along its z axis: three joints per
segment, as many as the segment's three PMA pieces, so the pieces fix the pose and no
internal mode is left unsprung. The universal joint has no torsional freedom, as the
constant-curvature arc has none (it twists a disc by ``a b / 2`` for hinge angles a and b,
second order in the bend).

Mass: the section's mass spread over `xi` is lumped into thin discs of radius `r` by the
trapezoidal rule (weight 1/N inside, 1/(2N) at either end): disc N carries half a share, and
the base's half share rides on the previous section's tip disc (fixed for section 1).

PMAs: PMA `j` at angle ``2 pi (j - 1) / 3`` and radius `r` is N spatial tendons, one per
segment, between sites on consecutive discs. A PMA is a distributed spring: each piece has
N times the PMA's stiffness and damping and rest length h, so in equilibrium each piece
carries the same force and the PMA's length change is the sum of the pieces' lengths minus L.
Each piece is pushed by a motor of the PMA's force (the plant sets the same force on all of a
PMA's pieces: one tension along the whole PMA) and stops softly, as a tendon limit, at its
rest length and at ``h + l_max / N``.

Contact: every disc body has a capsule of radius `r` between its two segment midpoints, which
collides only with `Obstacles` (boxes and spheres in the arm's base frame, the world frame).
"""

from dataclasses import dataclass
import math
from typing import Sequence, Tuple

import numpy as np

#: soft stop of a PMA piece at its rest length and its stroke: MuJoCo solref (time constant,
#: damping ratio) and solimp of the tendon limit
STOP_SOLREF = (0.004, 1.0)
STOP_SOLIMP = (0.95, 0.99, 0.001)
#: time constant of the obstacle contacts (s, MuJoCo solref), with damping ratio 1
CONTACT_TIME_CONSTANT = 0.005
#: disc thickness as a share of its radius: a thin disc's inertia sits exactly on MuJoCo's
#: bound A + B >= C, which rounding breaks; this adds 3e-5 of the lateral inertia
THICKNESS = 0.01


@dataclass(frozen=True)
class Obstacles:
    """Fixed obstacles in the base frame: boxes (centre, half sizes) and spheres, m."""

    boxes: Tuple[Tuple[float, ...], ...] = ()       # (x, y, z, hx, hy, hz)
    spheres: Tuple[Tuple[float, ...], ...] = ()     # (x, y, z, radius)

    def __bool__(self):
        """Return True when there is any obstacle."""
        return bool(self.boxes or self.spheres)


def _vec(values):
    return ' '.join(f'{float(v):.12g}' for v in values)


def pma_angles():
    """Return the angles of PMAs 1..3 about the section's z axis, rad (contract section 1)."""
    return 2.0 * math.pi * np.arange(3) / 3.0


def body_name(section, disc):
    """Return the body name of disc `disc` (1..N) of section `section` (1..n)."""
    return f's{section}d{disc}'


def piece_name(section, pma, disc):
    """Return the tendon name of PMA `pma`'s piece ending at disc `disc` (all from 1)."""
    return f's{section}p{pma}k{disc}'


def _inertial(parts):
    """Return an <inertial> for thin discs ``(mass, radius, z)`` on the body's z axis."""
    mass = sum(m for m, _, _ in parts)
    z = sum(m * c for m, _, c in parts) / mass
    axial = sum(0.5 * m * r * r for m, r, _ in parts)
    lateral = sum(m * (0.25 * r * r + (THICKNESS * r) ** 2 / 12.0 + (c - z) ** 2)
                  for m, r, c in parts)
    return (f'<inertial pos="0 0 {z:.12g}" mass="{mass:.12g}" '
            f'diaginertia="{_vec((lateral, lateral, axial))}"/>')


def _sites(section, disc, radius, z=0.0, twist=0.0):
    """Return the three PMA sites of a disc at height `z` in its body, turned by `twist`."""
    out = []
    for j, alpha in enumerate(pma_angles() + twist, start=1):
        pos = (radius * math.cos(alpha), radius * math.sin(alpha), z)
        out.append(f'<site name="s{section}p{j}d{disc}" pos="{_vec(pos)}" size="0.002"/>')
    return out


def continuum_mjcf(spec, discs: Sequence[int], step: float,
                   obstacles: Obstacles = Obstacles()) -> str:
    """Return the MJCF text of `spec`'s arm with `discs[i]` discs in section i (see module)."""
    n = spec.sections
    N = [int(d) for d in discs]
    shares = [spec.mass[i] / N[i] for i in range(n)]
    opened = []                             # closing tags of the open bodies
    lines = []
    tendons, actuators = [], []
    for i in range(n):
        sec, r, h = i + 1, spec.radius[i], spec.length[i] / N[i]
        sigma, gamma = spec.offset[i], spec.twist[i]
        lines += _sites(sec, 0, r, sigma, gamma)    # base sites, in the parent body
        for k in range(1, N[i] + 1):
            first, last = k == 1, k == N[i]
            pos = (0.0, 0.0, (sigma if first else 0.0) + h)
            quat = (math.cos(gamma / 2), 0.0, 0.0, math.sin(gamma / 2)) if first else (1, 0, 0, 0)
            lines.append(f'<body name="{body_name(sec, k)}" pos="{_vec(pos)}" '
                         f'quat="{_vec(quat)}">')
            parts = [(shares[i] * (0.5 if last else 1.0), r, 0.0)]
            if last and sec < n:                     # the next section's base half share
                parts.append((0.5 * shares[i + 1], spec.radius[i + 1], spec.offset[i + 1]))
            lines.append(_inertial(parts))
            pivot = _vec((0.0, 0.0, -0.5 * h))
            lines += [f'<joint name="{body_name(sec, k)}_x" type="hinge" axis="1 0 0" '
                      f'pos="{pivot}"/>',
                      f'<joint name="{body_name(sec, k)}_y" type="hinge" axis="0 1 0" '
                      f'pos="{pivot}"/>',
                      f'<joint name="{body_name(sec, k)}_z" type="slide" axis="0 0 1"/>']
            tip = 0.0 if last else 0.5 * h
            lines.append(f'<geom type="capsule" fromto="0 0 {-0.5 * h:.12g} 0 0 {tip:.12g}" '
                         f'size="{r:.12g}" contype="1" conaffinity="0"/>')
            lines += _sites(sec, k, r)
            for j in range(3):
                p = 3 * i + j
                name = piece_name(sec, j + 1, k)
                tendons.append(
                    f'<spatial name="{name}" stiffness="{N[i] * spec.stiffness[p]:.12g}" '
                    f'damping="{N[i] * spec.damping[p]:.12g}" springlength="{h:.12g}" '
                    f'limited="true" range="{h:.12g} {h + spec.max_extension[i] / N[i]:.12g}" '
                    f'solreflimit="{_vec(STOP_SOLREF)}" solimplimit="{_vec(STOP_SOLIMP)}">'
                    f'<site site="s{sec}p{j + 1}d{k - 1}"/><site site="s{sec}p{j + 1}d{k}"/>'
                    f'</spatial>')
                actuators.append(f'<motor name="{name}" tendon="{name}" gear="1"/>')
            opened.append('</body>')
        # the next section's base sites go into this section's last disc
    lines += reversed(opened)
    world = [f'<geom name="box{b}" type="box" pos="{_vec(box[:3])}" size="{_vec(box[3:])}" '
             f'contype="0" conaffinity="1"/>' for b, box in enumerate(obstacles.boxes)]
    world += [f'<geom name="sphere{s}" type="sphere" pos="{_vec(ball[:3])}" '
              f'size="{ball[3]:.12g}" contype="0" conaffinity="1"/>'
              for s, ball in enumerate(obstacles.spheres)]
    flags = '' if obstacles else '<flag contact="disable"/>'
    return '\n'.join([
        '<mujoco model="continuum_arm">',
        f'<option timestep="{step:.12g}" integrator="implicitfast" '
        f'gravity="{_vec(spec.gravity)}">{flags}</option>',
        f'<default><geom solref="{CONTACT_TIME_CONSTANT:.12g} 1"/></default>',
        '<worldbody>', *world, *lines, '</worldbody>',
        '<tendon>', *tendons, '</tendon>',
        '<actuator>', *actuators, '</actuator>',
        '</mujoco>'])
