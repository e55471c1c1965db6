"""
The simulator's plant without ROS: settings, model mismatch, commands in, real-time stepping.

    settings = PlantSettings.parse(tree, model_namespace)
    plant = Plant(settings)
    plant.command(values, t)      # controller command, joints order: N, N m or Pa
    plant.command(values, t, issued)   # a stamped one: False (dropped) when late
    plant.advance(t)              # integrate with the fixed step up to time t (s)

The arm rests at its initial pose until the first valid command arrives (`wait_for_command`,
as a paused simulator would: no arm falls while the nodes discover each other); from then on
a command older than `command_timeout` means zero input (vented PMAs), from the step in which
it turns stale. A stamped command (`issued`: its stamp) goes stale `command_timeout` after its
stamp, and one already that old when it arrives, or older than the command in force, is never
applied: it is dropped and counted (`late_commands`), as a driver that checks stamps does.
`payload.*` hangs a mass the controller does not know at a URDF arm's frame (its Pinocchio
model and its MuJoCo arm alike; models/rigid.py `add_payload`).
The plant is the model given in `model.*` with `mismatch.mass_scale`,
`mismatch.stiffness_scale` and `mismatch.damping_scale` applied to `model.sections.mass`,
`.stiffness` and `.damping` (a URDF plant: `mass_scale` scales every link's mass and
rotational inertia, CoM kept); the controller's `output.*` keys say how commands turn into
generalized forces (the same ActuationMap), with the PMA area scaled by `mismatch.area_scale`
and the dead zone replaced by `mismatch.deadzone` where given.
In pressure mode, `actuator.*` puts valve dynamics (actuation/valves.py) between the command and
the pressure that pushes. What the simulator publishes is what the plant's `sensor` reads
(sim/sensor.py: `noise.*`, `sensor.*`): `plant.publish(t)` gives the sample published at `t`.
With `end_stops` the built-in engine stops each coordinate at its joint limits (`Integrated`).
`pma.*` gives the plant's PMAs friction and an area that falls with extension, on either
engine (sim/pma_traits.py): the force of each step is the pushing force through them.

`engine` says what integrates the arm: `builtin`, the plant model itself with `integrator`, or
`mujoco`, MuJoCo integrating, in `mujoco.timestep` steps within each `step` and among the
obstacles `mujoco.obstacles.*`, either a continuum arm as a disc stack (sim/mujoco_arm.py,
sim/mujoco_plant.py) built from the same `model.sections.*` (mismatch applied;
`model.limit_stiffness` is replaced by the disc stack's soft stops) with `mujoco.discs` discs
per section, or a URDF arm with `mujoco.armature` and its URDF's (or `mujoco.damping` and
`mujoco.friction`) joint damping and friction, or the user's MJCF `mujoco.model`.
"""

import dataclasses
from dataclasses import dataclass
import math
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import pinocchio as pin

from continuum_ctrl.actuation.pressure_map import ActuationMap
from continuum_ctrl.actuation.valves import Actuator
from continuum_ctrl.control.settings import (JointVectors, needs_pressure, read_output,
                                             shared_output)
from continuum_ctrl.models import load_model
from continuum_ctrl.models.integrators import INTEGRATORS
from continuum_ctrl.models.rigid import add_payload, payload_at, resolve_urdf
from continuum_ctrl.params import Check, ConfigError, Field, flatten, Reader, Schema
from continuum_ctrl.sim.mujoco_arm import continuum_mjcf, Obstacles
from continuum_ctrl.sim.pma_traits import FIELDS as PMA_FIELDS, PmaForces, PmaTraits
from continuum_ctrl.sim.push import CHECKS as PUSH_CHECKS, FIELDS as PUSH_FIELDS, Pushes
from continuum_ctrl.sim.sensor import (CHECKS as SENSOR_CHECKS, FIELDS as SENSOR_FIELDS, Sensor,
                                       SensorSettings)
from continuum_ctrl.sim.tip_capture import FIELDS as MOCAP_FIELDS, MocapSettings

