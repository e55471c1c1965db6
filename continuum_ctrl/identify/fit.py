"""
Least-squares identification of a continuum arm's PMA parameters from recorded runs.

With the geometry and masses known, each PMA ``j`` of section ``i`` obeys, while its pressure
is above the dead zone,

    area_j (p_j - deadzone_j) = [M(q) qdd + C(q, qd) qd + g(q)]_j + k_i q_j + d_i qd_j,

linear in ``k_i``, ``d_i``, ``area_j`` and ``area_j deadzone_j``; gravity and inertia pin the
scale. With `area_slope` the area falls with extension, ``area_j (1 - c_j q_j / l_max)``
(actuation/pressure_map.py): the term ``area_j c_j`` multiplies ``-(q_j / l_max)(p_j -
deadzone_j)``, one more linear column (the dead zone the current refit's), and ``c_j`` is that
coefficient over the area; unfitted, the file's ``output.area_slope`` scales the area's
columns. The right side's ``M qdd + C qd + g`` is the compiled model's inverse dynamics without
stiffness and damping, one call per sample. Only samples whose pressure stays above the fitted
dead zone (plus a margin) over the whole filter window enter the fit, and the dead zone is
refitted until that set settles. ``p_j`` is the applied pressure predicted from the commands
by the actuator's delay and first-order lag, averaged over each sample's grid cell; for
``time_constant`` and ``delay`` the regression stays linear per candidate, and a search over
the two minimises the residual on a fixed sample set. With `friction` each PMA's force gains
a Maxwell-slip element on its length, ``f_j u(q_j; play)`` (identify/friction.py): linear in
the slip force ``f_j`` for a given play, which a 1-D search finds the same way; unfitted, the
file's ``output.friction`` enters as known.
Runs are fitted on their first 70 % and judged on the last 30 %.
"""

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from continuum_ctrl.params import ConfigError
from continuum_ctrl.identify.defaults import DEFAULT_FIT
from continuum_ctrl.identify.excitation import (chatter_note, chatter_share, CHATTER_SHARE,
                                                PmaExcitation)
from continuum_ctrl.identify.friction import (FRICTION_SE_LIMIT, MIN_REVERSALS,
                                              nominal_friction, PLAY_GRID, PLAY_RANGE,
                                              REVERSAL_PLAYS, reversals, unit_friction)
from continuum_ctrl.identify.signals import applied_mean, grid

#: parameters `--fit` can name (the default set: identify/defaults.py)
PARAMETERS = ('stiffness', 'damping', 'area', 'deadzone', 'area_slope', 'friction',
              'time_constant', 'delay')
#: share of each run held out for judging the fit (its end)
HELD_OUT = 0.3
#: samples enter the fit this far above the dead zone, as a share of p_max - p_min
MARGIN = 0.02
#: samples this close to a stroke end (share of the stroke) are left out: end stops
STROKE_MARGIN = 0.02
#: fewest samples per PMA above the dead zone
MIN_SAMPLES = 200
#: a scaled regressor worse conditioned than this does not excite some parameter
COND_LIMIT = 1e6
#: nor does a parameter whose standard error exceeds this share of its nominal value
REL_SE_LIMIT = 0.25
#: an area slope's standard error above this (share of the area over the stroke) is not
#: excited: the lengths did not span enough of the stroke
SLOPE_SE_LIMIT = 0.03
#: search range of the actuator lag and delay, s
LAG_RANGE = (0.0, 0.3)
DELAY_RANGE = (0.0, 0.05)
#: smoothing window (s) when the lag is fitted: it needs the content above its corner
#: frequency, which the default window smooths away (a 30 ms lag and a 5 ms delay then look
#: like one 35 ms lag)
LAG_WINDOW = 0.05
#: dead-zone refits per estimate
DEADZONE_ITERATIONS = 10


class Unexcited(ConfigError):
    """The data do not pin the parameter `k` (its index in the fit's names)."""

    def __init__(self, k, problem):
        super().__init__('', problem)
        self.k = k


class FrictionUnexcited(ConfigError):
    """The data do not pin the PMAs' friction; `reason` says why, `advice` what to run."""

    def __init__(self, reason, advice):
        super().__init__('', f'the data do not excite friction (output.friction): {reason}; '
                             f'{advice} (config/identify_excitation.yaml)')
        self.reason = reason


@dataclass
class Options:
    """What to fit: a subset of PARAMETERS, one area/dead zone per PMA or one for all."""

    fit: tuple = DEFAULT_FIT
    per_pma: bool = False
    window: float = None        # Savitzky-Golay window, s (None: the default)
    #: hold a parameter the data do not pin at the file's value and fit the rest, rather
    #: than refuse the fit
    hold: bool = False


@dataclass
class Estimate:
    """One fitted value: parameter-file `key`, `index` in its array (None: scalar), `label`."""

    key: str
    index: object
    label: str
    value: float
    se: float
    nominal: float
    unit: str


