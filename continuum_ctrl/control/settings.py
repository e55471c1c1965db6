"""
The control loop's parameters (everything but `model.*` and the node's own), without ROS.

The controller node, its runtime parameter callback, the Python runner and the tests all go
through `ControllerSettings.parse`, so a bad value is reported identically everywhere: a
ConfigError naming the full dotted key. The table (`FIELDS`) and the checks among its keys
(`CHECKS`) make `SCHEMA`, which `continuum_ctrl.params.Schema.parse` reads a tree with; what
needs the model (the joints, the frames, the limits, the default effort limits) is done here
after it. Per-joint vectors are given in `joints` order (the
command order), as ``n`` numbers or one number for all joints; the parsed settings hold them in
the model's coordinate order. Units: SI (m, rad, N, N m, Pa, s). The node's own settings
(rate, decimation, thread priority, stamp tolerance, autostart) live in
`continuum_ctrl.runtime.node_settings`; parameter files are read by `continuum_ctrl.params`.
"""

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from continuum_ctrl.actuation.pressure_map import ActuationMap
from continuum_ctrl.control.computed_torque import PASSIVE_AT
from continuum_ctrl.control.gains import validate_gain
from continuum_ctrl.control.holding import HoldingRange
from continuum_ctrl.control.ilc import IlcSettings
from continuum_ctrl.control.kinematic_calibration import degree_of, KinematicCalibration
from continuum_ctrl.control.reference_specs import (PREFIX, reference_checks, REFERENCE_TYPES,
                                                    reference_fields, ReferenceSpec)
from continuum_ctrl.control.task_space import TaskSettings
from continuum_ctrl.control.tip_correction import CorrectionSettings
from continuum_ctrl.models.rigid import RigidModel
from continuum_ctrl.params import Check, ConfigError, Field, Schema

#: safe_mode values: zero effort (or p_min), or hold gravity and elasticity (effort only)
SAFE_MODES = ('zero', 'hold')
#: output.mode values: generalized forces, or PMA pressures through the actuation map
OUTPUT_MODES = ('effort', 'pressure')
#: output.message values: the ~/commands message kind (ros/fast_publish.py writes both)
MESSAGES = ('multiarray', 'joint_state')
#: observer.type values: the measured state, or a Kalman filter's (control/observer.py)
OBSERVER_TYPES = ('none', 'kalman')
#: read in pressure mode only
PRESSURE = ('output.mode', ('pressure',))