#: the physics engines the plant can run on
ENGINES = ('builtin', 'mujoco')
#: the simulator's parameters besides `model.*` and the shared `joints` and `output.*`
FIELDS = {
    'step': Field('number', 0.001, 'fixed integration step, s', 1e-5, 0.05),
    'integrator': Field('string', 'rk4', 'fixed-step integrator of the plant; '
                        'implicit_damping_euler is stable for stiff PMA damping at 2 ms',
                        choices=tuple(INTEGRATORS)),
    'publish_rate_hz': Field('number', 500.0, 'joint_states publication rate, Hz', 1.0,
                             10000.0),
    'command_timeout': Field('number', 0.1, 'a command older than this (s) means zero input; '
                             'a stamped one (output.message joint_state) older than this '
                             'by its stamp is dropped (late_commands)', 1e-3, 10.0),
    'wait_for_command': Field('bool', True, 'rest at the initial pose until the first valid '
                              'command arrives'),
    'end_stops': Field('bool', False, 'builtin engine: each coordinate stops at its joint '
                       'limits (PMAs: [0, l_max]) as a hard, inelastic stop, as the MuJoCo '
                       "arm's do; false: the model's own passive forces alone"),
    'max_catch_up': Field('number', 0.05, 'longest simulated time integrated per wake-up; '
                          'more is dropped and counted as an overrun, s', 1e-3, 1.0),
    'initial.position': Field('numbers', [0.0], 'initial pose, joints order', per_joint=True),
    'mismatch.mass_scale': Field('number', 1.0, 'plant mass / nominal mass', 0.01, 100.0),
    'mismatch.stiffness_scale': Field('number', 1.0, 'plant stiffness / nominal stiffness',
                                      0.01, 100.0),
    'mismatch.damping_scale': Field('number', 1.0, 'plant damping / nominal damping', 0.01,
                                    100.0),
    'mismatch.area_scale': Field('number', 1.0, 'plant PMA area / output.area', 0.01, 100.0),
    'payload.mass': Field('number', 0.0, 'URDF arms: a payload the controller does not know, '
                          'kg, a 1 cm ball at payload.offset in payload.frame, on either '
                          'engine (0: none)', 0.0, 1e3),
    'payload.frame': Field('string', ..., 'URDF arms: the URDF frame carrying payload.mass '
                           '(required with it; the Panda: panda_hand)'),
    'payload.offset': Field('numbers', [0.0, 0.0, 0.0], "URDF arms: the payload's centre in "
                            'payload.frame, m', length=3),
    'mismatch.deadzone': Field('number', ..., "plant PMA dead zone, Pa (default: "
                               "output.deadzone)", 0.0, 1e7),
    **SENSOR_FIELDS,
    **MOCAP_FIELDS,
    **PMA_FIELDS,
    **PUSH_FIELDS,
    'actuator.time_constant': Field('number', 0.0, 'pressure mode: first-order lag of the '
                                    'applied PMA pressure behind the command, s (0: none)',
                                    0.0, 1.0),
    'actuator.delay': Field('number', 0.0, 'pressure mode: dead time of the applied PMA '
                            'pressure, s (0: none)', 0.0, 1.0),
    'engine': Field('string', 'builtin', 'physics engine: ' + ' | '.join(ENGINES),
                    choices=ENGINES),
    'mujoco.discs': Field('integer', 4, 'mujoco: rigid discs per continuum section', 1, 64),
    'mujoco.timestep': Field('number', 0.0005, 'mujoco: integration step within each `step`, '
                             'which it must divide, s', 1e-5, 0.05),
    'mujoco.armature': Field('numbers', [0.0], 'mujoco, URDF arms: joint armature (rotor '
                             'inertia), kg m^2 or kg, per joint or one for all', 0.0,
                             per_joint=True),
    'mujoco.damping': Field('numbers', ..., "mujoco, URDF arms: joint damping, N m s/rad or "
                            "N s/m (default: the URDF's <dynamics damping>)", 0.0,
                            per_joint=True),
    'mujoco.friction': Field('numbers', ..., "mujoco, URDF arms: joint dry friction, N m or N "
                             "(default: the URDF's <dynamics friction>)", 0.0, per_joint=True),
    'mujoco.model': Field('string', ..., "mujoco: the user's own MJCF file, whose joints or "
                          "tendons carry the names in `joints` and whose first actuators "
                          "take the commands in that order (then the arm's MJCF is not "
                          "built)"),
    'mujoco.obstacles.boxes': Field('numbers', ..., 'mujoco: fixed boxes in the base frame, '
                                    '6 numbers each: centre x y z, half sizes, m'),
    'mujoco.obstacles.spheres': Field('numbers', ..., 'mujoco: fixed spheres in the base '
                                      'frame, 4 numbers each: centre x y z, radius, m'),
    'actuator.max_rate': Field('number', 0.0, 'pressure mode: slew-rate limit of the applied '
                               'PMA pressure, Pa/s (0: none)', 0.0, 1e12),
}
#: the `actuator.*` keys, in the order of Actuator's arguments
ACTUATOR_KEYS = ('time_constant', 'delay', 'max_rate')
#: the keys the simulator shares with the controller (same meaning)
SHARED = ('joints', 'output.mode', 'output.message', 'output.area', 'output.deadzone',
          'output.area_slope', 'output.p_min', 'output.p_max')
