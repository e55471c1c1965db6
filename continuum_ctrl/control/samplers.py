"""
Compiled samplers of the joint references: one Numba kernel per type over a named layout.

Each reference class of control.references that has one gives its data as a namedtuple of
arrays and floats (`HoldData`, `SinusoidData`, `MultisineData`, `MinimumJerkData`,
`SplineData`); ``sample_into(data, t, out)``, callable from compiled code, writes the sample
at `t` (s) into `out` (3, n): rows ``q_d``, ``qd_d``, ``qdd_d``. The arithmetic is that of
the classes' NumPy `sample`, which stays their reference implementation (and the tests'
oracle). `anchored_sample` adds the loop's clip to the joint limits and blend from the
measured state (`BlendData`, control.loop.Anchored) in the same call; `blend_sample` does the
clip and blend alone, on a sample made elsewhere (a task-space reference's compiled IK step).
`reference_data` puts any layout in the one type `ReferenceData`, whose sampler branches on
the kind at run time: the fused tick takes that type, so it compiles once for every reference
type, not once per type (about 9 s each). Its unused slots cost about 0.25 us more to unbox
per call, so the Python path calls each type's own `anchored_entry`.
The kernels allocate nothing and touch no Python object. They keep the GIL: a thread that
releases it for a microsecond's work may then wait a switch interval (runtime/loop_thread.py) or
a C call's length to take it back from a busy executor thread.
"""

from collections import namedtuple
import math

from numba.extending import overload
import numpy as np

from continuum_ctrl.numerics.jit import compiled, entry_point, WITHOUT_RUNTIME
from continuum_ctrl.numerics.ramps import minimum_jerk_ramp

#: a held position `q` (n,)
HoldData = namedtuple('HoldData', 'q')
#: per joint (n,): `center`, `amplitude`, angular rate `omega` (rad/s), `phase` (rad), the
#: velocity amplitude `rate` and `curvature` (qdd = curvature (q - center))
SinusoidData = namedtuple('SinusoidData', 'center amplitude omega phase rate curvature')
#: `center` (n,); per joint and component (n, m): angular rate `omega` (rad/s), `phase`
#: (rad) and amplitude `weight`
MultisineData = namedtuple('MultisineData', 'center omega phase weight')
#: start `q0` and move `delta` (n,), start time `t0` and `duration` (s)
MinimumJerkData = namedtuple('MinimumJerkData', 'q0 delta t0 duration')
#: piecewise polynomials on `knots` (m,) s: per piece (m - 1, k - d, n) coefficients of
#: ``dt^(k-1-d) .. dt^0`` for q (`c0`), qd (`c1`) and qdd (`c2`), exponents (k,) descending;
#: the held ends `first`, `last` (3, n)
SplineData = namedtuple('SplineData', 'knots c0 c1 c2 exponents first last')
#: the blend of control.loop.Anchored: start time `t0` and `blend_time` (s), `free` (no clip
#: needed), joint limits `low`, `high`, measured `q_start`, `qd_start` (n,)
BlendData = namedtuple('BlendData', 't0 blend_time free low high q_start qd_start')


@compiled()
def _copy(source, out):
    """``out[:] = source`` for (3, n) arrays, without the runtime a slice copy needs."""
    for row in range(3):
        for i in range(out.shape[1]):
            out[row, i] = source[row, i]


@compiled()
def _hold(data, t, out):
    for i in range(data.q.size):
        out[0, i] = data.q[i]
        out[1, i] = 0.0
        out[2, i] = 0.0


@compiled()
def _sinusoid(data, t, out):
    for i in range(data.center.size):
        angle = data.omega[i] * t
        angle += data.phase[i]
        s = data.amplitude[i] * math.sin(angle)
        out[0, i] = data.center[i] + s
        out[1, i] = data.rate[i] * math.cos(angle)
        out[2, i] = data.curvature[i] * s


