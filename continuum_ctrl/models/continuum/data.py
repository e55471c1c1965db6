"""
The model/data split of the continuum kernels, as in Pinocchio: `Arm` and `ContinuumData`.

`Arm` is the immutable description of an arm (read-only arrays, SI units); `ContinuumData`
is the workspace one evaluation writes, named buffers created once per model by `new_data`.
Both are namedtuples of arrays, read by field name. The workspace is one contiguous block
(``memory``) which a model passes to its kernel as a single array; `layout`, the one definition
of the buffers' names and shapes, carves the named views from it inside compiled code (pointer
arithmetic, free) and in Python alike. Passing the ~75 arrays instead would cost about 1 us
per call to unbox. The kernels run without Numba's runtime (see `jit.py`), so the buffers are
never allocated, reference counted or freed inside them.
"""

from collections import namedtuple
import functools

from numba.core import cgutils, types
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array, populate_array
import numpy as np

from continuum_ctrl.numerics.jit import WITHOUT_RUNTIME

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


def take(memory, at, shape):
    """
    Return ``(at + size, view)``: the C-ordered view of `shape` at index `at` of `memory`.

    `memory`: a flat float64 block, or None to measure a layout (the view is then None).
    """
    size = int(np.prod(shape))
    view = None if memory is None else memory[at:at + size].reshape(shape)
    return at + size, view


@intrinsic
def _view(typingctx, memory, at, shape):
    """Compiled ``memory[at:].reshape(shape)`` of a contiguous block: pointer arithmetic only."""
    ndim = len(shape)
    result = types.Array(types.float64, ndim, 'C')

    def codegen(context, builder, signature, args):
        block = make_array(signature.args[0])(context, builder, args[0])
        out = make_array(result)(context, builder)
        dims = [context.cast(builder, d, t, types.intp)
                for d, t in zip(cgutils.unpack_tuple(builder, args[2], ndim), shape)]
        stride = context.get_constant(types.intp, 8)
        strides = []
        for d in reversed(dims):
            strides.insert(0, stride)
            stride = builder.mul(stride, d)
        offset = context.cast(builder, args[1], signature.args[1], types.intp)
        populate_array(out, data=builder.gep(block.data, [offset]), shape=dims,
                       strides=strides, itemsize=context.get_constant(types.intp, 8),
                       meminfo=block.meminfo)
        value = out._getvalue()
        if context.enable_nrt:
            context.nrt.incref(builder, result, value)
        return value
    return result(memory, at, shape), codegen


@overload(take, jit_options=WITHOUT_RUNTIME)
def _take(memory, at, shape):
    def impl(memory, at, shape):
        size = 1
        for d in shape:
            size *= d
        return at + size, _view(memory, at, shape)
    return impl


def also_compiled(function):
    """Make `function` callable from compiled code too (inlined there), and return it."""
    @functools.wraps(function)
    def implementation(*args):
        return function
    overload(function, jit_options=WITHOUT_RUNTIME, inline='always')(implementation)
    return function


@also_compiled
def section_layout(memory, at):
    """Carve a `SectionWork` from `memory` at index `at`; return ``(next index, work)``."""
    at, f = take(memory, at, (8,))
    at, d1 = take(memory, at, (8,))
    at, d2 = take(memory, at, (8,))
    at, vy = take(memory, at, (3, 3))
    at, E = take(memory, at, (3, 3))
    at, hy = take(memory, at, (3, 3, 3))
    at, T = take(memory, at, (3, 3, 3))
    at, th = take(memory, at, (3,))
    at, x1 = take(memory, at, (3,))
    at, x2 = take(memory, at, (3,))
    at, y1 = take(memory, at, (3,))
    at, y2 = take(memory, at, (3,))
    at, y3 = take(memory, at, (3,))
    at, thc = take(memory, at, (2, 3))
    at, kc = take(memory, at, (2, 3))
    at, dkc = take(memory, at, (2, 2, 3))
    at, dkq = take(memory, at, (2, 3, 3))
    return at, SectionWork(f, d1, d2, vy, E, hy, T, th, x1, x2, y1, y2, y3, thc, kc, dkc, dkq)


