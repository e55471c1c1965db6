"""
Least-squares identification of a rigid (URDF) arm's inertial parameters from recorded runs.

The joint efforts are linear in the links' inertial parameters (per moving body, Pinocchio's
dynamic parameters ``m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz``, the
rotational inertia about the joint frame's origin):

    tau = Y(q, qd, qdd) theta  (+ diag(qd) f_v  with --fit inertia,friction)

with ``Y`` Pinocchio's ``computeJointTorqueRegressor``. Only some combinations of ``theta``
move the joints: QR with column pivoting of ``Y`` stacked over random states finds a base set
of columns, and each base parameter is its column's parameter plus the combination of the
dependent parameters that the data cannot tell apart from it (``beta = theta_B + K theta_D``).
The regression then runs on the base columns: the regressor per sample, then both sides through
the same smoothing filter (as for continuum arms), the commanded efforts as their mean over
each sample's cell. Runs are fitted on their first 70 % and judged on the last 30 %.

A payload (``--fit payload``, `identify_payload`): what the efforts hold beyond the nominal
model (the controller's, with any ``model.payload`` it has) is regressed on the four columns
of the frame's body (m, m c), the payload's own rotational inertia that of a ball
(models/rigid.py PAYLOAD_RADIUS) at the fitted centre (three passes); the result is the
controller's ``model.payload.*``, the nominal one plus the fit.
"""

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg import qr

from continuum_ctrl.models.fields import RIGID_SCHEMA
from continuum_ctrl.models.rigid import payload_at, payload_inertia
from continuum_ctrl.params import ConfigError, file_parameters, real_list, real_literal
from continuum_ctrl.params.launch_description import CONTROLLER
from continuum_ctrl.identify.defaults import MIN_R2, RIGID_FIT
from continuum_ctrl.identify.fit import (_correlation_time, COND_LIMIT, Estimate, HELD_OUT,
                                         Result)
from continuum_ctrl.identify.signals import applied_mean, grid

#: what `--fit` can name for a rigid arm (the default: identify/defaults.py); `payload` alone
PARAMETERS = ('inertia', 'friction', 'payload')
#: the payload's parameters in its joint's frame, and the passes that fit its ball's inertia
PAYLOAD = (('payload mass', 'kg'), ('payload m c_x', 'kg m'), ('payload m c_y', 'kg m'),
           ('payload m c_z', 'kg m'))
PAYLOAD_PASSES = 3
#: names and units of Pinocchio's ten dynamic parameters of a body
DYNAMIC = (('m', 'kg'), ('mc_x', 'kg m'), ('mc_y', 'kg m'), ('mc_z', 'kg m'),
           ('I_xx', 'kg m^2'), ('I_xy', 'kg m^2'), ('I_yy', 'kg m^2'), ('I_xz', 'kg m^2'),
           ('I_yz', 'kg m^2'), ('I_zz', 'kg m^2'))
#: random states per parameter for the structural QR, and the rank tolerance (relative)
STATES_PER_PARAMETER = 4
RANK_TOLERANCE = 1e-8
#: terms of a base parameter's combination shown in the report
SHOWN_TERMS = 4


@dataclass
class Base:
    """Base parameters: columns `base` and `dependent`, ``beta = theta_B + K theta_D``."""

    base: np.ndarray
    dependent: np.ndarray
    K: np.ndarray

    def of(self, theta):
        """Return the base parameters of full parameters `theta`."""
        return theta[self.base] + self.K @ theta[self.dependent]