#: the keys the simulator shares with the controller, as a Schema with the output checks
SHARED_SCHEMA = shared_output(SHARED)
#: every parameter `PlantSettings.parse` reads besides `model.*`
PLANT_FIELDS = {**SHARED_SCHEMA.fields, **FIELDS}


def _divides(step, timestep):
    """Whether `timestep` divides `step` (to 1e-9 of their ratio)."""
    ratio = step / timestep
    return not abs(ratio - round(ratio)) > 1e-9 * ratio


def _obstacle_checks(name, size):
    """Return the checks of `mujoco.obstacles.<name>`: `size` numbers each, sizes > 0."""
    key = f'mujoco.obstacles.{name}'
    return (Check(key, (key,), lambda values: len(values) % size == 0,
                  lambda values: f'must hold {size} numbers per obstacle, got {len(values)}'),
            Check(key, (key,), lambda values: all(
                v > 0.0 for k in range(0, len(values), size) for v in values[k + 3:k + size]),
                'sizes must be > 0'))


#: the checks among the simulator's keys, after the shared output's
CHECKS = (
    Check('mismatch.area_scale', ('output.mode', 'mismatch.area_scale'),
          lambda mode, scale: mode == 'pressure' or scale == 1.0,
          "needs output.mode 'pressure'"),
    Check('mismatch.deadzone', ('output.mode', 'mismatch.deadzone'),
          lambda mode, _: mode == 'pressure', "needs output.mode 'pressure'"),
    *(needs_pressure(f'actuator.{key}', "models PMA valves: needs output.mode 'pressure'")
      for key in ACTUATOR_KEYS),
    Check('mujoco.timestep', ('step', 'mujoco.timestep'), _divides,
          lambda step, timestep: f'must divide step {step} s, got {timestep} s'),
    *_obstacle_checks('boxes', 6),
    *_obstacle_checks('spheres', 4),
    *SENSOR_CHECKS,
    *PUSH_CHECKS,
)
#: the simulator's parameter table with its checks
SCHEMA = SHARED_SCHEMA + Schema(FIELDS, CHECKS)
#: the `mismatch.*` keys, read before the plant model is built
MISMATCH = Schema({key: field for key, field in FIELDS.items() if key.startswith('mismatch.')})
#: model keys scaled by the mismatch options
MISMATCH_KEYS = {'mass_scale': 'mass', 'stiffness_scale': 'stiffness',
                 'damping_scale': 'damping'}


@dataclass(frozen=True)
class PlantSettings:
    """Validated simulator settings; `model` is the plant (mismatch applied)."""

    model: Any
    vectors: JointVectors
    mode: str
    actuation: Optional[ActuationMap]
    step: float
    integrator: Callable[..., Any]
    publish_rate_hz: float
    command_timeout: float
    max_catch_up: float
    wait_for_command: bool
    initial: np.ndarray
    sensor: SensorSettings = SensorSettings()
    end_stops: bool = False
    actuator: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    engine: str = 'builtin'
    mujoco: Optional['MujocoOptions'] = None
    pma: Optional[PmaTraits] = None
    message: str = 'multiarray'
    push: Optional[Pushes] = None
    mocap: MocapSettings = MocapSettings()

    @classmethod
    def parse(cls, tree: Dict[str, Any], model_namespace: Dict[str, Any]) -> 'PlantSettings':
        """Parse the simulator's parameters; ConfigError names the key."""
        mismatch = MISMATCH.parse(Reader(tree, '').namespace('mismatch').tree, 'mismatch')
        spec = _scaled(model_namespace, mismatch)
        model = _scaled_links(load_model(spec), spec, mismatch['mismatch.mass_scale'])
        _alone_with_user_model(tree)
        values = SCHEMA.parse(tree, joints=len(model.joint_names))
        payload = _payload(values, model, spec)
        vec = JointVectors.of(values.get('joints'), model.joint_names)
        mode, actuation = read_output(values, vec, model)
        actuation = _mismatched_actuation(actuation, values)
        pma = PmaTraits.of(values, vec, actuation, model, values['step'])
        return cls(
            model=model, vectors=vec, mode=mode, actuation=actuation, step=values['step'],
            integrator=INTEGRATORS[values['integrator']],
            publish_rate_hz=values['publish_rate_hz'],
            command_timeout=values['command_timeout'], max_catch_up=values['max_catch_up'],
            wait_for_command=values['wait_for_command'],
            initial=vec.to_model(values['initial.position']),
            sensor=SensorSettings.of(values), end_stops=values['end_stops'],
            actuator=tuple(values[f'actuator.{key}'] for key in ACTUATOR_KEYS),
            engine=values['engine'],
            mujoco=MujocoOptions.of(values, model, spec, vec, payload),
            pma=pma, message=values['output.message'], push=Pushes.of(values, model),
            mocap=MocapSettings.of(values))