@compiled()
def _multisine(data, t, out):
    omega, weight = data.omega, data.weight
    for i in range(omega.shape[0]):
        q = qd = qdd = 0.0
        for k in range(omega.shape[1]):
            angle = omega[i, k] * t + data.phase[i, k]
            s = weight[i, k] * math.sin(angle)
            q += s
            qd += weight[i, k] * omega[i, k] * math.cos(angle)
            qdd += s * omega[i, k] ** 2
        out[0, i] = data.center[i] + q
        out[1, i] = qd
        out[2, i] = -qdd


@compiled()
def blend_ramp(elapsed, duration):
    """
    Return the blend ramp ``s`` from 0 to 1 and its time derivatives ``(s, s', s'')``.

    ``s = 35 x^4 - 84 x^5 + 70 x^6 - 20 x^7`` with ``x = elapsed/duration`` clipped to [0, 1]:
    zero slope, curvature and jerk at both ends, so blends built from it are C3. The valve
    compensation's lead differentiates the law along the desired trajectory once more; with
    the minimum-jerk ramp (C2) its jerk steps at the end of the blend, and so would the
    compensated command. Times in seconds. Its one definition: control.references runs it as
    Python (`.py_func`).
    """
    x = min(max(elapsed / duration, 0.0), 1.0)
    return (x ** 4 * (35.0 + x * (-84.0 + x * (70.0 - 20.0 * x))),
            x ** 3 * (140.0 + x * (-420.0 + x * (420.0 - 140.0 * x))) / duration,
            x ** 2 * (420.0 + x * (-1680.0 + x * (2100.0 - 840.0 * x))) / duration ** 2)


@compiled()
def _minimum_jerk(data, t, out):
    s, ds, dds = minimum_jerk_ramp(t - data.t0, data.duration)
    for i in range(data.q0.size):
        out[0, i] = data.q0[i] + s * data.delta[i]
        out[1, i] = ds * data.delta[i]
        out[2, i] = dds * data.delta[i]


@compiled()
def _spline(data, t, out):
    knots = data.knots
    if t < knots[0] or t >= knots[-1]:
        _copy(data.first if t < knots[0] else data.last, out)
        return
    low, high = 0, knots.size - 1          # knots[low] <= t < knots[high]
    while high - low > 1:
        middle = (low + high) // 2
        if knots[middle] <= t:
            low = middle
        else:
            high = middle
    dt = t - knots[low]
    exponents = data.exponents
    for row, c in enumerate((data.c0, data.c1, data.c2)):
        for i in range(c.shape[2]):
            value = 0.0
            for j in range(c.shape[1]):
                value += dt ** exponents[row + j] * c[low, j, i]
            out[row, i] = value


#: the data layouts with a compiled sampler, in the order of `ReferenceData`'s slots
LAYOUTS = (HoldData, SinusoidData, MultisineData, MinimumJerkData, SplineData)
#: any layout: `kind` (int64) indexes LAYOUTS and names the slot that holds the reference's
#: data; every other slot holds a one-joint placeholder of its layout
ReferenceData = namedtuple('ReferenceData', 'kind hold sinusoid multisine minimum_jerk spline')


@compiled()
def _any(data, t, out):
    kind = data.kind
    if kind == 0:
        _hold(data.hold, t, out)
    elif kind == 1:
        _sinusoid(data.sinusoid, t, out)
    elif kind == 2:
        _multisine(data.multisine, t, out)
    elif kind == 3:
        _minimum_jerk(data.minimum_jerk, t, out)
    else:
        _spline(data.spline, t, out)


#: the namedtuple class of each layout -> its kernel
_KERNELS = dict(zip(LAYOUTS + (ReferenceData,),
                    (_hold, _sinusoid, _multisine, _minimum_jerk, _spline, _any)))


def sample_into(data, t, out):
    """Write the sample at `t` (s) of the reference laid out in `data` into `out` (3, n)."""
    _KERNELS[type(data)](data, t, out)


@overload(sample_into, jit_options=WITHOUT_RUNTIME)
def _sample_into(data, t, out):
    kernel = _KERNELS.get(getattr(data, 'instance_class', None))
    if kernel is None:
        return None

    def implementation(data, t, out):
        kernel(data, t, out)
    return implementation