class RigidArm:
    """The regressor of a RigidModel in the model's joint order, and its nominal parameters."""

    def __init__(self, model):
        self.model = model
        pm = model.model
        self.pin_model, self.data = pm, pm.createData()
        self.bodies = [pm.names[i] for i in range(1, pm.njoints)]
        self.theta = np.concatenate([pm.inertias[i].toDynamicParameters()
                                     for i in range(1, pm.njoints)])
        self.labels = [(f'{body} {name}', unit) for body in self.bodies for name, unit in DYNAMIC]
        names = list(model.joint_names)
        self.order = np.array([pm.joints[pm.getJointId(name)].idx_v for name in names])

    def regressor(self, q, qd, qdd):
        """Return ``Y`` (n, 10 bodies): efforts in the model's joint order per parameter."""
        to_pin = np.empty(len(q), dtype=int)
        to_pin[self.order] = np.arange(len(q))
        Y = pin.computeJointTorqueRegressor(self.pin_model, self.data, q[to_pin], qd[to_pin],
                                            qdd[to_pin])
        return Y[self.order]

    def base(self, seed=0):
        """Return the Base found by pivoted QR of the regressor at random states."""
        rng = np.random.default_rng(seed)
        low, high = (np.asarray(b, dtype=float) for b in self.model.joint_limits())
        low = np.where(np.isfinite(low), low, -np.pi)
        high = np.where(np.isfinite(high), high, np.pi)
        n, count = len(low), STATES_PER_PARAMETER * self.theta.size // len(low) + 1
        W = np.vstack([self.regressor(rng.uniform(low, high), rng.standard_normal(n),
                                      rng.standard_normal(n)) for _ in range(count)])
        R, pivot = qr(W, mode='r', pivoting=True)
        diagonal = np.abs(np.diag(R))
        rank = int(np.count_nonzero(diagonal > RANK_TOLERANCE * diagonal[0]))
        K = np.linalg.solve(R[:rank, :rank], R[:rank, rank:])
        return Base(pivot[:rank], pivot[rank:], K)

    def combination(self, base, k):
        """Return the report's text of base parameter `k`: its column plus dependent terms."""
        terms = sorted(((c, self.labels[j][0]) for c, j in zip(base.K[k], base.dependent)
                        if abs(c) > 1e-9), key=lambda term: -abs(term[0]))
        text = ' '.join(f'{"+" if c > 0 else "-"} {abs(c):.4g} {name}'
                        for c, name in terms[:SHOWN_TERMS])
        more = f' ... ({len(terms) - SHOWN_TERMS} more)' if len(terms) > SHOWN_TERMS else ''
        return f'{self.labels[base.base[k]][0]} {text}{more}'.strip()


class _Run:
    """One run on its grid: the regressor's `columns` and efforts, smoothed alike, split."""

    def __init__(self, run, arm, columns, friction, window):
        g = grid(run, window)
        self.grid = g
        rows = np.array([arm.regressor(*x)[:, columns] for x in zip(*g.state)])
        if friction:
            rows = np.concatenate((rows, np.array([np.diag(qd) for qd in g.state[1]])), axis=2)
        count, n, width = rows.shape
        self.Y = g.smooth(rows.reshape(count, n * width)).reshape(count, n, width)
        tau, defined = applied_mean(run.command_t, run.command, g.t)
        self.tau = g.smooth(tau)
        defined = np.convolve(~defined, np.ones(g.window), 'same') == 0
        edge, split = g.window // 2, int(round((1.0 - HELD_OUT) * count))
        self.train = np.zeros(count, dtype=bool)
        self.test = np.zeros(count, dtype=bool)
        self.train[edge:split - edge] = True
        self.test[split + edge:count - edge] = True
        self.train &= defined
        self.test &= defined


def identify_rigid(runs, setup, fit=RIGID_FIT, window=None):
    """Identify the base inertial parameters (and viscous friction) of a rigid arm; a Result."""
    unknown = set(fit) - set(PARAMETERS) | ({'payload'} & set(fit))
    if unknown or 'inertia' not in fit:
        raise ConfigError('--fit', f'a rigid arm fits {list(PARAMETERS)} (inertia always), got '
                                   f'{sorted(fit)}')
    friction = 'friction' in fit
    arm = RigidArm(setup.model)
    base = arm.base()
    prepared = [_Run(run, arm, base.base, friction, window) for run in runs]
    n = setup.model.n
    names = [arm.labels[j] for j in base.base]
    if friction:
        names += [(f'{name} viscous friction', 'N m s/rad') for name in setup.model.joint_names]
    X = np.concatenate([r.Y[r.train].reshape(-1, len(names)) for r in prepared])
    y = np.concatenate([r.tau[r.train].reshape(-1) for r in prepared])
    A = X.T @ X
    scale = np.sqrt(np.diag(A))
    if np.any(scale == 0.0):
        _unexcited(arm, base, int(np.flatnonzero(scale == 0.0)[0]), np.inf, names)
    scaled = A / np.outer(scale, scale)
    eig, vectors = np.linalg.eigh(scaled)
    condition = float(np.sqrt(eig[-1] / max(eig[0], 1e-300)))
    if condition > COND_LIMIT:
        _unexcited(arm, base, int(np.argmax(np.abs(vectors[:, 0]))), condition, names)
    inverse = np.linalg.inv(scaled) / np.outer(scale, scale)
    theta = inverse @ (X.T @ y)
    residual = y - X @ theta
    per_run = [(r.tau[r.train] - r.Y[r.train] @ theta).reshape(-1) for r in prepared]
    inflation = _correlation_time(per_run)
    sigma2 = float(residual @ residual) / max(residual.size - theta.size, 1) * inflation
    se = np.sqrt(np.maximum(np.diag(sigma2 * inverse), 0.0))
    nominal = np.concatenate((base.of(arm.theta), np.zeros(n if friction else 0)))
    estimates = [Estimate('', k, label, float(v), float(e), float(nom), unit)
                 for k, ((label, unit), v, e, nom) in enumerate(zip(names, theta, se, nominal))]
    result = _judge(prepared, theta, estimates, condition, residual, n)
    result.details = ['base parameters (each its column plus what the data cannot tell apart '
                      'from it):'] + [f'  {arm.combination(base, k)}'
                                      for k in range(len(base.base))]
    result.details.append(RIGID_NOTE)
    result.details += [f'{run.name}: {r.grid.how()}' for run, r in zip(runs, prepared)]
    return result


