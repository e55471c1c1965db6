"""
How a closed loop did: errors and command quality by section, the tip's error, the plot.

The demo (over ROS) and `continuum-ctrl simulate` (in one process) report a run alike:

    for group, rms, largest in summary(joint_names, q - q_des): ...
    for group, joint, rate, chatter in command_summary(joint_names, t, command): ...
    desired, actual, tip_error = tip_paths(model, tip_frame(model, task_frame), q_des, q)
    plot(path, joint_names, t, q_des, q, command, period)

Joints named ``section{i}_...`` (PMAs) group by section, in mm and kPa; rigid arms' joints
each form a group, in rad and N m.
"""

import numpy as np

from continuum_ctrl.control.command_quality import chatter_index, variation_rate


def groups(joint_names):
    """Group joints by section (``section{i}_...``); rigid arms: one group per joint."""
    out = {}
    for k, name in enumerate(joint_names):
        key = name.split('_')[0] if name.startswith('section') else name
        out.setdefault(key, []).append(k)
    return out


def summary(joint_names, error):
    """Return ``[(group, rms, max)]`` of the tracking error (n columns) by `groups`."""
    return [(key, float(np.sqrt(np.mean(error[:, idx] ** 2))), float(np.max(np.abs(
        error[:, idx])))) for key, idx in groups(joint_names).items()]


def command_summary(joint_names, t, command):
    """
    Return ``[(group, joint, variation rate, chatter index)]`` of the commands by `groups`.

    `command` (N, n) in the order of `joint_names`, at the times `t` (s); per group its
    worst channel by variation rate (command units/s) and the largest chatter index of its
    channels (control/command_quality.py).
    """
    rate, chatter = variation_rate(t, command), chatter_index(t, command)
    out = []
    for key, idx in groups(joint_names).items():
        worst = idx[int(np.nanargmax(rate[idx]))] if np.any(np.isfinite(rate[idx])) else idx[0]
        out.append((key, joint_names[worst], float(rate[worst]), float(np.max(chatter[idx]))))
    return out


def variation_units(command_unit):
    """Return ``(scale, unit)`` of a variation rate of commands in `command_unit` (units)."""
    return (1e-6, 'MPa/s') if command_unit == 'kPa' else (1.0, f'{command_unit}/s')


def tip_frame(model, task_frame=None):
    """
    Return the frame whose error a report gives: `task_frame`, else a continuum arm's tip.

    A continuum arm's tip: its last ``section{i}_tip`` frame; None for other arms without a
    task frame.
    """
    if task_frame:
        return task_frame
    tips = [name for name in model.frame_names()
            if name.startswith('section') and name.endswith('_tip')]
    return tips[-1] if tips else None


def tip_paths(model, frame, q_des, q):
    """
    Return desired and actual positions (N, 3) of `frame` [m] and its error (N,) [m].

    `q_des`, `q` (N, n) in the order of `model` (its own kinematics: the error the arm's
    user sees, where a PMA-length error grows about 25 times at the tip of a continuum arm).
    """
    desired = np.array([model.frame_pose(row, frame)[:3, 3] for row in q_des])
    actual = np.array([model.frame_pose(row, frame)[:3, 3] for row in q])
    return desired, actual, np.linalg.norm(actual - desired, axis=1)


def print_tables(joint_names, t, error, command, tip=None):
    """
    Print the run's table by group, then the tip's error line.

    Per group: the RMS and largest error, the worst channel's command variation and the
    group's largest chatter index (`command_summary`).
    `error`, `command` (N, n) in the order of `joint_names`, at the times `t` (s); `tip`:
    ``(frame, errors (N,) m)`` or None (no line).
    """
    scale, unit, _, command_unit = units(joint_names, command)
    rate_scale, rate_unit = variation_units(command_unit)
    digits = 3 if unit == 'mm' else 4
    print(f'{"group":<12} {"RMS error":>12} {"max error":>12} {"command variation":>22} '
          f'{"chatter":>8}  worst channel')
    quality = command_summary(joint_names, t, command)
    for (key, rms, worst), (_, joint, rate, chatter) in zip(summary(joint_names, error),
                                                            quality):
        print(f'{key:<12} {scale * rms:9.{digits}f} {unit:<3}{scale * worst:9.{digits}f} '
              f'{unit:<3}{rate_scale * rate:13.3f} {rate_unit:<8} {chatter:8.3f}  {joint}')
    if tip is not None:
        frame, errors = tip
        print(f'tip ({frame}): RMS error {np.sqrt(np.mean(errors ** 2)) * 1e3:.3f} mm, largest '
              f'{np.max(errors) * 1e3:.3f} mm (by the controller\'s kinematics)')


def units(joint_names, command):
    """
    Return ``(position scale, unit, command scale, unit)`` for the picture and the table.

    PMA arms (joints ``section*``, commands in Pa): mm and kPa; rigid arms: rad and N m.
    """
    if all(name.startswith('section') for name in joint_names) or np.nanmax(
            np.abs(command)) > 1e3:
        return 1e3, 'mm', 1e-3, 'kPa'
    return 1.0, 'rad', 1.0, 'N m'


def plot(path, joint_names, t, q_des, q, command, period):
    """
    Plot per group (row): desired and actual positions, the tracking error, the commands.

    Legends sit beside the last panel of each row, outside the curves. A gap in the
    recording (2 periods `period` s or more) breaks the lines rather than bridging it.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    rows = groups(joint_names)
    scale, unit, command_scale, command_unit = units(joint_names, command)
    fig, axes = plt.subplots(len(rows), 3, figsize=(14, 2.6 * len(rows)), squeeze=False,
                             sharex=True, layout='constrained')
    t, q_des, q, command = with_gaps(t - t[0], period, q_des, q, command)
    for (key, idx), (ax_q, ax_e, ax_c) in zip(rows.items(), axes):
        for k in idx:
            line, = ax_q.plot(t, scale * q[:, k])
            ax_q.plot(t, scale * q_des[:, k], '--', color=line.get_color(), linewidth=1)
            ax_e.plot(t, scale * (q[:, k] - q_des[:, k]), color=line.get_color(), linewidth=1)
            ax_c.plot(t, command_scale * command[:, k], color=line.get_color(), linewidth=1,
                      label=joint_names[k])
        ax_q.set_ylabel(f'{key}\nposition [{unit}]')
        ax_e.set_ylabel(f'error [{unit}]')
        ax_c.set_ylabel(f'command [{command_unit}]')
        ax_c.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0))
        for ax in (ax_q, ax_e, ax_c):
            ax.grid(True, alpha=0.3)
    axes[0, 0].set_title('actual (solid) and desired (dashed)')
    axes[0, 1].set_title('tracking error q - q_des')
    axes[0, 2].set_title('pressure' if command_unit == 'kPa' else 'effort')
    for ax in axes[-1]:
        ax.set_xlabel('t [s]')
    fig.savefig(path, dpi=110)
    plt.close(fig)


def with_gaps(t, period, *columns):
    """Return `t` and `columns` with a NaN row inside each gap of 2 periods or more (a break)."""
    gaps = np.flatnonzero(np.diff(t) >= 2.0 * period) + 1
    return tuple(np.insert(np.asarray(c, dtype=float), gaps, np.nan, axis=0)
                 for c in (t, *columns))