#: every parameter of the loop; the ROS node declares these, `model.*` and its own
FIELDS = {
    'joints': Field('strings', ..., 'command order of the joints; default: the model order'),
    'state_timeout': Field('number', 0.1, 'joint_states older than this (s) trigger the '
                           'safe command', 1e-3, 10.0),
    'safe_mode': Field('string', 'zero', "safe command: 'zero' (zero effort, or p_min) or "
                       "'hold' (gravity + elastic compensation at the last state; effort only)",
                       choices=SAFE_MODES),
    'velocity_filter': Field('number', 0.0, 'time constant of a first-order low-pass on '
                             'measured velocities, s (0: none)', 0.0, 1.0),
    'resume_count': Field('integer', 5, 'consecutive valid joint_states needed to resume '
                          'after a timeout', 1, 1000),
    'gains.kp': Field('numbers', ..., 'proportional gain, 1/s^2: n per-joint values or an '
                      'n*n SPD matrix row-major, in joints order', required=True),
    'gains.kd': Field('numbers', ..., 'derivative gain, 1/s: n per-joint values or an n*n '
                      'SPD matrix row-major, in joints order', required=True),
    'gains.ki': Field('numbers', [0.0], 'integral gain in force units, N/(m s) or N m/(rad s): '
                      'n per-joint values >= 0 in joints order (0: no integral action)', 0.0,
                      per_joint=True),
    'gains.ki_inertial': Field('numbers', [0.0], 'integral gain in acceleration units, 1/s^3, '
                               'through M(q) as kp and kd are: the integral force changes at '
                               'M(q) ki_inertial (q_des - q); n per-joint values in joints '
                               'order, each at most kp kd / 4 (kp kd is where the loop s^3 + '
                               'kd s^2 + kp s + ki turns unstable with the model exact); for '
                               'arms without passive forces (rigid), instead of gains.ki (0: '
                               'none; docs/rigid-payload.md)', 0.0, per_joint=True),
    'adapt.payload_frame': Field('string', ..., "rigid arms: the URDF frame whose unknown "
                                 "payload's gravity (mass, centre) is estimated from the "
                                 "integral's force and fed forward at the reference "
                                 '(control/payload_estimate.py; needs gains.ki_inertial and '
                                 'adapt.time_constant)'),
    'adapt.time_constant': Field('number', 0.0, 'rigid arms: the time over which the payload '
                                 'estimate settles where the reference moves it, s (0: no '
                                 'estimate)', 0.0, 600.0),
    'gains.learn_window': Field('number', 0.0, "window over which the integral's force is "
                                "regressed on the reference's position, s: the slope, a "
                                'stiffness, is fed forward at the reference (0: none; only '
                                'where gains.ki > 0; docs/law.md)', 0.0, 600.0),
    'gains.learn_floor': Field('number', 2e-3, 'reference swing (RMS about its mean), m or '
                               'rad, below which the learnt stiffness shrinks towards zero',
                               0.0, 1.0, strict_low=True),
    'law.passive': Field('string', 'reference', "where the law compensates the passive "
                         "(elastic and damping) forces: 'reference' (the arm keeps its own "
                         "spring against model error) or 'measured' (the classical law); the "
                         'same for arms without passive forces', choices=PASSIVE_AT),
    # each type's own reference.* keys: its spec class (control.reference_specs)
    'reference.type': Field('string', 'hold', 'the reference the joints (or the tip, for '
                            'tip_*) follow', choices=tuple(REFERENCE_TYPES)),
    **reference_fields(),
    'reference.blend_time': Field('number', 0.5, 'time over which the reference blends in '
                                  'from the measured state when it is (re)anchored, s', 0.0,
                                  60.0),
    'task.frame': Field('string', ..., 'the frame task space controls (~/tip_pose, '
                        '~/tip_target, tip references); default: the last section tip of a '
                        'continuum arm; required for other arms'),
    'task.base_frame': Field('string', 'base', 'frame_id of tip messages and ~/shape: the '
                             "arm's base frame"),
    'task.orientation_weight': Field('number', 0.0, 'weight of the tip orientation error, '
                                     'm/rad (0: position only)', 0.0, 10.0),
    'task.duration': Field('number', 2.0, 'shortest tip move to a target, and the ramp of '
                           'a tip circle, s', 1e-3, 600.0),
    'task.max_speed': Field('number', 0.05, 'largest peak tip speed of a move to a target, '
                            'm/s (0: no limit; the move then lasts task.duration)', 0.0, 10.0),
    'task.catch_up': Field('number', 5.0, 'fastest a joint of a task-space reference moves, '
                           'sample to sample and in its velocity, in shares of the '
                           "joint's range per second (a straight arm asked to lower its tip "
                           'jumped 25 mm in one sample)', 1e-3, 1e3),
    'task.pressure_margin': Field('number', 0.1, "share of each PMA's force range "
                                  '(output.p_min to p_max) the IK keeps free on both sides: '
                                  'its poses need pressures the arm can hold with room to '
                                  'correct (output.mode pressure)', 0.0, 0.45),
    'task.correction.bandwidth': Field('number', 2.0, 'rad/s of the correction of the tip '
                                       'references on the measured tip ~/tip_measured (0: '
                                       'none); an order below the joint loop\'s',
                                       0.0, 50.0),
    'task.correction.timeout': Field('number', 3.0, 'no accepted tip measurement for this '
                                     "long (s): back to the model's kinematics alone; a "
                                     'shorter dropout holds the correction', 0.01, 600.0),
    'task.correction.max_age': Field('number', 0.1, 'a tip measurement stamped longer ago '
                                     'than this on arrival is stale (s); the correction is '
                                     'held from this age of the last one to the timeout',
                                     1e-3, 10.0),
    'task.correction.outlier': Field('number', 0.005, 'a tip measurement whose gap to the '
                                     "model's tip moves more than this from the last one's "
                                     'is rejected, m', 1e-5, 1.0),
    'task.correction.max_offset': Field('number', 0.05, 'largest gap between the measured '
                                        "and the model's tip taken, m", 1e-4, 1.0),
    'task.calibration.gap': Field('numbers', [], "the kinematic calibration: the gap between "
                                  "the model's and the true tip as polynomials of the tip's "
                                  'reach and height, m (control/kinematic_calibration.py; '
                                  'identify --fit kinematics writes it; empty: none)'),
    'task.calibration.compliance': Field('numbers', [], 'the kinematic calibration: each '
                                         "section's bending compliance under gravity, as a "
                                         "share of its PMAs' (continuum arms; "
                                         'control/kinematic_calibration.py; identify --fit '
                                         'kinematics writes it; empty: no sag)'),
    'task.calibration.twist': Field('number', 0.0, 'the kinematic calibration: the twist of '
                                    "each eighth of a section as a share of its bend's a b / "
                                    '2 (a, b its bends about its x and y axes: a two-axis '
                                    'joint\'s; with task.calibration.compliance)', -100.0,
                                    100.0),
    'output.mode': Field('string', 'effort', "what ~/commands carries: 'effort' (N or N m) "
                         "or 'pressure' (Pa)", choices=OUTPUT_MODES),
    'output.message': Field('string', 'multiarray', "the message of ~/commands: "
                            "'multiarray' (std_msgs/Float64MultiArray, for ros2_control's "
                            "ForwardCommandController) or 'joint_state' (sensor_msgs/JointState: "
                            'the joint names, the command in effort, stamped with the tick, for '
                            'drivers that drop late commands); fixed for the life of the '
                            'node', choices=MESSAGES),
    'output.area': Field('numbers', ..., 'pressure: effective PMA area, m^2', 0.0,
                         strict_low=True, per_joint=True, required=True, when=PRESSURE),
    'output.deadzone': Field('numbers', [0.0], 'pressure: dead-zone pressure added to any '
                             'push, Pa', 0.0, per_joint=True, when=PRESSURE),
    'output.area_slope': Field('numbers', [0.0], 'pressure, continuum arms: the PMA area '
                               'falls with extension, area (1 - c q / l_max) at the state the '
                               'tick starts from, c per PMA or one for all (0: constant '
                               'area); the simulator\'s too unless pma.area_slope', 0.0, 0.9,
                               per_joint=True),
    'output.p_min': Field('number', 0.0, 'pressure: lowest command (vents the PMA), Pa',
                          when=PRESSURE),
    'output.p_max': Field('number', ..., 'pressure: highest command, Pa', required=True,
                          when=PRESSURE),
    'output.friction': Field('numbers', [0.0], "pressure: the PMAs' friction, the force at "
                             'which it slips, N, per PMA or one for all: the law pushes '
                             'against a Maxwell-slip element that the reference drives, a '
                             'feed-forward (docs/pma-model.md; 0: none)', 0.0, per_joint=True),
    'output.friction_stiffness': Field('numbers', [1.5e4], "pressure: that element's "
                                       'stiffness before it slips, N/m, per PMA or one for '
                                       'all (the force turns round over 2 friction / '
                                       'stiffness of travel)', 0.0, strict_low=True,
                                       per_joint=True),
    'output.time_constant': Field('number', 0.0, 'pressure: lag of the PMA valves that the '
                                  'command leads by, s (0: none)', 0.0, 1.0),
    'output.delay': Field('number', 0.0, 'pressure: dead time of the PMA valves that the '
                          'controller predicts over, s (0: none)', 0.0, 1.0),
    'observer.type': Field('string', 'none', "the state fed back: 'none' (the measured one; "
                           'without velocities, the difference of positions low-passed by '
                           "velocity_filter) or 'kalman' (a steady-state Kalman filter "
                           "driven by the valve model's pressures; needs output.mode "
                           "'pressure' and output.time_constant or output.delay)",
                           choices=OBSERVER_TYPES),
    'observer.position_noise': Field('number', 2e-5, 'kalman: standard deviation of the '
                                     'measured positions, m or rad', 0.0, strict_low=True),
    'observer.force_noise': Field('number', 0.5, 'kalman: standard deviation of the '
                                  'generalized force the model misses, independent from one '
                                  'control period to the next, N or N m', 0.0,
                                  strict_low=True),
    'observer.bias_noise': Field('number', 0.3, 'kalman: how fast a force bias the model '
                                 'misses may drift, the standard deviation of its change over '
                                 'a second, N/s^0.5 or N m/s^0.5 (0: no bias estimated)', 0.0),
    'observer.cancel_bias': Field('bool', False, 'kalman: the law subtracts the force bias '
                                  'estimated (a disturbance observer), so the model error '
                                  'is cancelled at once rather than integrated; needs '
                                  'observer.bias_noise > 0'),
    'observer.innovation_gate': Field('number', 4.0, 'kalman: the largest innovation the '
                                      'force bias learns from, in standard deviations of the '
                                      "innovation (a push's or a dropped load's is far larger "
                                      'and would outlast it as a bias; 0: no bound)', 0.0),
    'ilc.enable': Field('bool', False, 'learn a feed-forward force from the error of a '
                        'reference that repeats, period by period or trial by trial '
                        '(control/ilc.py, docs/ilc.md)'),
    'ilc.gain': Field('number', 0.5, 'ilc: share of the last trial\'s error, through the '
                      "closed loop's inverse, learnt per trial", 0.0, 1.0, strict_low=True),
    'ilc.settled_gain': Field('number', 0.3, 'ilc: the gain once the learnable error has '
                              'stopped falling, so what does not repeat is played back less '
                              '(the smaller of it and ilc.gain)', 0.0, 1.0, strict_low=True),
    'ilc.cutoff': Field('number', 2.5, 'ilc: the highest frequency learnt, Hz (the zero-phase '
                        'Q filter: the harmonics of a period up to it; a trial: its corner)',
                        0.0, strict_low=True),
    'ilc.lead': Field('number', 0.0, 'ilc: lead of the learning beyond output.delay, s (the '
                      "valves' lag is undone too)", 0.0, 1.0),
    'ilc.growth': Field('number', 1.5, 'ilc: a trial\'s RMS above this times the best is not '
                        'learnt from and pauses the learning (two running: back to the best '
                        "trial's table); the first trial within it, or two running within "
                        'it of each other, resume the learning',
                        1.0, strict_low=True),
    'ilc.longest_period': Field('number', 10.0, 'ilc: the longest period (or trial) learnt, s',
                                0.0, 120.0, strict_low=True),
    'ilc.file': Field('string', '', 'ilc: the learnt table\'s file (.npz), loaded where it '
                      "matches the reference, written after each trial ('': none)"),
    'ilc.limit': Field('numbers', ..., 'ilc: largest |learnt force| per joint, N or N m '
                       '(default: limits.integral)', 0.0, strict_low=True, per_joint=True),
    'limits.effort': Field('numbers', ..., 'largest |effort| per joint, N or N m (default: '
                           'the model, e.g. URDF <limit effort>)', 0.0, strict_low=True,
                           per_joint=True),
    'limits.integral': Field('numbers', ..., 'largest |integral force| per joint, N or N m '
                             '(default: a quarter of the effort range; required where that '
                             'is unbounded and gains.ki > 0)', 0.0, strict_low=True,
                             per_joint=True),
    'limits.effort_rate': Field('numbers', ..., 'largest effort change per second, N/s or '
                                'N m/s (default: none)', 0.0, strict_low=True, per_joint=True),
    'limits.saturation_hold': Field('number', 0.0, 'after a tick with a joint at an effort '
                                    'bound and its error beyond limits.saturation_error, s for '
                                    "which the integral and the observer's force bias learn "
                                    'nothing (a push is no model error; 0: they always learn)',
                                    0.0),
    'limits.saturation_error': Field('number', 0.0, 'the error beyond which a joint at an '
                                     'effort bound, its reference inside the joint limits, '
                                     'starts limits.saturation_hold, m or rad (0: any)', 0.0),
    'limits.saturation_gain': Field('number', 1.0, 'factor on gains.kp during '
                                    'limits.saturation_hold (gains.kd: its square root); a '
                                    "push's release met softly (1: the gains kept)", 0.0, 1.0,
                                    strict_low=True),
}