@dataclass
class Result:
    """Estimates with their standard errors and the figures that judge the fit."""

    estimates: list
    condition: float
    rms_train: float
    rms_test: float
    r2_test: np.ndarray            # per PMA, model order
    r2_test_all: float
    samples: int
    held_out: list = field(default_factory=list)   # per run: (t, measured, predicted) (N, n)
    scale_note: str = ''
    unit: str = 'N'                 # of the generalized forces
    per: str = 'PMA'                # what a coordinate is called
    plot_labels: tuple = ('measured area (p - deadzone)',
                          'predicted M qdd + C qd + g + k q + d qd')
    details: list = field(default_factory=list)    # further report lines
    #: training samples (summed over PMAs) left out, by reason
    left_out: dict = field(default_factory=dict)
    #: per PMA (model order): how the runs excited it (identify/excitation.py)
    excitation: list = field(default_factory=list)

    def values(self, key):
        """Return the estimates of one parameter-file key, in index order."""
        return [e for e in self.estimates if e.key == key]


class _Run:
    """One run's grid, its rigid-body forces and its commands, split into fit and test parts."""

    def __init__(self, run, setup, window):
        self.name = run.name
        self.grid = grid(run, window)
        g = self.grid
        self.h = g.smooth(np.array([setup.rigid.inverse_dynamics(q, qd, qdd)
                                    for q, qd, qdd in zip(*g.state)]))
        self.command_t, self.command = run.command_t, run.command
        edge = g.window // 2
        count = len(g.t)
        self.split = int(round((1.0 - HELD_OUT) * count))
        self.train = np.zeros(count, dtype=bool)
        self.test = np.zeros(count, dtype=bool)
        self.train[edge:self.split - edge] = True
        self.test[self.split + edge:count - edge] = True
        low, high = (np.asarray(b, dtype=float) for b in setup.model.joint_limits())
        margin = STROKE_MARGIN * (high - low)
        self.inside = ((g.lowest(g.q) > low + margin)
                       & (-g.lowest(-g.q) < high - margin))
        #: the friction's column (N, n): the unit element's smoothed force where the friction
        #: is fitted, the file's friction force where it is known (zeros without)
        self.rub = np.zeros_like(g.q)

    def rubbing(self, force, play):
        """Set `rub` to `force` (n,) times the unit element of `play` (n,), m, smoothed."""
        self.rub = self.grid.smooth(force * unit_friction(self.grid.state[0], play))

    def pressure(self, time_constant, delay):
        """Return the smoothed applied pressure, its window minimum and maximum, where defined."""
        p, defined = applied_mean(self.command_t, self.command, self.grid.t, time_constant,
                                  delay)
        return (self.grid.smooth(p), self.grid.lowest(p), -self.grid.lowest(-p),
                self._whole_window(defined))

    def usable(self, high, p_max):
        """Return where a sample may enter a fit: inside the stroke, its window below `p_max`."""
        return self.inside & (high < p_max)

    def _whole_window(self, defined):
        return np.convolve(~defined, np.ones(self.grid.window), 'same') == 0

    def searchable(self):
        """Return the training samples defined for every delay of the search, (N,)."""
        g = self.grid
        first = self.command_t[0] + DELAY_RANGE[1]
        return self.train & self._whole_window(g.t - 0.5 * g.dt >= first)


