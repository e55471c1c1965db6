"""
The demo's task-space picture: desired against actual tip path, tip error, backbone snapshots.

Used by `continuum-ctrl demo` when the controller's parameters give a task frame; the joint
logs (desired and measured positions per `~/state` message, model order) are turned into tip
positions by FK of the controller's model.
"""

import numpy as np

from continuum_ctrl import load_model
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params import file_parameters
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings
from continuum_ctrl.sim.report import tip_paths

#: backbone snapshots drawn
SNAPSHOTS = 4


def task_model(params_path, node_name):
    """Return ``(model, task frame)`` of the controller in `params_path`; frame None if none."""
    tree, spec = file_parameters(params_path, node_name)
    _, tree = ControllerNodeSettings.split(tree)
    model = load_model(spec)
    return model, ControllerSettings.parse(tree, model).task.frame


def plot_task(path, model, frame, t, q_des, q):
    """Write the picture to `path`; return the tip errors (N,) [m]."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    desired, actual, error = tip_paths(model, frame, q_des, q)
    fig, axes = plt.subplots(2, 2, figsize=(11, 9))
    for ax, (i, j, name) in zip(axes[0], ((0, 1, 'top view (x, y)'), (0, 2, 'side view (x, z)'))):
        ax.plot(desired[:, i] * 1e3, desired[:, j] * 1e3, '--', color='tab:orange',
                label='desired')
        ax.plot(actual[:, i] * 1e3, actual[:, j] * 1e3, color='tab:blue', linewidth=1,
                label='actual')
        ax.set_xlabel('xyz'[i] + ' [mm]')
        ax.set_ylabel('xyz'[j] + ' [mm]')
        ax.set_aspect('equal', adjustable='datalim')
        ax.set_title(f'tip path, {name}')
        ax.legend()
    axes[1, 0].plot(t - t[0], error * 1e3)
    axes[1, 0].set_xlabel('t [s]')
    axes[1, 0].set_ylabel('tip error [mm]')
    axes[1, 0].set_title(f'tip error (RMS {np.sqrt(np.mean(error ** 2)) * 1e3:.3f} mm)')
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