@compiled()
def blend_sample(blend, elapsed, raw, out):
    """
    Write the clipped, blended sample at `elapsed` (s from ``blend.t0``) into `out` (3, n).

    `raw` (3, n): the reference's sample there; its rows are clipped in place (see
    control.loop.Anchored for the arithmetic).
    """
    n = raw.shape[1]
    if not blend.free:
        for i in range(n):
            r = min(max(raw[0, i], blend.low[i]), blend.high[i])
            if not r == raw[0, i]:
                raw[1, i] = 0.0 * raw[1, i]
                raw[2, i] = 0.0 * raw[2, i]
            raw[0, i] = r
    if elapsed >= blend.blend_time:
        _copy(raw, out)
        return
    s, ds, dds = blend_ramp(elapsed, blend.blend_time)
    b, db, ddb = elapsed * (1.0 - s), 1.0 - s - elapsed * ds, -2.0 * ds - elapsed * dds
    q0, qd0 = blend.q_start, blend.qd_start
    for i in range(n):
        delta = raw[0, i] - q0[i]
        out[0, i] = delta * s + q0[i] + b * qd0[i]
        out[1, i] = raw[1, i] * s + ds * delta + db * qd0[i]
        out[2, i] = raw[2, i] * s + 2.0 * ds * raw[1, i] + dds * delta + ddb * qd0[i]


@compiled()
def anchored_sample(data, blend, t, raw, out):
    """Write the anchored sample at `t` (s) of the reference `data` into `out`; `raw`: scratch."""
    elapsed = max(t - blend.t0, 0.0)
    sample_into(data, elapsed, raw)
    blend_sample(blend, elapsed, raw, out)


def example_data(layout):
    """Return a one-joint instance of `layout` (the argument types of every call)."""
    if layout is ReferenceData:
        return reference_data(example_data(HoldData))
    one, row, block = np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1, 1))
    examples = {HoldData: HoldData(one),
                SinusoidData: SinusoidData(*(one,) * 6),
                MultisineData: MultisineData(one, row, row, row),
                MinimumJerkData: MinimumJerkData(one, one, 0.0, 1.0),
                SplineData: SplineData(np.array([0.0, 1.0]), block, block, block, one,
                                       np.zeros((3, 1)), np.zeros((3, 1)))}
    return examples[layout]


def reference_data(data):
    """Return `data` (an instance of one of LAYOUTS) as a `ReferenceData`."""
    kind = LAYOUTS.index(type(data))
    slots = list(_PLACEHOLDERS)
    slots[kind] = data
    return ReferenceData(np.int64(kind), *slots)


#: the slots' one-joint placeholders, shared: the samplers only read their data
_PLACEHOLDERS = tuple(example_data(layout) for layout in LAYOUTS)


def blend_data(t0, blend_time, free, low, high, q_start, qd_start):
    """Return the `BlendData` of these values (C-contiguous float64 copies of the arrays)."""
    arrays = (np.ascontiguousarray(a, dtype=float) for a in (low, high, q_start, qd_start))
    return BlendData(float(t0), float(blend_time), bool(free), *arrays)


_entries: dict = {}


def anchored_entry(layout):
    """
    Return `anchored_sample` compiled (or loaded) for the data layout class `layout`.

    Compiled once per process and layout: `warm_samplers` does it ahead of the first anchor.
    """
    entry = _entries.get(layout)
    if entry is None:
        blend = blend_data(0.0, 1.0, False, *(np.zeros(1),) * 4)
        entry = _entries[layout] = entry_point(anchored_sample, example_data(layout), blend, 0.0,
                                               np.zeros((3, 1)), np.zeros((3, 1)))
    return entry


def warm_samplers():
    """Compile (or load) every layout's `anchored_sample` and `blend_sample` now."""
    for layout in LAYOUTS:
        anchored_entry(layout)
    blend_entry()


def blend_entry():
    """Return `blend_sample` compiled (or loaded) for its one argument layout."""
    entry = _entries.get(BlendData)
    if entry is None:
        blend = blend_data(0.0, 1.0, False, *(np.zeros(1),) * 4)
        entry = _entries[BlendData] = entry_point(blend_sample, blend, 0.0, np.zeros((3, 1)),
                                                  np.zeros((3, 1)))
    return entry