class Identification:
    """The regression over all runs; `fit` returns a Result."""

    def __init__(self, runs, setup, options):
        unknown = set(options.fit) - set(PARAMETERS)
        if unknown:
            raise ConfigError('--fit', f'unknown parameters {sorted(unknown)}; choose from '
                                       f'{list(PARAMETERS)}')
        self.setup, self.options = setup, options
        act = setup.actuation
        #: the file's area slope over the stroke, 1/m, per PMA (the fit's nominal)
        self.falloff = act.falloff()
        self.stroke = setup.model.spec.stroke
        lag = 'time_constant' in options.fit or 'delay' in options.fit
        window = options.window or (LAG_WINDOW if lag else None)
        self.runs = [_Run(run, setup, window) for run in runs]
        self.margin = MARGIN * float(np.max(act.p_max - act.p_min))
        #: a sample's window reaching this pressure (Pa) is clipped: left out
        self.p_limit = act.p_max - self.margin
        self.groups = np.arange(setup.model.n) if options.per_pma else np.zeros(
            setup.model.n, dtype=int)
        self.names = self._parameter_names()
        self.chatter = np.max([chatter_share(run.command_t, run.command) for run in runs],
                              axis=0)
        #: the file's friction per PMA: slip force (N) and play (m)
        self.known_friction = nominal_friction(setup)
        force, play = self.known_friction
        if 'friction' not in options.fit and force.any():
            for run in self.runs:
                run.rubbing(force, np.where(force > 0.0, play, 1.0))
        #: the play of the fitted friction, m (one for all PMAs)
        self.play = None
        #: parameters held at a value (index in `names`: value of its coefficient), and why
        self.held, self.notes = {}, []

    # -- the linear problem ------------------------------------------------------------------
    def _parameter_names(self):
        s, fit = self.setup, self.options.fit
        names = []
        if 'stiffness' in fit:
            names += [('model.sections.stiffness', i, f'section {i + 1} stiffness', 'N/m')
                      for i in range(s.sections)]
        if 'damping' in fit:
            names += [('model.sections.damping', i, f'section {i + 1} damping', 'N s/m')
                      for i in range(s.sections)]
        groups = self.groups.max() + 1
        pma = (lambda g: s.joints.model_names[g]) if self.options.per_pma else (lambda g: 'all')
        if 'area' in fit:
            names += [('output.area', g, f'area ({pma(g)})', 'm^2') for g in range(groups)]
        if 'deadzone' in fit:
            names += [('output.deadzone', g, f'dead zone ({pma(g)})', 'Pa')
                      for g in range(groups)]
        if 'area_slope' in fit:
            names += [('output.area_slope', g, f'area slope ({pma(g)})', '1')
                      for g in range(groups)]
        if 'friction' in fit:
            names += [('output.friction', g, f'friction ({pma(g)})', 'N')
                      for g in range(groups)]
        return names

    def _columns(self, j, q, qd, h, p, deadzone, rub):
        """
        Return the global parameter indices, regressor columns and target of PMA `j`.

        `rub`: its friction column (`_Run.rub`): the unit element's force, or the known force.
        """
        s, fit = self.setup, self.options.fit
        a_nom, dz_nom = s.actuation.area[j], s.actuation.deadzone[j]
        i, g = s.section[j], self.groups[j]
        groups = self.groups.max() + 1
        index, columns, target = [], [], h.copy()
        offset = 0
        # the area's share at q: the file's slope, or 1 where the slope is fitted (its column)
        share = 1.0 if 'area_slope' in fit else 1.0 - self.falloff[j] * q
        if 'stiffness' in fit:
            index.append(offset + i)
            columns.append(-q)
            offset += s.sections
        else:
            target += s.stiffness[i] * q
        if 'damping' in fit:
            index.append(offset + i)
            columns.append(-qd)
            offset += s.sections
        else:
            target += s.damping[i] * qd
        if 'area' in fit:
            index.append(offset + g)
            columns.append(share * (p if 'deadzone' in fit else p - dz_nom))
            offset += groups
        else:
            target -= a_nom * share * (p if 'deadzone' in fit else p - dz_nom)
        if 'deadzone' in fit:
            index.append(offset + g)
            columns.append(-share * np.ones_like(p))
            offset += groups
        if 'area_slope' in fit:
            index.append(offset + g)
            columns.append(-(q / self.stroke[j]) * (p - deadzone))
            offset += groups
        if 'friction' in fit:
            index.append(offset + g)
            columns.append(rub)
        else:
            target -= rub
        return index, np.column_stack(columns) if columns else np.zeros((len(p), 0)), target

    def _stack(self, part, time_constant, delay):
        """
        Return the concatenated ``q, qd, h, p, p_low, rub`` of one part of every run.

        Samples whose window leaves the stroke, or reaches ``p_max`` (where the valves or the
        controller clip the pressure the arm needed), get ``p_low = -inf``: never used, and
        counted in `left_out` (per PMA, summed).
        """
        rows = []
        self.left_out = {'outside the stroke': 0, 'at the pressure limit': 0}
        self.kept = []          # per run: the samples stacked
        for run in self.runs:
            p, low, high, defined = run.pressure(time_constant, delay)
            keep = getattr(run, part) & defined
            usable = run.usable(high, self.p_limit)
            self.left_out['outside the stroke'] += int(np.count_nonzero(~run.inside[keep]))
            self.left_out['at the pressure limit'] += int(np.count_nonzero(
                (run.inside & ~usable)[keep]))
            low = np.where(usable, low, -np.inf)
            rows.append((run.grid.q[keep], run.grid.qd[keep], run.h[keep], p[keep], low[keep],
                         run.rub[keep]))
            self.kept.append(keep)
        return [np.concatenate(column) for column in zip(*rows)]

    def _solve(self, data, deadzone):
        """Least squares over the samples above `deadzone` (n,); see Result for the output."""
        q, qd, h, p, low, rub = data
        P = len(self.names)
        A, b = np.zeros((P, P)), np.zeros(P)
        masks, blocks = [], []
        for j in range(self.setup.model.n):
            mask = low[:, j] > deadzone[j] + self.margin
            if np.count_nonzero(mask) < MIN_SAMPLES:
                name = self.setup.joints.model_names[j]
                fix = (chatter_note(self.chatter[j]) if self.chatter[j] > CHATTER_SHARE else
                       'run an excitation reference that pressurises every PMA')
                raise ConfigError('', f'pressures of {name} are above the dead zone '
                                      f'({deadzone[j] / 1e3:.1f} kPa + {self.margin / 1e3:.1f} '
                                      f'kPa margin) in only {np.count_nonzero(mask)} samples,'
                                      f' need {MIN_SAMPLES}: {fix}')
            index, X, y = self._columns(j, q[mask, j], qd[mask, j], h[mask, j], p[mask, j],
                                        deadzone[j], rub[mask, j])
            A[np.ix_(index, index)] += X.T @ X
            b[index] += X.T @ y
            masks.append(mask)
            blocks.append((index, X, y))
        return A, b, masks, blocks

    def _theta(self, A, b):
        """
        Solve the normal equations ``A theta = b`` with the held parameters at their values.

        Returns theta, the covariance factor (zero in the held rows and columns) and the
        scaled free problem's condition number.
        """
        theta, inverse = np.zeros(len(b)), np.zeros_like(A)
        held = np.array(sorted(self.held), dtype=int)
        theta[held] = [self.held[k] for k in held]
        free = np.setdiff1d(np.arange(len(b)), held)
        A_free = A[np.ix_(free, free)]
        scale = np.sqrt(np.diag(A_free))
        dead = np.flatnonzero(scale == 0.0)
        if dead.size:
            self._unexcited(int(free[dead[0]]), np.inf)
        scaled = A_free / np.outer(scale, scale)
        eig, vec = np.linalg.eigh(scaled)
        condition = float(np.sqrt(eig[-1] / max(eig[0], 1e-300)))
        if condition > COND_LIMIT:
            self._unexcited(int(free[np.argmax(np.abs(vec[:, 0]))]), condition)
        rhs = b[free] - A[np.ix_(free, held)] @ theta[held]
        theta[free] = np.linalg.solve(scaled, rhs / scale) / scale
        inverse[np.ix_(free, free)] = np.linalg.inv(scaled) / np.outer(scale, scale)
        return theta, inverse, condition

    def _unexcited(self, k, condition):
        key, index, label, _ = self.names[k]
        raise Unexcited(k, f'the data do not excite {label} ({key}[{index}]; condition '
                           f'number {condition:.3g}): run an excitation reference '
                           f'(reference.type: multisine, config/identify_excitation.yaml)')

    def hold(self, k, value, why):
        """Hold parameter `k` (index in `names`) at the coefficient `value`; say `why`."""
        self.held[k] = float(value)
        self.notes.append(why)

    def nominal(self, k):
        """Return the file's value of parameter `k` (index in `names`), in its own unit."""
        key, index, _, _ = self.names[k]
        s = self.setup
        values = {'model.sections.stiffness': s.stiffness, 'model.sections.damping': s.damping,
                  'output.area': s.actuation.area, 'output.deadzone': s.actuation.deadzone,
                  'output.area_slope': self.falloff * self.stroke,
                  'output.friction': self.known_friction[0]}[key]
        return float(values[index if key.startswith('model') or self.options.per_pma else 0])

    def nominal_coefficient(self, k):
        """Return the file's value of parameter `k` as its regression coefficient."""
        key, index, _, _ = self.names[k]
        if key in ('output.deadzone', 'output.area_slope'):     # coefficient: value x area
            return self.nominal(k) * self.setup.actuation.area[
                index if self.options.per_pma else 0]
        return self.nominal(k)

    @staticmethod
    def _residuals(theta, blocks):
        return [y - X @ theta[index] for index, X, y in blocks]

    def _deadzone(self, theta):
        """Return the dead zone per PMA (Pa) implied by `theta` (the nominal where not fitted)."""
        s, fit = self.setup, self.options.fit
        if 'deadzone' not in fit:
            return s.actuation.deadzone.copy()
        return np.maximum(self._block(theta, 'output.deadzone') / self._area(theta), 0.0)

    def _area(self, theta):
        if 'area' not in self.options.fit:
            return self.setup.actuation.area.copy()
        return self._block(theta, 'output.area')

    def _slope(self, theta):
        """Return the area's fall per metre of extension (1/m, per PMA): fitted or the file's."""
        if 'area_slope' not in self.options.fit:
            return self.falloff
        return self._block(theta, 'output.area_slope') / self._area(theta) / self.stroke

    def _friction(self, theta):
        """Return what multiplies a run's `rub` (n,): the fitted friction, or 1 (it is known)."""
        if 'friction' not in self.options.fit:
            return np.ones(self.setup.model.n)
        return self._block(theta, 'output.friction')

    def _block(self, theta, key):
        """Return the coefficients of the parameter-file `key` per PMA (by group)."""
        start = [k for k, name in enumerate(self.names) if name[0] == key][0]
        return theta[start:start + self.groups.max() + 1][self.groups]

    def _linear(self, data, deadzone=None, iterations=DEADZONE_ITERATIONS):
        """Fit with the dead-zone refits; return theta, covariance factor, masks, blocks, dz."""
        deadzone = self.setup.actuation.deadzone.copy() if deadzone is None else deadzone
        masks = None
        for _ in range(iterations):
            A, b, new_masks, blocks = self._solve(data, deadzone)
            theta, inverse, condition = self._theta(A, b)
            settled = masks is not None and all(np.array_equal(m, n)
                                                for m, n in zip(masks, new_masks))
            masks = new_masks
            if 'deadzone' not in self.options.fit or settled:
                break
            deadzone = self._deadzone(theta)
        return theta, inverse, condition, masks, blocks, deadzone

    # -- the actuator lag ---------------------------------------------------------------------
    def _lag_problem(self, lag, deadzone):
        """
        Return the cost of a candidate ``(time_constant, delay)`` on a fixed sample set.

        The samples are those the linear fit at `lag` keeps above `deadzone`, among the
        training samples every candidate defines, so that candidates are compared on the same
        data. Each PMA's regressor and target are affine in its pressure ``p``, row by row:
        ``X = X0 + p E``, ``y = y0 + p c`` (``E`` holds the area's share at each length, and
        the fitted slope's ``-q / l_max``); the products of ``X0`` and ``y0`` are formed once,
        so a candidate costs its applied pressure (the exact delayed lag of the held
        commands, smoothed) and a few products per PMA.
        """
        keeps = [run.searchable() for run in self.runs]
        stacked = []
        for run, keep in zip(self.runs, keeps):
            p, low, high, _ = run.pressure(*lag)
            low = np.where(run.usable(high, self.p_limit), low, -np.inf)
            stacked.append((run.grid.q[keep], run.grid.qd[keep], run.h[keep], p[keep],
                            low[keep], run.rub[keep]))
        q, qd, h, p, low, rub = (np.concatenate(column) for column in zip(*stacked))
        _, _, masks, _ = self._solve((q, qd, h, p, low, rub), deadzone)
        P = len(self.names)
        pmas, count = [], sum(int(np.count_nonzero(mask)) for mask in masks)
        for j, mask in enumerate(masks):
            args = (j, q[mask, j], qd[mask, j], h[mask, j])
            index, X0, y0 = self._columns(*args, np.zeros(mask.sum()), deadzone[j],
                                          rub[mask, j])
            _, X1, y1 = self._columns(*args, np.ones(mask.sum()), deadzone[j], rub[mask, j])
            pmas.append((np.flatnonzero(mask), index, X0, y0, X1 - X0, y1 - y0,
                         X0.T @ X0, X0.T @ y0, y0 @ y0))

        def cost(time_constant, delay):
            p = np.concatenate([run.grid.smooth(applied_mean(
                run.command_t, run.command, run.grid.t, time_constant, delay)[0])[keep]
                for run, keep in zip(self.runs, keeps)]).T.copy()
            A, b, parts = np.zeros((P, P)), np.zeros(P), []
            for j, (rows, index, X0, y0, E, c, XX, Xy, yy) in enumerate(pmas):
                pj = p[j].take(rows)
                # X = X0 + diag(p) E, y = y0 + p c; einsum, not BLAS: a threaded BLAS woken
                # for each small product costs ten times the arithmetic on a busy machine
                pE, pc = np.einsum('ij,i->ij', E, pj), pj * c
                cross = np.einsum('ij,ik->jk', X0, pE)
                XtX = XX + cross + cross.T + np.einsum('ij,ik->jk', pE, pE)
                Xty = (Xy + np.einsum('ij,i->j', X0, pc) + np.einsum('ij,i->j', pE, y0)
                       + np.einsum('ij,i->j', pE, pc))
                A[np.ix_(index, index)] += XtX
                b[index] += Xty
                parts.append((index, XtX, Xty, yy + 2.0 * np.einsum('i,i', pc, y0)
                              + np.einsum('i,i', pc, pc)))
            try:
                theta = self._theta(A, b)[0]
            except ConfigError:         # a far-off candidate that cannot be fitted
                return np.inf
            sse = sum(yty - 2.0 * theta[index] @ Xty + theta[index] @ XtX @ theta[index]
                      for index, XtX, Xty, yty in parts)
            return float(sse) / count

        return cost

    def _search_lag(self):
        """
        Return the best ``(time_constant, delay)`` (s), the cost's Hessian there, and a mask.

        The mask says which of the two were searched. A coarse grid (lags 0-80 ms, delays
        every second sample up to DELAY_RANGE), then a Nelder-Mead refinement from its best
        point on the samples that point keeps.
        """
        fit = self.options.fit
        fit_lag, fit_delay = 'time_constant' in fit, 'delay' in fit
        dt = self.runs[0].grid.dt
        deadzone = self._linear(self._stack('train', 0.0, 0.0))[5]
        coarse = self._lag_problem((0.0, 0.0), deadzone)
        lags = np.array([0.0, 0.01, 0.02, 0.04, 0.08]) if fit_lag else [0.0]
        delays = np.arange(0.0, DELAY_RANGE[1] + 1e-12, 2 * dt) if fit_delay else [0.0]
        costs = {(T, d): coarse(T, d) for T in lags for d in delays}
        start = np.array(min(costs, key=costs.get))
        fine = self._lag_problem(tuple(start), deadzone)
        tolerance = 1e-4 * fine(*start)      # N^2: far below what sets the estimates
        mask = np.array([fit_lag, fit_delay])
        bounds = np.array([LAG_RANGE, DELAY_RANGE])

        def cost(x):
            full = start.copy()
            full[mask] = np.clip(x, bounds[mask, 0], bounds[mask, 1])
            return fine(*full)

        simplex = np.vstack((start[mask], start[mask] + np.diag([dt, dt][:mask.sum()])))
        found = minimize(cost, start[mask], method='Nelder-Mead',
                         options={'xatol': dt / 10, 'fatol': tolerance, 'maxiter': 200,
                                  'initial_simplex': simplex})
        best = start.copy()
        best[mask] = np.clip(found.x, bounds[mask, 0], bounds[mask, 1])
        steps = np.where(mask, np.maximum(0.05 * best, dt / 4), 0.0)[mask]
        hessian = _hessian(cost, best[mask], steps)
        return best, hessian, mask

    # -- the friction's play -----------------------------------------------------------------
    def _set_play(self, play):
        """Give every run the unit element's column at the play `play` (m, every PMA)."""
        self.play = float(play)
        n = self.setup.model.n
        for run in self.runs:
            run.rubbing(np.ones(n), np.full(n, self.play))

    def _search_play(self, lag=(0.0, 0.0)):
        """
        Return the best play (m), the residual's curvature in it and the estimates' slope.

        The samples are those the linear fit at the range's middle keeps (its dead zone held),
        so that candidates are compared on the same data: a log-spaced grid over PLAY_RANGE,
        then a bounded search between the best point's neighbours. The curvature (of the mean
        squared residual, per m^2) and ``d theta / d play`` (central differences, 10 % of the
        play) give the play's standard error and carry it into the estimates'. `lag`: the
        valves' ``(time_constant, delay)``, s, at which the pressures are taken.
        """
        self._set_play(np.sqrt(PLAY_RANGE[0] * PLAY_RANGE[1]))
        deadzone = self._linear(self._stack('train', *lag))[5]
        fixed = self._stack('train', *lag)[:5]

        def solve(play):
            self._set_play(play)
            rub = np.concatenate([run.rub[keep] for run, keep in zip(self.runs, self.kept)])
            A, b, _, blocks = self._solve((*fixed, rub), deadzone)
            try:
                theta = self._theta(A, b)[0]
            except ConfigError:         # a candidate that cannot be fitted
                return np.inf, None
            residual = np.concatenate(self._residuals(theta, blocks))
            return float(residual @ residual) / residual.size, theta

        logs = np.linspace(*np.log(PLAY_RANGE), PLAY_GRID)
        costs = [solve(np.exp(x))[0] for x in logs]
        best = int(np.argmin(costs))
        bounds = (logs[max(best - 1, 0)], logs[min(best + 1, len(logs) - 1)])
        found = minimize_scalar(lambda x: solve(np.exp(x))[0], method='bounded', bounds=bounds,
                                options={'xatol': 0.01})
        play = float(np.exp(found.x)) if found.fun <= costs[best] else float(np.exp(logs[best]))
        step = 0.1 * play
        (low, theta_low), (mid, _), (high, theta_high) = (solve(play + d)
                                                          for d in (-step, 0.0, step))
        self._set_play(play)
        slope = ((theta_high - theta_low) / (2.0 * step) if theta_low is not None
                 and theta_high is not None else np.zeros(len(self.names)))
        return play, (low - 2.0 * mid + high) / step ** 2, slope

    # -- the whole fit -----------------------------------------------------------------------
    def fit(self):
        """Run the identification; return a Result (ConfigError for unusable data)."""
        fit = self.options.fit
        lag = np.zeros(2)
        lag_cov = None
        valves = 'time_constant' in fit or 'delay' in fit
        if valves and 'friction' in fit:
            # the two searches, each on the other's best: the valves at a mid-range play,
            # the play at those valves, then the valves again at that play
            self._set_play(np.sqrt(PLAY_RANGE[0] * PLAY_RANGE[1]))
            self._search_play(self._search_lag()[0])
        if valves:
            lag, hessian, searched = self._search_lag()
        if 'friction' in fit:
            play, curvature, slope = self._search_play(lag)
        data = self._stack('train', *lag)
        left_out = dict(self.left_out)
        theta, inverse, condition, masks, blocks, deadzone = self._linear(data)
        residuals = self._residuals(theta, blocks)
        flat = np.concatenate(residuals)
        dof = max(flat.size - len(theta) + len(self.held), 1)
        inflation = _correlation_time(residuals)
        sigma2 = float(flat @ flat) / dof * inflation
        cov = sigma2 * inverse
        if 'time_constant' in fit or 'delay' in fit:
            lag_cov = np.zeros((2, 2))
            lag_cov[np.ix_(searched, searched)] = (2.0 * sigma2 / flat.size
                                                   * np.linalg.pinv(hessian))
        friction = []
        if 'friction' in fit:
            if not curvature > 0.0:
                raise FrictionUnexcited(f'the residual does not pin the play near '
                                        f'{play * 1e3:.3g} mm',
                                        'run an excitation that reverses every PMA')
            play_var = 2.0 * sigma2 / flat.size / curvature
            friction = self._friction_stiffness(theta, cov, play, play_var, slope)
            # the play's own error moves every estimate along the slope of its fit
            cov = cov + play_var * np.outer(slope, slope)
        estimates = self._estimates(theta, cov, lag, lag_cov) + friction
        self._check_excited(estimates)
        result = self._judge(theta, deadzone, lag, estimates, condition, flat)
        result.scale_note = self._scale_note(estimates)
        result.left_out = left_out
        result.excitation = self._excitation(masks, len(data[0]))
        result.details = [f'{run.name}: {run.grid.how()}' for run in self.runs] + self.notes
        if 'friction' in fit:
            result.details.append(f'friction: one Maxwell-slip element per PMA, play (slip '
                                  f'force over stiffness) {self.play * 1e3:.3g} mm for every '
                                  f'PMA; length reversals over {REVERSAL_PLAYS:g} plays per '
                                  f'PMA: {" ".join(str(c) for c in self._reversals())}')
        return result

    def _friction_stiffness(self, theta, cov, play, play_var, slope):
        """
        Return the friction stiffness ``friction / play`` per group as Estimates.

        Its error: the friction's given the play, and the play's, which moves the friction
        along `slope` (``d theta / d play``) while it divides it.
        """
        out = []
        nominal = self.setup.friction[1] if self.setup.friction is not None else None
        for k, (key, index, label, _) in enumerate(self.names):
            if key != 'output.friction':
                continue
            force = theta[k]
            lever = slope[k] / play - force / play ** 2
            error = np.sqrt(max(cov[k, k] / play ** 2 + lever ** 2 * play_var, 0.0))
            nom = 1.5e4 if nominal is None else nominal[index if self.options.per_pma else 0]
            out.append(Estimate('output.friction_stiffness', index,
                                label.replace('friction', 'friction stiffness'),
                                float(force / play), float(error), float(nom), 'N/m'))
        return out

    def _reversals(self):
        """Return each PMA's length reversals over REVERSAL_PLAYS plays, fitted parts, (n,)."""
        return sum(reversals(run.grid.q[run.train], REVERSAL_PLAYS * self.play)
                   for run in self.runs)

    def _excitation(self, masks, samples):
        """Return how the runs excited each PMA (PmaExcitation, model order)."""
        low, high = (np.asarray(b, dtype=float) for b in self.setup.model.joint_limits())
        motion = np.max([np.std(run.grid.q, axis=0) for run in self.runs], axis=0)
        noise = np.max([run.grid.noise() for run in self.runs], axis=0)
        g = self.runs[0].grid
        return [PmaExcitation(float(self.chatter[j]), np.count_nonzero(mask) / samples,
                              float(motion[j]), float(motion[j] / (high[j] - low[j])),
                              float(noise[j]), g.window * g.dt)
                for j, mask in enumerate(masks)]

    def _estimates(self, theta, cov, lag, lag_cov):
        s, fit = self.setup, self.options.fit
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        out = []
        area_index = {name[1]: k for k, name in enumerate(self.names) if name[0] == 'output.area'}
        for k, (key, index, label, unit) in enumerate(self.names):
            value, error = theta[k], se[k]
            nom = self.nominal(k)
            if key in ('output.deadzone', 'output.area_slope'):     # coefficient / area
                j = index
                area = theta[area_index[j]] if 'area' in fit else s.actuation.area[j]
                value = theta[k] / area
                if 'area' in fit:       # delta method for c / a
                    a = area_index[j]
                    grad = np.array([1.0 / area, -theta[k] / area ** 2])
                    sub = cov[np.ix_([k, a], [k, a])]
                    error = float(np.sqrt(max(grad @ sub @ grad, 0.0)))
                else:
                    error = se[k] / area
            out.append(Estimate(key, index, label, float(value), float(error), float(nom), unit))
        for k, (name, key) in enumerate((('time_constant', 'output.time_constant'),
                                         ('delay', 'output.delay'))):
            if name in fit:
                error = float(np.sqrt(max(lag_cov[k, k], 0.0))) if lag_cov is not None else 0.0
                out.append(Estimate(key, None, name.replace('_', ' '), float(lag[k]), error,
                                    0.0, 's'))
        return out

    def _check_excited(self, estimates):
        for estimate in estimates:
            if estimate.key in ('output.friction', 'output.friction_stiffness'):
                self._check_friction(estimate)
                continue
            if estimate.key == 'output.area_slope' and estimate.se > SLOPE_SE_LIMIT:
                low, high = (np.asarray(b, dtype=float) for b in
                             self.setup.model.joint_limits())
                span = np.max([np.ptp(run.grid.q, axis=0) for run in self.runs], axis=0)
                raise ConfigError('', f'the data do not excite {estimate.label} '
                                      f'({estimate.key}; standard error {estimate.se:.3g} '
                                      f'against {SLOPE_SE_LIMIT}): the PMA lengths spanned '
                                      f'{100 * np.min(span / (high - low)):.0f}-'
                                      f'{100 * np.max(span / (high - low)):.0f} % of the '
                                      f'stroke; run an excitation that strokes them further '
                                      f'under pressure (config/identify_excitation.yaml)')
            if estimate.key.startswith('output.') and estimate.key != 'output.area':
                continue
            reference = abs(estimate.nominal) or abs(estimate.value)
            if estimate.se > REL_SE_LIMIT * reference:
                k = self.names.index((estimate.key, estimate.index, estimate.label,
                                      estimate.unit))
                raise Unexcited(k, f'the data do not excite {estimate.label} '
                                   f'({estimate.key}; standard error {estimate.se:.3g} '
                                   f'{estimate.unit} against {reference:.3g}): run an '
                                   f'excitation reference (reference.type: multisine, '
                                   f'config/identify_excitation.yaml)')

    def _check_friction(self, estimate):
        """Refuse a friction the runs did not excite: few reversals, or a large error."""
        count = self._reversals()
        travel = REVERSAL_PLAYS * self.play
        if count.min() < MIN_REVERSALS:
            raise FrictionUnexcited(f'the PMA lengths reversed after more than '
                                    f'{travel * 1e3:.2g} mm ({REVERSAL_PLAYS:g} plays) only '
                                    f'{count.min()}-{count.max()} times, need {MIN_REVERSALS}',
                                    'run an excitation that reverses every PMA further and '
                                    'more often')
        if estimate.value <= 0.0 or estimate.se > FRICTION_SE_LIMIT * estimate.value:
            raise FrictionUnexcited(f'{estimate.label} {estimate.value:.3g} +- '
                                    f'{estimate.se:.2g} {estimate.unit}, where it must be '
                                    f'positive and its standard error within '
                                    f'{100 * FRICTION_SE_LIMIT:.0f} % of it: the PMAs have no '
                                    f'friction these runs can tell, or the runs do not show it',
                                    'leave friction out of --fit, or run the excitation longer')

    def _scale_note(self, estimates):
        area = [e for e in estimates if e.key == 'output.area']
        if area and max(e.se / e.value for e in area) > 0.05:
            return ('the data barely pin the force scale: it rests on gravity and inertia, '
                    'which this run hardly excites (move the arm faster or through larger '
                    'bends)')
        return ''

    def _judge(self, theta, deadzone, lag, estimates, condition, train_residuals):
        """Return the Result with held-out R^2 and the data of the held-out plot."""
        s = self.setup
        n = s.model.n
        k = s.stiffness.copy()
        d = s.damping.copy()
        for e in estimates:
            if e.key == 'model.sections.stiffness':
                k[e.index] = e.value
            elif e.key == 'model.sections.damping':
                d[e.index] = e.value
        area = self._area(theta)
        held_out, sse, sst, count = [], np.zeros(n), np.zeros(n), 0
        all_res, all_meas = [], []
        for run in self.runs:
            p, low, high, defined = run.pressure(*lag)
            g = run.grid
            keep = run.test & defined
            measured = (area * (1.0 - self._slope(theta) * g.q) * (p - deadzone)
                        + self._friction(theta) * run.rub)
            predicted = run.h + k[s.section] * g.q + d[s.section] * g.qd
            usable = (keep[:, None] & (low > deadzone + self.margin)
                      & run.usable(high, self.p_limit))
            measured_shown = np.where(usable, measured, np.nan)
            held_out.append((g.t[keep] - g.t[0], measured_shown[keep], predicted[keep]))
            res = np.where(usable, measured - predicted, 0.0)
            sse += np.sum(res ** 2, axis=0)
            count += int(np.count_nonzero(usable))
            all_res.append(res[usable])
            all_meas.append(measured[usable])
            for j in range(n):
                column = measured[usable[:, j], j]
                sst[j] += np.sum((column - column.mean()) ** 2) if column.size else 0.0
        res = np.concatenate(all_res)
        meas = np.concatenate(all_meas)
        r2 = 1.0 - sse / np.where(sst > 0.0, sst, np.nan)
        r2_all = 1.0 - float(res @ res) / float(np.sum((meas - meas.mean()) ** 2))
        return Result(estimates, condition, float(np.sqrt(np.mean(train_residuals ** 2))),
                      float(np.sqrt(np.mean(res ** 2))) if count else float('nan'), r2,
                      r2_all, train_residuals.size, held_out)