#: what the user does with the numbers (no parameter-file key holds inertial parameters)
RIGID_NOTE = ("note: a URDF arm's inertial parameters live in its URDF, not in parameter-file "
              "keys, so no fitted file is written: compare the estimates with the nominal "
              "values and correct the URDF's <inertial> elements where they differ by more than "
              "a few standard errors (a base parameter fixes only its combination)")


def _unexcited(arm, base, k, condition, names):
    label = names[k][0]
    if k < len(base.base):
        label = f'base parameter {arm.combination(base, k)}'
    raise ConfigError('', f'the data do not excite {label} (condition number '
                          f'{condition:.3g}): run an excitation reference (reference.type: '
                          f'multisine)')


def _judge(prepared, theta, estimates, condition, residual, n, offset=None):
    """
    Return the Result with held-out R^2 per joint and the data of the held-out plot.

    `offset(r)`: the part of each run's held-out efforts the fit does not carry (None: 0).
    """
    held_out, measured, predicted = [], [], []
    for r in prepared:
        tau = r.tau[r.test]
        model = r.Y[r.test] @ theta + (0.0 if offset is None else offset(r))
        held_out.append((r.grid.t[r.test] - r.grid.t[0], tau, model))
        measured.append(tau)
        predicted.append(model)
    measured, predicted = np.concatenate(measured), np.concatenate(predicted)
    error = measured - predicted
    spread = np.sum((measured - measured.mean(axis=0)) ** 2, axis=0)
    r2 = 1.0 - np.sum(error ** 2, axis=0) / np.where(spread > 0.0, spread, np.nan)
    total = 1.0 - float(np.sum(error ** 2)) / float(np.sum((measured - measured.mean()) ** 2))
    return Result(estimates, condition, float(np.sqrt(np.mean(residual ** 2))),
                  float(np.sqrt(np.mean(error ** 2))), r2, total, residual.size // n, held_out,
                  unit='N m', per='joint',
                  plot_labels=('measured effort (commands)', 'predicted Y(q, qd, qdd) beta'))


def identify_payload(runs, setup, frame, window=None, min_r2=MIN_R2):
    """
    Fit a payload at `frame` to the runs beyond `setup`'s model.

    Return ``(Result, payload, refusals)``: `payload` the controller's ``model.payload``
    ``{'frame', 'mass' kg, 'offset' m}``, the nominal one (`nominal_payload`) plus the fit;
    `refusals` a line per way the held-out data contradict the fit (`_contradictions`).
    ConfigError names a bad frame.
    """
    pm = setup.model.model
    if not isinstance(frame, str) or not pm.existFrame(frame):
        raise ConfigError('--payload-frame', f'must name a frame of the URDF, got {frame!r}')
    arm = RigidArm(setup.model)
    joint, _ = payload_at(pm, frame, np.zeros(3))
    body = slice(10 * (joint - 1), 10 * joint)
    prepared = [_Run(run, arm, np.arange(arm.theta.size), False, window) for run in runs]
    for r in prepared:                  # the nominal model's efforts, then the body's columns
        r.nominal = r.Y @ arm.theta
        r.Y = r.Y[..., body]
    X = np.concatenate([r.Y[r.train][..., :4].reshape(-1, 4) for r in prepared])
    Z = np.concatenate([r.Y[r.train][..., 4:].reshape(-1, 6) for r in prepared])
    y = np.concatenate([(r.tau - r.nominal)[r.train].reshape(-1) for r in prepared])
    theta, rotational = np.zeros(4), np.zeros(6)
    for _ in range(PAYLOAD_PASSES):
        theta, *_ = np.linalg.lstsq(X, y - Z @ rotational, rcond=None)
        rotational = ball_inertia(theta)
    if not theta[0] > 0.0:
        raise ConfigError('', f'the fit gives a payload of {theta[0]:.3g} kg at {frame}: the '
                              'runs hold no payload the model lacks (or a different arm)')
    residual = y - Z @ rotational - X @ theta
    inverse = np.linalg.inv(X.T @ X)
    sigma2 = float(residual @ residual) / max(residual.size - 4, 1)
    se = np.sqrt(np.maximum(np.diag(sigma2 * inverse), 0.0))
    estimates = [Estimate('', k, label, float(v), float(e), 0.0, unit)   # written by payload_yaml
                 for k, ((label, unit), v, e) in enumerate(zip(PAYLOAD, theta, se))]
    full = np.concatenate((theta, rotational))
    s = np.linalg.svd(X / np.sqrt(np.mean(X ** 2, axis=0)), compute_uv=False)
    result = _judge(prepared, full, estimates, float(s[0] / s[-1]), residual,
                    setup.model.n, offset=lambda r: r.nominal[r.test])
    payload = _total(pm, frame, joint, nominal_payload(setup.path), theta)
    result.details = [f"payload at {frame}: {theta[0]:.4g} kg (standard error {se[0]:.2g}), "
                      f"fitted beyond the nominal model; the controller's model.payload: "
                      f"{payload['mass']:.4g} kg at {np.round(payload['offset'], 4).tolist()} m "
                      f'in {frame}']
    result.details += [f'{run.name}: {r.grid.how()}' for run, r in zip(runs, prepared)]
    return result, payload, _contradictions(result, prepared, full, min_r2)