@dataclass(frozen=True)
class MujocoOptions:
    """
    The `mujoco.*` settings: discs per section, MuJoCo's step (s), obstacles.

    URDF arms: `urdf` (the file), `locked` (joint name -> position), `gravity`, per joint in
    model order `armature`, `damping` and `friction` (None: the URDF's), `mass_scale`.
    `model`: a user's MJCF file, which replaces the arm's generated MJCF.
    """

    discs: int
    timestep: float
    obstacles: Obstacles
    urdf: Optional[str] = None
    locked: Tuple[Tuple[str, float], ...] = ()
    gravity: Tuple[float, ...] = (0.0, 0.0, -9.81)
    armature: Tuple[float, ...] = ()
    damping: Optional[Tuple[float, ...]] = None
    friction: Optional[Tuple[float, ...]] = None
    mass_scale: float = 1.0
    model: Optional[str] = None
    #: (joint, position in its frame m, mass kg) of `payload.*`, or None
    payload: Optional[Tuple[str, Tuple[float, ...], float]] = None

    @classmethod
    def of(cls, values, model, spec, vec, payload=None):
        """
        Return the `mujoco.*` settings of the parsed `values`; None unless `engine` is mujoco.

        `spec`: the plant's `model` namespace; `vec`: its JointVectors. ConfigError names
        the key.
        """
        engine, urdf = values['engine'], spec.get('type') == 'urdf'
        if 'mujoco.model' in values:
            return _user_model(values, model)
        if engine == 'mujoco' and not (urdf or hasattr(model, 'spec')):
            raise ConfigError('engine', f"'mujoco' simulates continuum and URDF arms, not "
                                        f"the plant {type(model).__name__}")

        def per_joint(name):
            key = f'mujoco.{name}'
            if key not in values.given:
                return None
            if engine == 'mujoco' and not urdf:
                raise ConfigError(key, 'applies to URDF arms only')
            return tuple(vec.to_model(values[key]))
        armature = per_joint('armature') or (0.0,) * vec.n
        damping, friction = per_joint('damping'), per_joint('friction')
        if engine != 'mujoco':
            return None
        options = cls(discs=values['mujoco.discs'], timestep=values['mujoco.timestep'],
                      obstacles=Obstacles(*(_groups(values, name, size)
                                            for name, size in (('boxes', 6), ('spheres', 4)))),
                      armature=armature, damping=damping, friction=friction)
        if urdf:
            options = dataclasses.replace(
                options, urdf=str(resolve_urdf(spec['urdf'])),
                mass_scale=values['mismatch.mass_scale'], payload=payload,
                locked=tuple(sorted(flatten(spec.get('locked_positions', {})).items())),
                gravity=tuple(spec.get('gravity', options.gravity)))
        return options


def _payload(values, model, spec):
    """
    Add `payload.*` to the plant `model` (a URDF arm), in place; return it for MuJoCo or None.

    ``(joint name, position in the joint's frame m, mass kg)``; ConfigError names the key.
    """
    mass = values['payload.mass']
    if not mass:
        return None
    if spec.get('type') != 'urdf':
        raise ConfigError('payload.mass', f'hangs on a URDF arm\'s frame, not on '
                                          f'{type(model).__name__}')
    frame = values.get('payload.frame')
    if frame not in model.frame_names():
        raise ConfigError('payload.frame', f'must name a frame of the URDF to carry '
                                           f'payload.mass, got {frame!r}')
    add_payload(model.model, frame, mass, values['payload.offset'])
    model.data = model.model.createData()
    joint, position = payload_at(model.model, frame, values['payload.offset'])
    return model.model.names[joint], tuple(position), mass