def needs_pressure(key: str, problem: str = "models PMAs: needs output.mode 'pressure'"
                   ) -> Check:
    """Return the check that `key` is zero unless output.mode is 'pressure', else `problem`."""
    return Check(key, ('output.mode', key),
                 lambda mode, value: mode == 'pressure' or not any(np.atleast_1d(value)),
                 problem)


#: the checks `read_output` makes, the simulator's and identify's too
OUTPUT_CHECKS = (
    Check('output.p_max', ('output.p_min', 'output.p_max'), lambda low, high: high > low,
          lambda low, high: f'must be > {low}, got {high}'),
    needs_pressure('output.area_slope'),
)
#: the checks among the loop's keys (each names the key it refuses), in their order
CHECKS = OUTPUT_CHECKS + (
    *(needs_pressure(key, "compensates PMA valves: needs output.mode 'pressure' (efforts act "
                          'at once)') for key in ('output.time_constant', 'output.delay')),
    needs_pressure('output.friction'),
    Check('observer.cancel_bias', ('observer.cancel_bias', 'observer.bias_noise'),
          lambda cancel, noise: not cancel or noise != 0.0,
          'cancels the estimated force bias: needs observer.bias_noise > 0'),
    Check('observer.type', ('observer.type', 'output.time_constant', 'output.delay'),
          lambda kind, lag, delay: kind != 'kalman' or bool(lag or delay),
          "'kalman' is driven by the valve model's pressures: needs output.mode 'pressure' "
          'and output.time_constant or output.delay'),
    Check('safe_mode', ('safe_mode', 'output.mode'),
          lambda safe, mode: safe != 'hold' or mode != 'pressure',
          "'hold' needs output.mode 'effort'; PMAs are vented ('zero') instead"),
    Check('task.base_frame', ('task.base_frame',), bool, 'must not be empty'),
    Check('task.calibration.gap', ('task.calibration.gap',),
          lambda gap: not gap or degree_of(len(gap)) is not None,
          lambda gap: f'must hold the coefficients of degree 1, 2 or 3 (5, 12 or 22 values), '
                      f'got {len(gap)}'),
    Check('task.correction.timeout', ('task.correction.max_age', 'task.correction.timeout'),
          lambda age, timeout: timeout > age, 'must exceed task.correction.max_age'),
    *reference_checks(),
)
#: the loop's parameter table with its checks
SCHEMA = Schema(FIELDS, CHECKS)
#: the `joints` key alone (identify reads it and `output.*` of the loop's parameters)
JOINTS = Schema({'joints': FIELDS['joints']})
#: the `output.*` keys `read_output` reads
OUTPUT_KEYS = ('output.mode', 'output.area', 'output.deadzone', 'output.area_slope',
               'output.p_min', 'output.p_max')