def _correlation_time(residuals):
    """
    Return the integrated autocorrelation time (samples) of the residuals, >= 1.

    Smoothing and oversampling correlate neighbouring residuals; standard errors that assumed
    independent samples would be too small by its square root.
    """
    total = []
    for r in residuals:
        if r.size < 16:
            continue
        r = r - r.mean()
        spectrum = np.fft.rfft(r, 2 * r.size)
        acf = np.fft.irfft(spectrum * np.conj(spectrum))[:r.size]
        acf /= acf[0] if acf[0] > 0.0 else 1.0
        cut = np.argmax(acf < 0.0) if np.any(acf < 0.0) else r.size
        total.append(1.0 + 2.0 * np.sum(acf[1:cut]))
    return max(float(np.median(total)) if total else 1.0, 1.0)


def _hessian(cost, x, steps):
    """Return the central-difference Hessian of `cost` at `x` with per-coordinate `steps`."""
    m = len(x)
    H = np.zeros((m, m))
    f0 = cost(x)
    for a in range(m):
        ea = np.zeros(m)
        ea[a] = steps[a]
        H[a, a] = (cost(x + ea) - 2.0 * f0 + cost(x - ea)) / steps[a] ** 2
        for b in range(a + 1, m):
            eb = np.zeros(m)
            eb[b] = steps[b]
            H[a, b] = H[b, a] = (cost(x + ea + eb) - cost(x + ea - eb) - cost(x - ea + eb)
                                 + cost(x - ea - eb)) / (4.0 * steps[a] * steps[b])
    return H