def _alone_with_user_model(tree):
    """With `mujoco.model`, refuse every other `mujoco.*` key but `timestep`."""
    given = tree.get('mujoco')
    if not isinstance(given, dict) or 'model' not in given:
        return
    for key in given:
        if key not in ('model', 'timestep'):
            raise ConfigError(f'mujoco.{key}', "does not apply with mujoco.model (the user's "
                                               'MJCF holds the whole arm)')


def _user_model(values, model):
    """Return the options of `mujoco.model` (the arm's MJCF is not built); None unless mujoco."""
    if values['engine'] != 'mujoco':
        return None
    path = values['mujoco.model']
    from continuum_ctrl.sim.mujoco_plant import check_user_model
    problem = check_user_model(path, model.joint_names)
    if problem:
        raise ConfigError('mujoco.model', problem)
    return MujocoOptions(discs=0, timestep=values['mujoco.timestep'], obstacles=Obstacles(),
                         model=path)


def _groups(values, name, size):
    """Return the obstacles of `name` as tuples of `size` numbers (checked by CHECKS)."""
    flat = values.get(f'mujoco.obstacles.{name}', [])
    return tuple(tuple(flat[k:k + size]) for k in range(0, len(flat), size))


def _mismatched_actuation(actuation, values):
    """Return the plant's ActuationMap: area scaled, dead zone replaced where given."""
    if actuation is None:
        return None
    deadzone = values.get('mismatch.deadzone', actuation.deadzone)
    return ActuationMap(actuation.n, values['mismatch.area_scale'] * actuation.area, deadzone,
                        actuation.p_min, actuation.p_max, prefix='mismatch',
                        slope=actuation.slope, stroke=actuation.stroke)


def _scaled(spec, mismatch):
    """Return the model namespace with the `mismatch` scales applied to `sections.*`."""
    spec = {k: (dict(v) if isinstance(v, dict) else v) for k, v in spec.items()}
    for option, key in MISMATCH_KEYS.items():
        scale = mismatch[f'mismatch.{option}']
        if scale == 1.0 or (option == 'mass_scale' and spec.get('type') == 'urdf'):
            continue
        sections = spec.get('sections', {})
        if key not in sections:
            raise ConfigError(f'mismatch.{option}', f"needs model.sections.{key}, which this "
                                                    f"model does not have")
        sections[key] = [scale * float(v) for v in np.atleast_1d(sections[key])]
    return spec


def _scaled_links(model, spec, scale):
    """Return a URDF plant with every link's mass and inertia times `scale` (CoM kept)."""
    if scale != 1.0 and spec.get('type') == 'urdf':
        inertias = model.model.inertias
        for i in range(1, len(inertias)):
            inertia = inertias[i]
            inertias[i] = pin.Inertia(scale * inertia.mass, inertia.lever,
                                      scale * inertia.inertia)
        model.data = model.model.createData()
    return model


class Integrated:
    """
    The built-in engine: the plant model integrated by the settings' `integrator`.

    With `end_stops` each coordinate stops at its joint limits (a PMA at its rest length and
    its stroke, ``[0, l_max]``), as the MuJoCo arm's tendon limits stop its PMA pieces: a
    coordinate that a step carried beyond a limit ends the step on it, by an inelastic
    impulse (`stop`). The MuJoCo stop is soft (4 ms, damping ratio 1: no bounce, but
    millimetres deep under full pressure, docs/simulation-mujoco.md); this one is exact
    rather than a stiffer spring, which, taken explicitly, would need steps far below 2 ms on
    a few grams of PMA inertia. Off by default, as before: the model's own
    `model.limit_stiffness` (a smooth spring outside the limits; the shipped files' 5000 N/m)
    stops the arm, millimetres past under full pressure; the shipped files' comments call it
    a stiffening, not a stop, so they do not ask for this one.
    """

    def __init__(self, settings):
        self.model, self.integrator = settings.model, settings.integrator
        self.q = self.qd = np.zeros(self.model.n)
        self.limits = self.model.joint_limits() if settings.end_stops else None
        self.pushed = settings.push.frame if settings.push is not None else None

    def reset(self, q0):
        """Rest at `q0` (model order); return ``(q, qd)``."""
        self.q, self.qd = np.array(q0, dtype=float), np.zeros(self.model.n)
        return self.q, self.qd

    def step(self, tau, dt, push=None):
        """
        Advance by `dt` s with the generalized force `tau` held; return ``(q, qd)``.

        `push` (N, base axes; None: none): a force on the frame `pushed`, held as its
        generalized force ``J^T push`` at the step's start (sim/push.py).
        """
        if push is not None:
            tau = tau + self.model.frame_jacobian(self.q, self.pushed)[:3].T @ push
        q, qd = self.integrator(self.model, self.q, self.qd, tau, dt)
        if self.limits is not None:
            low, high = self.limits
            q, qd = stop(self.model, self.q, q, qd, low, high, dt)
        self.q, self.qd = q, qd
        return self.q, self.qd

    def warm_up(self, tau, dt):
        """Make one step and discard it: the first compiled call of a process loads kernels."""
        self.integrator(self.model, self.q, self.qd, tau, dt)

    def contact_force(self):
        """Return None: the built-in plant has no contacts."""
        return None

    def largest_contact_force(self):
        """Return None: the built-in plant has no contacts."""
        return None