def shared_output(keys: Tuple[str, ...], checks: Tuple[Check, ...] = OUTPUT_CHECKS) -> Schema:
    """
    Return the Schema of the loop's `keys` that another reader shares (the simulator, identify).

    With `checks`; the loop's other `output.*` keys are accepted there and ignored.
    """
    return Schema({key: FIELDS[key] for key in keys}, checks,
                  tuple(key for key in FIELDS if key.startswith('output.') and key not in keys))


@dataclass(frozen=True)
class ObserverSettings:
    """`observer.*`: `kind` ('none' or 'kalman') and its noises (m or rad; N or N m)."""

    kind: str = 'none'
    position_noise: float = FIELDS['observer.position_noise'].default
    force_noise: float = FIELDS['observer.force_noise'].default
    bias_noise: float = FIELDS['observer.bias_noise'].default
    cancel_bias: bool = FIELDS['observer.cancel_bias'].default
    innovation_gate: float = FIELDS['observer.innovation_gate'].default

    @classmethod
    def of(cls, values: Dict[str, Any]) -> 'ObserverSettings':
        """Return the `observer.*` settings of the parsed `values` (checked by CHECKS)."""
        return cls(*(values['observer.' + name] for name in (
            'type', 'position_noise', 'force_noise', 'bias_noise', 'cancel_bias',
            'innovation_gate')))