def ball_inertia(theta):
    """
    Return the rotational dynamic parameters (6) of a ball payload, kg m^2.

    `theta`: its mass and first moment (kg, kg m) in the joint's frame; the ball
    models/rigid.py hangs (`payload_inertia`), about the joint's origin; 0 for no mass.
    """
    if theta[0] <= 0.0:
        return np.zeros(6)
    return payload_inertia(theta[0], theta[1:4] / theta[0]).toDynamicParameters()[4:]


def nominal_payload(path):
    """Return the controller's ``model.payload`` in parameter file `path`, or None."""
    values = RIGID_SCHEMA.parse(file_parameters(path, CONTROLLER)[1], 'model')
    if not values['model.payload.mass']:
        return None
    return {'frame': values['model.payload.frame'], 'mass': values['model.payload.mass'],
            'offset': values['model.payload.offset']}


def _total(pm, frame, joint, nominal, theta):
    """Return the controller's model.payload: the `nominal` one (or None) plus `theta`."""
    mass, moment = theta[0], theta[1:4].copy()
    if nominal is not None:
        own, centre = payload_at(pm, nominal['frame'], nominal['offset'])
        if own != joint:
            raise ConfigError('--payload-frame', f"is on another body than the nominal "
                                                 f"model.payload.frame '{nominal['frame']}'")
        mass += nominal['mass']
        moment += nominal['mass'] * centre
    placement = pm.frames[pm.getFrameId(frame)].placement
    return {'frame': frame, 'mass': float(mass),
            'offset': placement.actInv(moment / mass).tolist()}


def _contradictions(result, prepared, full, min_r2):
    """
    Return a line per way the held-out 30 % contradict the payload fitted on the first 70 %.

    Their efforts predicted worse with the payload than without it, over all joints (a joint
    the payload barely loads, the Panda's first or seventh, moves by noise alone either way);
    and their R^2 below `min_r2`.
    """
    with_payload, without = (float(np.sqrt(np.mean(np.concatenate(
        [(r.tau - r.nominal - extra(r))[r.test] for r in prepared]) ** 2)))
        for extra in (lambda r: r.Y @ full, lambda r: 0.0))
    lines = []
    if with_payload >= without:
        lines.append(f'the held-out efforts are predicted worse with the payload '
                     f'({with_payload:.3g} N m RMS) than without ({without:.3g} N m): the '
                     'last 30 % of the runs do not hold the payload the first 70 % were '
                     'fitted to (did it change?)')
    if not result.r2_test_all >= min_r2:
        lines.append(f'held-out R^2 {result.r2_test_all:.3f} < {min_r2:g}')
    return lines


def payload_yaml(payload, result, sources):
    """Return the fitted file: the controller's model.payload, in its own section only."""
    mass = result.estimates[0]
    return '\n'.join([
        f'# Fitted by `continuum-ctrl identify --fit payload` from '
        f'{", ".join(str(s) for s in sources)}.',
        '# Give it to the controller as a second --params-file after the nominal file; it is',
        "# the controller's section only, so a simulator reading the same files keeps its own.",
        'continuum_controller:', '  ros__parameters:', '    model:', '      payload:',
        f"        frame: {payload['frame']}",
        f"        mass: {real_literal(payload['mass'])}  # kg; the fit's part: standard error "
        f'{mass.se:.3g} kg',
        f"        offset: {real_list(payload['offset'])}  # m, in the frame", ''])