def stop(model, start, q, qd, low, high, dt):
    """
    Return the step from `start` that ended at ``(q, qd)``, stopped at ``[low, high]``.

    The coordinates the step carried beyond a limit take an inelastic impulse ``J^T lam``
    that makes their velocity the one that ends the step on the limit (a time-stepping
    contact: the stop is met within the step, and its impulse is computed in the step's own
    matrix ``M + dt D`` at `start`, the matrix the implicit damping step solves with, so the
    impulse moves the other coordinates as the step would have; with M alone, the few grams of
    PMA inertia against 30 N s/m of damping turn the impulse into velocities the next step
    damps away, after they moved the arm: energy from nowhere). An impulse that would have
    to pull a coordinate off its stop is left out (the active set shrinks until every impulse
    pushes). The step's end moves by `dt` times the velocity change; what rounding leaves
    beyond a limit is set on it. After an implicit damping step this is that step of the
    arm with the stopped coordinates held (block inversion of ``M + dt D``): as stable.
    """
    beyond = (q < low) | (q > high)
    if not beyond.any():
        return q, qd
    limit = np.where(q < low, low, high)
    inward = np.where(q < low, 1.0, -1.0)        # the direction each stop pushes
    W = np.linalg.inv(model.mass_matrix(start) + dt * model.damping_matrix(start))
    active, change = beyond.copy(), np.zeros_like(qd)
    while active.any():
        index = np.flatnonzero(active)
        lam = np.linalg.solve(W[np.ix_(index, index)],
                              (limit[index] - start[index]) / dt - qd[index])
        pulls = inward[index] * lam < 0.0
        if not pulls.any():
            change = W[:, index] @ lam
            break
        active[index[pulls]] = False
    return np.clip(q + dt * change, low, high), qd + change


def _pma_forces(settings, q):
    """Return the PmaForces of `settings` relaxed at `q` (m), None with ideal PMAs."""
    return None if settings.pma is None else PmaForces(settings.pma, q)


def mujoco_xml(settings):
    """Return the MJCF of the MuJoCo arm of `settings` (engine mujoco)."""
    options = settings.mujoco
    if options.model is not None:
        with open(options.model) as handle:
            return handle.read()
    if options.urdf is not None:
        from continuum_ctrl.sim.mujoco_plant import urdf_mjcf
        return urdf_mjcf(options.urdf, settings.model.joint_names, dict(options.locked),
                         options.gravity, options.timestep, options.armature, options.damping,
                         options.friction, options.mass_scale, options.obstacles,
                         options.payload)
    spec = settings.model.spec
    return continuum_mjcf(spec, [options.discs] * spec.sections, options.timestep,
                          options.obstacles)


def new_engine(settings, q=None):
    """
    Return the engine of `settings`, at rest at `q` (model order; default the initial pose).

    `mujoco` is imported only for the mujoco engine.
    """
    engine: Any
    pushed = settings.push.frame if settings.push is not None else None
    if settings.engine == 'mujoco' and settings.mujoco.model is not None:
        from continuum_ctrl.sim.mujoco_plant import MujocoJoints
        engine = MujocoJoints(mujoco_xml(settings), settings.model.joint_names,
                              settings.mujoco.timestep, settings.mujoco.model, by_name=False,
                              pushed=pushed)
    elif settings.engine == 'mujoco' and settings.mujoco.urdf is not None:
        from continuum_ctrl.sim.mujoco_plant import MujocoJoints
        engine = MujocoJoints(mujoco_xml(settings), settings.model.joint_names,
                              settings.mujoco.timestep, pushed=pushed)
    elif settings.engine == 'mujoco':
        from continuum_ctrl.sim.mujoco_plant import MujocoArm
        engine = MujocoArm(mujoco_xml(settings), settings.model.spec, settings.mujoco.timestep,
                           pushed)
    else:
        engine = Integrated(settings)
    engine.reset(settings.initial if q is None else q)
    return engine