@dataclass(frozen=True)
class ControllerSettings:
    """
    Validated controller settings; per-joint arrays in model order.

    `order[k]` is the model index of ``joints[k]``: a command in joints order is
    ``tau[order]``.
    """

    joints: Tuple[str, ...]
    order: np.ndarray
    state_timeout: float
    safe_mode: str
    resume_count: int
    velocity_filter: float
    kp: np.ndarray
    kd: np.ndarray
    ki: np.ndarray
    passive: str
    integral_limit: np.ndarray
    reference: ReferenceSpec
    mode: str
    actuation: Optional[ActuationMap]
    effort_limit: np.ndarray
    effort_rate: np.ndarray
    #: s for which learning stays held (and the gains softened) after a tick at an effort
    #: bound with an error beyond m or rad, and the gains' factor then (control/saturation.py)
    saturation: Tuple[float, float, float] = (0.0, 0.0, 1.0)
    compensation: Tuple[float, float] = (0.0, 0.0)
    #: the learnt stiffness's window (s; 0: none) and swing floor (m or rad)
    learn: Tuple[float, float] = (0.0, 2e-3)
    #: (force N, stiffness N/m), each (n,), of the friction feed-forward, or None
    friction: Optional[Tuple[np.ndarray, np.ndarray]] = None
    task: TaskSettings = TaskSettings()
    observer: ObserverSettings = ObserverSettings()
    message: str = 'multiarray'
    #: `gains.ki_inertial` (1/s^3, model order), or None: the integral is in force units (`ki`)
    ki_inertial: Optional[np.ndarray] = None
    #: `adapt.*`: (frame, time constant s) of the payload estimate, or None
    adapt: Optional[Tuple[str, float]] = None

    @property
    def integral_gain(self) -> np.ndarray:
        """Return the integral's gain per joint: `ki_inertial` (1/s^3) where given, else `ki`."""
        return self.ki if self.ki_inertial is None else self.ki_inertial
    ilc: IlcSettings = IlcSettings()

    @classmethod
    def parse(cls, tree: Dict[str, Any], model: Any) -> 'ControllerSettings':
        """
        Parse the nested loop parameters (without `model` and the node's own) for `model`.

        Raises ConfigError naming the full key for a missing, unknown or bad value.
        """
        values = SCHEMA.parse(tree, joints=len(model.joint_names))
        vec = JointVectors.of(values.get('joints'), model.joint_names)
        kp, kd = (vec.gain(validate_gain(values[key], vec.n, key))
                  for key in ('gains.kp', 'gains.kd'))
        ki = vec.to_model(values['gains.ki'])
        ki_inertial = _inertial_gain(values, vec, model, kp, kd, ki)
        mode, actuation = read_output(values, vec, model)
        effort = (vec.to_model(values['limits.effort']) if 'limits.effort' in values
                  else np.asarray(model.effort_limits(), dtype=float).copy())
        rate = (vec.to_model(values['limits.effort_rate']) if 'limits.effort_rate' in values
                else np.full(vec.n, np.inf))
        task = read_task(values, model, actuation)
        return cls(
            joints=vec.joints, order=vec.order,
            state_timeout=values['state_timeout'], safe_mode=values['safe_mode'],
            resume_count=values['resume_count'], velocity_filter=values['velocity_filter'],
            kp=kp, kd=kd, ki=ki, passive=values['law.passive'],
            integral_limit=_integral_limit(values, vec, ki if ki_inertial is None
                                           else ki_inertial, effort, actuation),
            reference=_reference(values, vec, model, task),
            mode=mode, actuation=actuation, effort_limit=effort, effort_rate=rate,
            saturation=(values['limits.saturation_hold'], values['limits.saturation_error'],
                        values['limits.saturation_gain']),
            compensation=(values['output.time_constant'], values['output.delay']),
            learn=(values['gains.learn_window'], values['gains.learn_floor']),
            friction=_friction(values, vec), task=task,
            observer=ObserverSettings.of(values), message=values['output.message'],
            ki_inertial=ki_inertial, adapt=_adapt(values, ki_inertial, model),
            ilc=IlcSettings.of(values, vec.to_model(values['ilc.limit'])
                               if 'ilc.limit' in values else None))


