"""
The demo's task-space picture: desired against actual tip path, tip error, backbone snapshots.

Used by `continuum-ctrl demo` when the controller's parameters give a task frame; the joint
logs (desired and measured positions per `~/state` message, model order) are turned into tip
positions by FK of the controller's model. With a motion capture (`truth`) the true tip is
drawn too, and its error against where the tip is to be (`~/tip_desired`).
"""

import numpy as np

from continuum_ctrl.sim.report import tip_paths

#: backbone snapshots drawn
SNAPSHOTS = 4


def true_tip(tips, desired_topic, measured_topic, since, until):
    """
    Return ``(stamps s, captured tips (N, 3) m, errors (N,) m)``; None without both topics.

    `tips`: topic -> [(stamp, position)] (ros.recorder.Recorder.tips); the captured tips
    stamped in [since, until] and within the desired tips' span, each against the desired
    tip interpolated at its stamp (the measurement's moment).
    """
    desired, measured = tips.get(desired_topic), tips.get(measured_topic)
    if not desired or not measured:
        return None
    td = np.array([stamp for stamp, _ in desired])
    xd = np.array([position for _, position in desired])
    kept = [(stamp, position) for stamp, position in measured
            if max(since, td[0]) <= stamp <= min(until, td[-1])]
    if not kept:
        return None
    stamps = np.array([stamp for stamp, _ in kept])
    captured = np.array([position for _, position in kept])
    at = np.column_stack([np.interp(stamps, td, xd[:, c]) for c in range(3)])
    return stamps, captured, np.linalg.norm(captured - at, axis=1)


def plot_task(path, model, frame, t, q_des, q, truth=None):
    """
    Write the picture to `path`; return the tip errors (N,) [m] by the model's kinematics.

    `truth`: `true_tip`'s result, drawn as the true tip (None: no capture).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    desired, actual, error = tip_paths(model, frame, q_des, q)
    fig, axes = plt.subplots(2, 2, figsize=(11, 9))
    for ax, (i, j, name) in zip(axes[0], ((0, 1, 'top view (x, y)'), (0, 2, 'side view (x, z)'))):
        ax.plot(desired[:, i] * 1e3, desired[:, j] * 1e3, '--', color='tab:orange',
                label='desired')
        ax.plot(actual[:, i] * 1e3, actual[:, j] * 1e3, color='tab:blue', linewidth=1,
                label="actual (the model's kinematics)")
        if truth is not None:
            ax.plot(truth[1][:, i] * 1e3, truth[1][:, j] * 1e3, color='tab:green',
                    linewidth=1, label='true tip (motion capture)')
        ax.set_xlabel('xyz'[i] + ' [mm]')
        ax.set_ylabel('xyz'[j] + ' [mm]')
        ax.set_aspect('equal', adjustable='datalim')
        ax.set_title(f'tip path, {name}')
        ax.legend()
    title = f"model's {np.sqrt(np.mean(error ** 2)) * 1e3:.3f} mm"
    axes[1, 0].plot(t - t[0], error * 1e3, label="by the model's kinematics")
    if truth is not None:
        axes[1, 0].plot(truth[0] - t[0], truth[2] * 1e3, color='tab:green', linewidth=1,
                        label='true (motion capture, its noise included)')
        title += f', true {np.sqrt(np.mean(truth[2] ** 2)) * 1e3:.3f} mm'
        axes[1, 0].legend(fontsize=8)
    axes[1, 0].set_xlabel('t [s]')
    axes[1, 0].set_ylabel('tip error [mm]')
    axes[1, 0].set_title(f'tip error, RMS: {title}')
    ax = axes[1, 1]
    if hasattr(model, 'backbone'):
        for k in np.linspace(0, len(t) - 1, SNAPSHOTS).astype(int):
            points = model.backbone(q[k], 10)
            line, = ax.plot(points[:, 0] * 1e3, points[:, 2] * 1e3,
                            label=f't = {t[k] - t[0]:.1f} s')
            ghost = model.backbone(q_des[k], 10)
            ax.plot(ghost[:, 0] * 1e3, ghost[:, 2] * 1e3, ':', color=line.get_color())
        ax.set_aspect('equal', adjustable='datalim')
        ax.legend(fontsize=8)
    ax.set_xlabel('x [mm]')
    ax.set_ylabel('z [mm]')
    ax.set_title('backbone snapshots, side view (dotted: desired)')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return error
