"""
`continuum-ctrl simulate`: an arm under computed torque in a closed loop in one process (no ROS).

    continuum-ctrl simulate [--arm 2r|panda|continuum|PARAMS.yaml] [--duration 5] [--out out/]
                            [--engine builtin|mujoco]

The gains are the controller's from the parameter file, unless --kp/--kd say otherwise. The
plant is the model itself (`--engine builtin`) or the simulator's MuJoCo arm of the file
(`--engine mujoco`: a continuum disc stack or the URDF, with the file's `mujoco.*` simulator
keys); the law runs at `--rate` Hz with its torque held in between, and the arm
starts off its reference. Prints the RMS and largest tracking error per joint and
writes ``<out>/<arm>_tracking.png`` (desired against actual positions, and the error).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from continuum_ctrl.control import ComputedTorqueLaw
from continuum_ctrl.control.references import MinimumJerk, Sinusoid
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.launch_description import arm_config, ARMS, CONTROLLER, SIMULATOR
from continuum_ctrl.models import load_model
from continuum_ctrl.params import ConfigError, file_parameters
from continuum_ctrl.ros.node_settings import ControllerNodeSettings, SimulatorNodeSettings
from continuum_ctrl.sim.closed_loop import SimulationDiverged, simulate
from continuum_ctrl.sim.integrators import INTEGRATORS
from continuum_ctrl.sim.plant import ENGINES, new_engine, PlantSettings

#: gains (1/s^2, 1/s, every joint) when neither the flags nor the file give any
DEFAULT_KP, DEFAULT_KD = 50.0, 10.0
#: a joint without position limits moves this far (rad) around this position (rad)
UNBOUNDED_AMPLITUDE = 0.4
UNBOUNDED_CENTER = 0.3


def motion_range(model):
    """
    Return a center and an amplitude per joint (model units) for motions inside the limits.

    Bounded joints: the middle of the range and a quarter of it (at most 0.5); unbounded
    joints: UNBOUNDED_CENTER and UNBOUNDED_AMPLITUDE.
    """
    low, high = model.joint_limits()
    bounded = np.isfinite(low) & np.isfinite(high)
    low, high = np.where(bounded, low, 0.0), np.where(bounded, high, 0.0)
    center = np.where(bounded, 0.5 * (low + high), UNBOUNDED_CENTER)
    amplitude = np.where(bounded, np.minimum(0.25 * (high - low), 0.5), UNBOUNDED_AMPLITUDE)
    return center, amplitude


def demo_reference(model, kind, duration):
    """
    Return a sinusoid or minimum-jerk reference inside the joint limits, and its amplitude.

    Both move each joint by its `motion_range` amplitude around its center.
    """
    center, amplitude = motion_range(model)
    if kind == 'sinusoid':
        frequency = 0.25 + 0.05 * np.arange(model.n)  # Hz, unequal so joints do not move alike
        return Sinusoid(center, amplitude, frequency), amplitude
    return MinimumJerk(center - amplitude, center + amplitude, 0.2 * duration,
                       0.5 * duration), amplitude


def run(model, kind='sinusoid', duration=5.0, kp=50.0, kd=10.0, rate=1000.0,
        integrator='rk4', engine=None):
    """
    Simulate `model` tracking a demo reference from an initial error of half its amplitude.

    Gains: one number for every joint, or validated per-joint gains (1/s^2, 1/s); the law runs
    at `rate` Hz and the plant is integrated with the same step: by `integrator`, or by
    `engine` (an engine of sim/plant.py, `new_engine`) when given. Returns the ClosedLoopLog.
    """
    reference, amplitude = demo_reference(model, kind, duration)
    law = ComputedTorqueLaw(model, *(np.full(model.n, g) if np.ndim(g) == 0 else g
                                     for g in (kp, kd)))
    q_des, qd_des, _ = reference.sample(0.0)
    q0 = q_des - 0.5 * amplitude
    if engine is not None:
        engine.reset(q0)

        def integrator(plant, q, qd, tau, dt, t=0.0):
            return engine.step(tau, dt)
    dt = 1.0 / rate
    return simulate(model, law, reference, q0, qd_des, round(duration / dt) * dt, dt,
                    control_period=dt, integrator=integrator)


def mujoco_engine(path, model):
    """Return the MuJoCo engine the simulator of `path` would run (`engine: mujoco`)."""
    tree, spec = file_parameters(path, SIMULATOR)
    _, tree = SimulatorNodeSettings.split(dict(tree, engine='mujoco'))
    spec = dict(spec, type=spec.get('type', 'continuum_integral'))
    settings = PlantSettings.parse(tree, spec)
    if settings.model.joint_names != model.joint_names:
        raise ConfigError('--engine', 'the simulator\'s arm has other joints than the model')
    return new_engine(settings)


def file_gains(path, model):
    """
    Return the controller's ``(kp, kd)`` from a parameter file (model order), or None.

    None when the file gives the controller no `gains`; a bad controller section raises the
    ConfigError the node would raise.
    """
    tree, _ = file_parameters(path, CONTROLLER)
    if 'gains' not in tree:
        return None
    _, loop_tree = ControllerNodeSettings.split(tree)
    settings = ControllerSettings.parse(loop_tree, model)
    return settings.kp, settings.kd


def default_integrator(model):
    """
    Return 'implicit_damping_euler' for a model with damping, else 'rk4'.

    The damping of PMA arms makes them stiff (``M^-1 D`` about 9e3 1/s on the reference arm):
    RK4 at a millisecond step diverges there, the damping-implicit step does not.
    """
    damped = np.any(np.diag(model.damping_matrix(np.zeros(model.n))) > 0.0)
    return 'implicit_damping_euler' if damped else 'rk4'


def summary(log, joint_names):
    """Return a table of the initial, RMS, largest and final tracking error per joint."""
    lines = [f"{'joint':<16}{'initial':>12}{'rms':>12}{'max':>12}{'final':>12}"]
    for name, e0, rms, worst, last in zip(joint_names, log.error[0], log.rms_error(),
                                          log.max_error(), log.error[-1]):
        lines.append(f'{name:<16}{e0:>12.3e}{rms:>12.3e}{worst:>12.3e}{last:>12.3e}')
    return '\n'.join(lines)


def plot_tracking(log, joint_names, path, title=''):
    """Write a PNG: desired (dashed) against actual position per joint, and all errors."""
    from matplotlib.figure import Figure

    n = len(joint_names)
    columns = 1 if n <= 3 else 2
    rows = -(-(n + 1) // columns)
    figure = Figure(figsize=(6.0 * columns, 2.2 * rows), layout='constrained')
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for j, (ax, name) in enumerate(zip(axes, joint_names)):
        ax.plot(log.t, log.q_des[:, j], '--', color='tab:gray', label='desired')
        ax.plot(log.t, log.q[:, j], color='tab:blue', label='actual')
        ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc='best', fontsize='small')
    ax = axes[n]
    ax.plot(log.t, log.error, linewidth=1.0, label=joint_names)
    ax.set_ylabel('error q - q_des')
    ax.legend(loc='best', fontsize='x-small', ncol=-(-n // 4))
    ax.grid(True, alpha=0.3)
    for ax in axes[n - columns + 1:n + 1]:
        ax.set_xlabel('time (s)')
    for ax in axes[n + 1:]:
        ax.set_visible(False)
    if title:
        figure.suptitle(title)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def _gain_text(gain):
    gain = np.asarray(gain)
    return f'{gain.flat[0]:g}' if np.all(gain == gain.flat[0]) else np.array2string(gain)


def main(argv=None):
    """Run the demo; return the exit status (1 if the closed loop diverged)."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl simulate', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('--arm', default='2r',
                        help=f"{', '.join(ARMS)}, a file stem in config/ or a parameter YAML "
                             f"file (default 2r)")
    parser.add_argument('--duration', type=float, default=5.0, help='seconds (default 5)')
    parser.add_argument('--out', default='out', help='output directory (default ./out)')
    parser.add_argument('--reference', choices=['sinusoid', 'min_jerk'],
                        default='sinusoid', help='reference trajectory (default sinusoid)')
    parser.add_argument('--rate', type=float, default=1000.0,
                        help='control and integration rate in Hz (default 1000)')
    parser.add_argument('--kp', type=float, default=None,
                        help="1/s^2, every joint (default: the file's gains.kp, else 50)")
    parser.add_argument('--kd', type=float, default=None,
                        help="1/s, every joint (default: the file's gains.kd, else 10)")
    parser.add_argument('--integrator', choices=sorted(INTEGRATORS), default=None,
                        help='default: implicit_damping_euler for damped (PMA) arms, else rk4')
    parser.add_argument('--engine', choices=ENGINES, default='builtin',
                        help='the plant: the model itself, or MuJoCo (continuum and URDF '
                             'arms; default builtin)')
    args = parser.parse_args(argv)
    if not args.duration > 0.0 or not args.rate > 0.0:
        raise ConfigError('--duration' if not args.duration > 0.0 else '--rate', 'must be > 0')
    path = arm_config(args.arm)
    model = load_model(path)
    integrator = args.integrator or default_integrator(model)
    engine = mujoco_engine(path, model) if args.engine == 'mujoco' else None
    name = path.stem
    kp, kd = file_gains(path, model) or (DEFAULT_KP, DEFAULT_KD)
    kp, kd = (g if flag is None else flag for g, flag in ((kp, args.kp), (kd, args.kd)))
    print(f'{name}: {model.n} joints, computed torque Kp={_gain_text(kp)} Kd={_gain_text(kd)} '
          f'at {args.rate:g} Hz, {args.reference} reference, {args.duration:g} s, engine '
          f'{args.engine}' + ('' if engine else f', {integrator}'))
    try:
        log, status = run(model, args.reference, args.duration, kp, kd, args.rate,
                          integrator, engine), 0
    except SimulationDiverged as exc:
        print(f'continuum-ctrl simulate: {exc}', file=sys.stderr)
        log, status = exc.log, 1
    if len(log.t) == 0:
        return status
    print(summary(log, model.joint_names))
    image = plot_tracking(log, model.joint_names, Path(args.out) / f'{name}_tracking.png',
                          f'{name}: computed torque, {args.reference} reference')
    print(f'plot: {image}')
    return status