#: `gains.ki_inertial` may reach this share of kp kd (s^3 + kd s^2 + kp s + ki turns unstable
#: at kp kd with the model exact). An arm heavier than its model divides the gains (ki < a kp kd
#: for inertia ratio a): a 3 kg payload 10 cm out of the Panda's hand makes its wrist's inertia
#: four times the URDF's; at kp kd / 4 it holds 0.006-0.008 rad (kp 900 and 1600), at kp kd / 2.7
#: (kp 900) it was lost (bench/rigid_payload.py)
INERTIAL_RANGE = 0.25


def _inertial_gain(values, vec, model, kp, kd, ki):
    """
    Return `gains.ki_inertial` in model order, or None where all zero (checked against kp kd).

    Raises ConfigError for a model with passive forces, matrix gains, both integral gains,
    or a value above INERTIAL_RANGE kp kd.
    """
    gain = vec.to_model(values['gains.ki_inertial'])
    if not gain.any():
        return None
    key = 'gains.ki_inertial'
    if model.has_passive_forces:
        raise ConfigError(key, 'is for arms without passive forces (rigid arms); PMA arms use '
                               'gains.ki, in force units')
    if ki.any():
        raise ConfigError(key, 'and gains.ki are two units of one integral: give one of them')
    if kp.ndim != 1 or kd.ndim != 1:
        raise ConfigError(key, 'needs per-joint (diagonal) gains.kp and gains.kd')
    bound = INERTIAL_RANGE * kp * kd
    over = np.flatnonzero(gain > bound * (1.0 + 1e-12))
    if over.size:
        joint = vec.joints[int(np.flatnonzero(vec.order == over[0])[0])]
        raise ConfigError(key, f'must be at most kp kd / 4 per joint ({bound[over[0]]:g} '
                               f'1/s^3 on {joint}: kp kd divided by how much heavier the arm '
                               f'may be than its model), got {gain[over[0]]:g}')
    return gain