class Plant:
    """
    The simulated arm: state, held input and real-time stepping.

    `q`, `qd` (model order) and `t` (s) are the current state; `tau` the held generalized
    force commanded. `valves` (pressure mode with `actuator.*` set, else None) holds the
    applied pressures, which make the force; `pma` (None with ideal PMAs) turns it into the
    force on each PMA (sim/pma_traits.py); `engine` integrates (`new_engine`); `sensor`
    records every state it makes and publishes what it reads. `overruns`
    counts wake-ups that had to drop simulated time, `steps` the integration steps,
    `commands` the commands accepted, `stale_commands` the times the command in force
    outlived `command_timeout` (the input then fell to zero until the next one) and
    `late_commands` the stamped commands dropped as older than `command_timeout` or than the
    command in force.
    """

    def __init__(self, settings):
        self.settings = settings
        self.model = settings.model
        self.tau = np.zeros(self.model.n)
        self.command_time = -np.inf
        self.overruns = 0
        self.steps = 0
        self.commands = 0
        self.stale_commands = 0
        self.late_commands = 0
        self._fresh = False
        self.sensor = Sensor(settings.sensor, self.model.n)
        self.valves: Optional[Actuator] = None
        self._vented = True
        if settings.actuation is not None and any(settings.actuator):
            time_constant, delay, max_rate = settings.actuator
            self.valves = Actuator(time_constant, delay, max_rate, settings.actuation.p_min)
        self.engine = new_engine(settings)
        self.q: np.ndarray = self.engine.q
        self.qd: np.ndarray = self.engine.qd
        self.pma = _pma_forces(settings, self.q)
        self.reset()

    def update(self, settings):
        """
        Take new settings (the node's parameter change) and keep the state.

        The built-in engine goes on from the state with the new model; a MuJoCo arm whose
        model changed is built anew at the current pose, at rest. The PMAs' friction banks
        relax at the current pose.
        """
        self.settings, self.model = settings, settings.model
        self.sensor.update(settings.sensor)
        self.pma = _pma_forces(settings, self.q)
        if settings.engine == 'mujoco' and getattr(self.engine, 'xml', None) == mujoco_xml(
                settings):
            return
        q, qd = self.q, self.qd
        self.engine = new_engine(settings, q)
        if settings.engine == 'builtin':
            self.engine.qd = qd
        self.q, self.qd = self.engine.q, self.engine.qd
        self.sensor.replace(self.q, self.qd)

    def reset(self):
        """Return to the initial pose at rest; the clock restarts at the next `advance`."""
        self.q, self.qd = self.engine.reset(self.settings.initial)
        self.sensor.restart(self.q, self.qd)
        if self.pma is not None:
            self.pma.reset(self.q)
        self._grid = None               # (origin s, steps since) once the clock runs
        if self.valves is not None:
            self.valves.reset(self.settings.actuation.p_min)

    def check(self, values):
        """Return `values` as forces in model order, or raise ValueError saying why."""
        values = np.asarray(values, dtype=float)
        vec = self.settings.vectors
        if values.shape != (vec.n,):
            raise ValueError(f'expected {vec.n} values, got {values.size}')
        if not np.all(np.isfinite(values)):
            raise ValueError('non-finite values')
        actuation = self.settings.actuation
        model_order = vec.to_model(values)
        if actuation is None:
            return model_order
        if np.any(model_order < actuation.p_min) or np.any(model_order > actuation.p_max):
            raise ValueError('pressure outside [p_min, p_max]')
        return actuation.force(model_order)

    def command(self, values, t, issued=None):
        """
        Hold new input values, joints order, from time `t` (s); ValueError keeps the old.

        `issued`: when the command was issued (its stamp, s on the plant's clock), or None
        (unstamped: issued at `t`). Return False, and count it in `late_commands`, for a
        command issued more than `command_timeout` before `t`, or before the command in
        force (a reordered one): it is never applied. A stamp ahead of `t` counts from `t`.
        """
        forces = self.check(values)
        issued = t if issued is None else min(issued, t)
        if t - issued > self.settings.command_timeout or issued < self.command_time:
            self.late_commands += 1
            return False
        self.tau[:] = forces
        self.command_time = issued
        self.commands += 1
        if self.valves is not None:
            self.valves.command(self.settings.vectors.to_model(values), t)
            self._vented = False
        return True

    @property
    def t(self):
        """Return the plant's time, s: the grid's origin plus its steps (None until `advance`)."""
        if self._grid is None:
            return None
        origin, count = self._grid
        return origin + count * self.settings.step

    def advance(self, t, start=None):
        """
        Integrate with the fixed step up to time `t` (s); return the number of steps.

        While the plant has not started, it (re)starts its step grid at `start` (s, at most
        `t`; default `t`). A node that calls this from a periodic timer passes the timer's
        scheduled time: the grid then follows the timer's, and each call steps to just before
        it publishes. From the first call's late wake-up instead, later (earlier) wake-ups
        would miss their step boundary and publish a state about one step old.

        The plant's time is the grid's origin plus a whole number of steps, never a running
        sum: at wall-clock magnitudes (1.8e9 s) adding a 2 ms step rounds by about 0.1 us
        each time, and the grid would drift from the timer's by a whole step in a minute.
        Time dropped after a stall is dropped in whole steps, so the grid stays.
        """
        if self._grid is None or (self.settings.wait_for_command
                                  and self.command_time == -np.inf):
            self._grid = (t if start is None else min(start, t), 0)
            self.sensor.restart(self.q, self.qd)
            if self.valves is not None:
                self.valves.advance(self._grid[0])
            return 0
        dt = self.settings.step
        origin, count = self._grid
        if t - self.t > self.settings.max_catch_up:
            self.overruns += 1
            count += math.floor((t - self.settings.max_catch_up - self.t) / dt) + 1
            self._grid = origin, count
        steps = 0
        while origin + (count + 1) * dt <= t:
            # held over the whole step, or stale from within it (then the valves vent from
            # the moment it turned stale, which lies ahead of them)
            fresh = self.t + dt - self.command_time <= self.settings.command_timeout
            self.stale_commands += self._fresh and not fresh
            self._fresh = fresh
            tau = self.tau if fresh else self.zero_input()
            if self.valves is not None:
                tau = self._valve_force(fresh, dt)
            if self.pma is not None:
                tau = self.pma.force(tau, self.q)
            push = (None if self.settings.push is None
                    else self.settings.push.force((count + 0.5) * dt))
            self.q, self.qd = self.engine.step(tau, dt, push)
            self.sensor.record(self.q, self.qd)
            count += 1
            self._grid = origin, count
            steps += 1
        self.steps += steps
        return steps

    def _valve_force(self, fresh, dt):
        """
        Return the force over the step from `t`: the applied pressure's at mid-step.

        The mid-step pressure is a second-order-accurate mean over the step. Commands enter
        the valves when they arrive (`command`); a stale one is followed by `p_min` from the
        moment it turns stale.
        """
        actuation, valves = self.settings.actuation, self.valves
        assert valves is not None     # called only for a plant with valves
        if not fresh and not self._vented:
            self._vented = True
            valves.command(actuation.p_min, self.command_time + self.settings.command_timeout)
        applied = actuation.force(valves.advance(self.t + 0.5 * dt))
        valves.advance(self.t + dt)
        return applied

    def effort(self, t):
        """Return the generalized force acting at time `t` (s), the one last applied."""
        if self.valves is not None:
            return self.settings.actuation.force(self.valves.pressure)
        fresh = t - self.command_time <= self.settings.command_timeout
        return self.tau if fresh else self.zero_input()

    def zero_input(self):
        """Return the generalized force with no command (zero effort, vented PMAs)."""
        actuation = self.settings.actuation
        if actuation is None:
            return np.zeros(self.model.n)
        return actuation.force(actuation.p_min)

    def measure(self):
        """Return what the sensor reads now, ``(q, qd)`` (model order; qd None without)."""
        return self.sensor.read()

    def truth(self, due):
        """
        Return ``(time s, q, qd)``: the plant's exact state (model order) and its time.

        The simulator's ground truth beside the sensor's sample due at `due` (s): no noise,
        no delay, no loss; its time is the plant's (`due` before the clock starts).
        """
        return (due if self.t is None else self.t), self.q, self.qd

    def publish(self, due):
        """
        Return the sensor's sample published at `due` (s), None when it is lost.

        Its state held at the plant's time (`due` before the clock starts) less the delay; the
        noise bursts follow the plant's clock from its start, as the pushes do.
        """
        if self._grid is None:
            return self.sensor.publish(due, due)
        return self.sensor.publish(self.t, due, self._grid[1] * self.settings.step)
