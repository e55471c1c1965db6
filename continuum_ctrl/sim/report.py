"""
What a closed loop's tracking looked like: errors by section, display units, the plot.

The demo (over ROS) and `continuum-ctrl simulate` (in one process) report a run alike:

    for group, rms, largest in summary(joint_names, q - q_des): ...
    plot(path, joint_names, t, q_des, q, command, period)

Joints named ``section{i}_...`` (PMAs) group by section, in mm and kPa; rigid arms' joints
each form a group, in rad and N m.
"""

import numpy as np


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


def units(joint_names, command):
    """
    Return ``(position scale, unit, command scale, unit)`` for the picture and the table.

    PMA arms (joints ``section*``, commands in Pa): mm and kPa; rigid arms: rad and N m.
    """
    if all(name.startswith('section') for name in joint_names) or np.max(np.abs(command)) > 1e3:
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