def _adapt(values, ki_inertial, model):
    """Return `adapt.*` as (frame, time constant), or None; ConfigError names the key."""
    time_constant = values['adapt.time_constant']
    if not time_constant:
        return None
    if not isinstance(model, RigidModel):
        raise ConfigError('adapt.time_constant', f"estimates a URDF arm's payload, not "
                                                 f"{type(model).__name__}'s")
    if ki_inertial is None:
        raise ConfigError('adapt.time_constant', 'learns from the integral of '
                                                 'gains.ki_inertial: set it > 0')
    frame = values.get('adapt.payload_frame')
    if frame not in model.frame_names():
        raise ConfigError('adapt.payload_frame', f'must name a frame of the URDF, got {frame!r}')
    return frame, time_constant


def _integral_limit(values, vec, ki, effort_limit, actuation):
    """
    Return `limits.integral` in model order: given, or a quarter of the effort range.

    Raises ConfigError where the default is unbounded on a joint with integral action.
    """
    if 'limits.integral' in values:
        return vec.to_model(values['limits.integral'])
    low, high = (actuation.effort_range(effort_limit) if actuation is not None
                 else (-effort_limit, effort_limit))
    limit = 0.25 * (np.asarray(high, dtype=float) - np.asarray(low, dtype=float))
    unbounded = (ki > 0.0) & ~np.isfinite(limit)
    if np.any(unbounded):
        raise ConfigError('limits.integral', 'is required with gains.ki > 0 where the effort '
                                             'range is unbounded (no limits.effort)')
    return np.where(np.isfinite(limit), limit, 0.0)


def read_output(values: Dict[str, Any], vec: 'JointVectors',
                model: Any) -> Tuple[str, Optional[ActuationMap]]:
    """
    Return ``(output.mode, ActuationMap or None)`` of the parsed `values` for `model`.

    The simulator and identify read the same keys to turn commands into forces.
    """
    mode = values['output.mode']
    if mode != 'pressure':
        return mode, None
    slope = vec.to_model(values['output.area_slope'])
    return mode, ActuationMap(vec.n, vec.to_model(values['output.area']),
                              vec.to_model(values['output.deadzone']), values['output.p_min'],
                              values['output.p_max'], **_area_slope(slope, model))


def _area_slope(slope, model):
    """Return ActuationMap's `slope` and `stroke` (m) from `output.area_slope` (model order)."""
    if not slope.any():
        return {}
    spec = getattr(model, 'spec', None)
    if spec is None:
        raise ConfigError('output.area_slope', f'applies to continuum arms, not '
                                               f'{type(model).__name__}')
    return {'slope': slope, 'stroke': spec.stroke}


def _friction(values, vec):
    """Return ``output.friction`` and ``.friction_stiffness`` in model order, or None (0)."""
    level, stiffness = (vec.to_model(values[key])
                        for key in ('output.friction', 'output.friction_stiffness'))
    return (level, stiffness) if level.any() else None


