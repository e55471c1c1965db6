"""
The model/data split of the continuum kernels, as in Pinocchio: `Arm` and `ContinuumData`.

`Arm` is the immutable description of an arm (read-only arrays, SI units); `ContinuumData`
is the workspace one evaluation writes, named buffers created once per model by `new_data`.
Both are namedtuples of arrays, which the compiled kernels take as single arguments and read
by field name. The kernels run without Numba's runtime (see `jit.py`), so the buffers are
never allocated, reference counted or freed inside them.
"""

from collections import namedtuple

import numpy as np

#: an arm, immutable: per section (n,) length L, PMA radius r [m], mass [kg], fixed-joint
#: offset sigma [m] and twist gamma [rad]; per PMA (3n, 4) `pma` rows: stiffness [N/m],
#: damping [N s/m], stroke l_max [m], limit stiffness [N/m]; gravity (3,) [m/s^2] in the base
#: frame; the CoG model's beta (6,); the integral model's quadrature nodes and weights on [0, 1]
Arm = namedtuple('Arm', 'length radius mass offset twist pma gravity beta nodes weights')

#: scratch of one section function: the entire functions f_m and their t-derivatives d1, d2
#: (8,); (s, u, w)-gradient `vy`, Jacobian map E = d(s, u, w)/dq, Hessian `hy` and its q-map T;
#: for the rotation: theta, cross products x1, x2, y1, y2, y3 (3,), d theta/d(u, w) `thc`,
#: d kap/d(u, w) `kc` (2, 3), its (u, w)-derivative `dkc` (2, 2, 3) and q-map `dkq` (2, 3, 3)
SectionWork = namedtuple('SectionWork', 'f d1 d2 vy E hy T th x1 x2 y1 y2 y3 thc kc dkc dkq')

#: the chain of sections (`kinematics.chain`): base frames Rb (n, 3, 3), ob (n, 3), tip frames
#: tip_R, tip_o, joint motion columns om, v0 (N, 3) and derivatives dom, dv0 (N, 3, 3); the
#: current section tip relative to its base: p, dp, d2p, R, kap, dkap, and in world axes dpw,
#: d2pw, kw, dkw
Chain = namedtuple('Chain', 'Rb ob tip_R tip_o om v0 dom dv0 '
                            'p dp d2p R kap dkap dpw d2pw kw dkw')

#: one body of a model evaluation (a CoG, a disc) on section `sec`: its point p, dp, d2p and
#: frame R, kap, dkap relative to the section base; world point x, offset from the section
#: base bbar, derivatives dpw, d2pw in world axes; world orientation Rw and world angular
#: columns omt (N, 3); point, relative and angular Jacobians J, JW, JO (N, 3) with their
#: q-derivatives dJ, dJW, dJO (N, N, 3); a Jacobian rate Jd (N, 3); inertia weights wI and
#: unit weights `ones` (3,); base angular velocities Wc (n + 1, 3)
Body = namedtuple('Body', 'p dp d2p R kap dkap x bbar dpw d2pw Rw omt '
                          'J JW JO dJ dJW dJO Jd wI ones Wc')

#: work of `terms.add_term` and `terms.add_rigid_term`: velocities uA, uB (3,) and weighted
#: velocities wuA, wuB; per column (N, 3): Jacobian rates JdA, JdB, velocity gradients GA, GB
#: and the rigid body's b
TermWork = namedtuple('TermWork', 'uA uB wuA wuB JdA GA JdB GB b')

#: what an evaluation returns: M, C, Md = Mdot, P = d(M qd)/dq (N, N); dM (N, N, N);
#: gravity force g, C qd `cq`, passive force, task output `out` (N,)
Sums = namedtuple('Sums', 'M C Md P dM g cq passive out')

#: the whole workspace of one model
ContinuumData = namedtuple('ContinuumData', 'chain body section terms sums')


class _Block:
    """Zeroed float64 arrays carved in order from one contiguous block, for cache locality."""

    def __init__(self, size):
        self._memory = np.zeros(size)
        self._used = 0

    def __call__(self, shape):
        size = int(np.prod(shape))
        out = self._memory[self._used:self._used + size].reshape(shape)
        self._used += size
        return out


def new_arm(spec):
    """Return the read-only `Arm` of a `params.ContinuumSpec`."""
    n = spec.sections
    pma = np.column_stack([spec.stiffness, spec.damping, np.repeat(spec.max_extension, 3),
                           np.full(3 * n, spec.limit_stiffness)])
    nodes, weights = np.polynomial.legendre.leggauss(spec.quadrature)
    fields = (spec.length, spec.radius, spec.mass, spec.offset, spec.twist, pma, spec.gravity,
              spec.beta, 0.5 * (nodes + 1.0), 0.5 * weights)
    arrays = [np.array(x, dtype=float, order='C') for x in fields]
    for x in arrays:
        x.flags.writeable = False
    return Arm(*arrays)


def section_work(z=np.zeros):
    """Return a zeroed `SectionWork`; `z(shape)` makes each array."""
    return SectionWork(z(8), z(8), z(8), z((3, 3)), z((3, 3)), z((3, 3, 3)), z((3, 3, 3)),
                       z(3), z(3), z(3), z(3), z(3), z(3), z((2, 3)), z((2, 3)), z((2, 2, 3)),
                       z((2, 3, 3)))


def new_chain(n, z=np.zeros):
    """Return a zeroed `Chain` for n sections; `z(shape)` makes each array."""
    N = 3 * n
    return Chain(z((n, 3, 3)), z((n, 3)), z((n, 3, 3)), z((n, 3)), z((N, 3)), z((N, 3)),
                 z((N, 3, 3)), z((N, 3, 3)), z(3), z((3, 3)), z((3, 3, 3)), z((3, 3)),
                 z((3, 3)), z((3, 3, 3)), z((3, 3)), z((3, 3, 3)), z((3, 3)), z((3, 3, 3)))


def new_data(n):
    """Return the zeroed `ContinuumData` of an n-section model (N = 3n joints)."""
    N = 3 * n
    z = _Block(4 * N * N * N + 64 * N * N + 64 * N + 1024)
    body = Body(z(3), z((3, 3)), z((3, 3, 3)), z((3, 3)), z((3, 3)), z((3, 3, 3)), z(3), z(3),
                z((3, 3)), z((3, 3, 3)), z((3, 3)), z((N, 3)), z((N, 3)), z((N, 3)), z((N, 3)),
                z((N, N, 3)), z((N, N, 3)), z((N, N, 3)), z((N, 3)), z(3), z(3),
                z((n + 1, 3)))
    terms = TermWork(z(3), z(3), z(3), z(3), z((N, 3)), z((N, 3)), z((N, 3)), z((N, 3)),
                     z((N, 3)))
    sums = Sums(z((N, N)), z((N, N)), z((N, N)), z((N, N)), z((N, N, N)), z(N), z(N), z(N),
                z(N))
    body.ones[:] = 1.0
    return ContinuumData(new_chain(n, z), body, section_work(z), terms, sums)