@also_compiled
def layout(memory, n):
    """
    Return ``(size, data)``: the named views of an n-section model's workspace in `memory`.

    The one definition of the `ContinuumData` layout: compiled kernels carve it from the
    block they are given (no per-array cost at the call), Python calls it directly.
    """
    N = 3 * n
    at, Rb = take(memory, 0, (n, 3, 3))
    at, ob = take(memory, at, (n, 3))
    at, tip_R = take(memory, at, (n, 3, 3))
    at, tip_o = take(memory, at, (n, 3))
    at, om = take(memory, at, (N, 3))
    at, v0 = take(memory, at, (N, 3))
    at, dom = take(memory, at, (N, 3, 3))
    at, dv0 = take(memory, at, (N, 3, 3))
    at, cp = take(memory, at, (3,))
    at, cdp = take(memory, at, (3, 3))
    at, cd2p = take(memory, at, (3, 3, 3))
    at, cR = take(memory, at, (3, 3))
    at, ckap = take(memory, at, (3, 3))
    at, cdkap = take(memory, at, (3, 3, 3))
    at, cdpw = take(memory, at, (3, 3))
    at, cd2pw = take(memory, at, (3, 3, 3))
    at, kw = take(memory, at, (3, 3))
    at, dkw = take(memory, at, (3, 3, 3))
    ch = Chain(Rb, ob, tip_R, tip_o, om, v0, dom, dv0, cp, cdp, cd2p, cR, ckap, cdkap, cdpw,
               cd2pw, kw, dkw)
    at, p = take(memory, at, (3,))
    at, dp = take(memory, at, (3, 3))
    at, d2p = take(memory, at, (3, 3, 3))
    at, R = take(memory, at, (3, 3))
    at, kap = take(memory, at, (3, 3))
    at, dkap = take(memory, at, (3, 3, 3))
    at, x = take(memory, at, (3,))
    at, bbar = take(memory, at, (3,))
    at, dpw = take(memory, at, (3, 3))
    at, d2pw = take(memory, at, (3, 3, 3))
    at, Rw = take(memory, at, (3, 3))
    at, omt = take(memory, at, (N, 3))
    at, J = take(memory, at, (N, 3))
    at, JW = take(memory, at, (N, 3))
    at, JO = take(memory, at, (N, 3))
    at, dJ = take(memory, at, (N, N, 3))
    at, dJW = take(memory, at, (N, N, 3))
    at, dJO = take(memory, at, (N, N, 3))
    at, Jd = take(memory, at, (N, 3))
    at, wI = take(memory, at, (3,))
    at, ones = take(memory, at, (3,))
    at, Wc = take(memory, at, (n + 1, 3))
    body = Body(p, dp, d2p, R, kap, dkap, x, bbar, dpw, d2pw, Rw, omt, J, JW, JO, dJ, dJW, dJO,
                Jd, wI, ones, Wc)
    at, work = section_layout(memory, at)
    at, uA = take(memory, at, (3,))
    at, uB = take(memory, at, (3,))
    at, wuA = take(memory, at, (3,))
    at, wuB = take(memory, at, (3,))
    at, JdA = take(memory, at, (N, 3))
    at, GA = take(memory, at, (N, 3))
    at, JdB = take(memory, at, (N, 3))
    at, GB = take(memory, at, (N, 3))
    at, b = take(memory, at, (N, 3))
    terms = TermWork(uA, uB, wuA, wuB, JdA, GA, JdB, GB, b)
    at, M = take(memory, at, (N, N))
    at, C = take(memory, at, (N, N))
    at, Md = take(memory, at, (N, N))
    at, P = take(memory, at, (N, N))
    at, dM = take(memory, at, (N, N, N))
    at, g = take(memory, at, (N,))
    at, cq = take(memory, at, (N,))
    at, passive = take(memory, at, (N,))
    at, out = take(memory, at, (N,))
    sums = Sums(M, C, Md, P, dM, g, cq, passive, out)
    return at, ContinuumData(ch, body, work, terms, sums)


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


def section_work():
    """Return a zeroed `SectionWork` for Python callers of the section functions."""
    size, _ = section_layout(None, 0)
    return section_layout(np.zeros(size), 0)[1]


def new_data(n):
    """
    Return ``(memory, data)``: the zeroed workspace block of an n-section model and its views.

    Kernels take `memory` and carve the same `ContinuumData` with `layout`.
    """
    size, _ = layout(None, n)
    memory = np.zeros(size)
    data = layout(memory, n)[1]
    data.body.ones[:] = 1.0
    return memory, data