def identify(runs, setup, options=None):
    """
    Identify the arm's PMA parameters from recorded `runs`; return a Result.

    A dead zone fitted below zero (an offset the model lacks, such as a gravity load it gets
    wrong, read as negative play) is held at its bound, 0 Pa, and the rest refitted: with
    the bound active that is the bounded least-squares optimum. With `options.hold`, a
    parameter the data do not pin is held at the file's value and the rest refitted, one at
    a time; friction the data do not pin is left out of the fit, the file's (if any) applied
    as known. The result's details say what was held and why.
    """
    options = options or Options()
    work = Identification(runs, setup, options)
    while True:
        try:
            result = work.fit()
        except FrictionUnexcited as missing:
            if not options.hold:
                raise
            options = replace(options, fit=tuple(p for p in options.fit if p != 'friction'))
            work = Identification(runs, setup, options)
            work.notes.append(f"friction: held at the file's value, not fitted "
                              f"({missing.reason})")
            continue
        except Unexcited as missing:
            if not options.hold or missing.k in work.held:
                raise
            label = work.names[missing.k][2]
            work.hold(missing.k, work.nominal_coefficient(missing.k),
                      f'{label}: held at the file\'s value ({missing.problem.split(": run")[0]})')
            continue
        below = [(k, e) for k, e in enumerate(result.estimates[:len(work.names)])
                 if e.key == 'output.deadzone' and e.value < 0.0]
        if not below:
            return result
        for k, e in below:
            work.hold(k, 0.0, f'{e.label}: the free fit put it at {e.value / 1e3:.3g} +- '
                              f'{e.se / 1e3:.2g} kPa (held-out R^2 {result.r2_test_all:.3f}), '
                              f'below its bound; held at 0 Pa and the rest refitted')