class JointVectors:
    """
    The `joints` parameter, and per-joint vectors in joints order -> arrays in model order.

    `order[k]` is the model index of ``joints[k]``.
    """

    def __init__(self, joints, model_joints):
        index = {name: i for i, name in enumerate(model_joints)}
        self.joints = tuple(joints)
        self.order = np.array([index[name] for name in joints], dtype=int)
        self.n = len(joints)

    @classmethod
    def read(cls, tree, model_joints):
        """Read `joints` of the nested loop parameters `tree` (see `of`); the rest is not read."""
        given = {'joints': tree['joints']} if 'joints' in tree else {}
        return cls.of(JOINTS.parse(given).get('joints'), model_joints)

    @classmethod
    def of(cls, joints, model_joints):
        """Check `joints`: a permutation of the model's joints (None: the model order)."""
        joints = list(model_joints) if joints is None else joints
        if sorted(joints) != sorted(model_joints) or len(set(joints)) != len(joints):
            raise ConfigError('joints', f'must list each model joint once, in any order: '
                                        f'model joints {list(model_joints)}, got {joints}')
        return cls(joints, model_joints)

    def to_model(self, values):
        out = np.empty(self.n)
        out[self.order] = values
        return out

    def gain(self, gain):
        if gain.ndim == 1:
            return self.to_model(gain)
        out = np.empty_like(gain)
        out[np.ix_(self.order, self.order)] = gain
        return out


def _calibration(values, model, frame):
    """Return the KinematicCalibration of `task.calibration.*` (None: none) for `frame`."""
    compliance = values['task.calibration.compliance']
    if compliance and (frame is None or not hasattr(model, 'backbone_frames')):
        raise ConfigError('task.calibration.compliance', 'is for continuum arms (their '
                                                         'backbone sags); this arm has none')
    if compliance and len(compliance) != model.spec.sections:
        raise ConfigError('task.calibration.compliance', f'must hold one value per section '
                                                         f'({model.spec.sections}), got '
                                                         f'{len(compliance)}')
    if values['task.calibration.twist'] and not compliance:
        raise ConfigError('task.calibration.twist', 'needs task.calibration.compliance (the '
                                                    'shape it twists)')
    return KinematicCalibration.of_parameters(frame, values['task.calibration.gap'],
                                              compliance, values['task.calibration.twist'])


def read_task(values, model, actuation):
    """
    Return the `task.*` TaskSettings of the parsed `values` for `model`.

    `actuation`: the `output.*` ActuationMap (None: no pressures), whose force range the
    IK's poses keep (`task.pressure_margin`).

    `task.frame` defaults to the last section tip of a continuum arm (a model with a
    backbone) and to None (no task space) for other arms; a frame the model does not have is
    an error naming the key.
    """
    names = model.frame_names()
    default = names[-1] if names and hasattr(model, 'backbone') else None
    frame = values.get('task.frame', default)
    if frame is not None and frame not in names:
        raise ConfigError('task.frame', str(model.frame_error(frame)))
    correction = CorrectionSettings(**{
        name: values['task.correction.' + name]
        for name in ('bandwidth', 'timeout', 'max_age', 'outlier', 'max_offset')},
        calibration=_calibration(values, model, frame))
    holding = HoldingRange.of(actuation, values['task.pressure_margin'])
    return TaskSettings(frame=frame, correction=correction, holding=holding, **{
        name: values['task.' + name]
        for name in ('base_frame', 'orientation_weight', 'duration', 'max_speed', 'catch_up')})


def _reference(values, vec, model, task):
    """Return the spec of `reference.type` from the parsed `values`, poses within limits."""
    spec_type = REFERENCE_TYPES[values['reference.type']]
    if spec_type.needs_task_space and task.frame is None:
        raise ConfigError('task.frame', f"is required for reference.type '{spec_type.kind}' on "
                                        'an arm that is not a continuum arm')
    own = {name: values[PREFIX + name] for name in spec_type.fields if PREFIX + name in values}
    spec = spec_type(**spec_type.read(own, vec), blend_time=values['reference.blend_time'])
    low, high = (np.asarray(b, dtype=float) for b in model.joint_limits())
    for pose in spec.poses():
        if pose is not None and np.any((pose < low) | (pose > high)):
            raise ConfigError(f'{PREFIX}{spec.pose_key}', f'must lie within the joint limits '
                                                          f'[{low.tolist()}, {high.tolist()}], '
                                                          f'got {pose.tolist()}')
    return spec
