"""
The tracking error period by period of a reference the loop learns (`ilc.*`, docs/ilc.md).

    show_periods(path, settings, q0, names, t, error, command, tip)   # False: nothing learnt
    # its parts: None where the loop learns nothing
    start, period = learnt_period(settings, q0)
    rows = per_period(names, t, error, command, start, period, tip)
    print_periods(names, rows, command); plot_periods(path, names, rows, command)

The demo and `continuum-ctrl simulate` show with it the error falling as the loop learns a
periodic reference, and bench/ilc_periods.py measures it. A period is one of the reference's,
counted from the loop's activation (where the reference's clock starts); the first shown is
the first the loop learns from, the one after the activation's blend. A tip circle (planned
by IK from the measured tip) and a trajectory (learnt per trial as it is sent again) are not
shown here.
"""

from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from continuum_ctrl.control.repetition import repetition
from continuum_ctrl.sim.report import command_summary, groups, units, variation_units


class PeriodRow(NamedTuple):
    """One period: RMS error per group (m or rad), tip RMS (m, or None), worst variation."""

    rms: List[float]
    tip: Optional[float]
    rate: float


def learnt_period(settings, q0) -> Optional[Tuple[float, float]]:
    """
    Return ``(start, period)`` s of the configured reference the loop learns, or None.

    `settings`: the loop's ControllerSettings; `q0`: the pose the reference starts from (model
    order). `start`: the first learnt period's start after activation. None without
    ``ilc.enable``, for a reference that does not repeat and for a task-space reference.
    """
    spec = settings.reference
    if not settings.ilc.enable or spec.needs_task_space:
        return None
    repeats = repetition(spec.build(np.asarray(q0, dtype=float)), settings.ilc.longest_period)
    if repeats is None or not repeats.periodic:
        return None
    return float(np.ceil(spec.blend_time / repeats.period - 1e-9)) * repeats.period, \
        repeats.period


def per_period(joint_names, t, error, command, start, period, tip=None,
               origin=None) -> List[PeriodRow]:
    """
    Return a `PeriodRow` per whole period of the run from `start` s after `origin`.

    A period with fewer than two samples (a recording's hole) has NaN figures.

    `error`, `command` (N, n) in the order of `joint_names` at the times `t` (s); `tip`: the
    tip's errors (N,) m, or None; `origin`: the activation (s; default ``t[0]``), where the
    reference's clock starts: samples heard from later on keep their periods.
    """
    rows = []
    sections = list(groups(joint_names).values())
    begin = (t[0] if origin is None else origin) + start
    while begin + period <= t[-1] + 1e-9:
        inside = (t >= begin) & (t < begin + period)
        if np.count_nonzero(inside) < 2:        # a hole in a recording through the nodes
            rows.append(PeriodRow([np.nan] * len(sections), None if tip is None else np.nan,
                                  np.nan))
            begin += period
            continue
        rms = [float(np.sqrt(np.mean(error[inside][:, index] ** 2))) for index in sections]
        rate = max(r for _, _, r, _ in command_summary(joint_names, t[inside], command[inside]))
        rows.append(PeriodRow(rms, None if tip is None else
                              float(np.sqrt(np.mean(tip[inside] ** 2))), rate))
        begin += period
    return rows


def print_periods(joint_names, rows, command) -> None:
    """Print the RMS error per group, the tip's and the worst command variation per period."""
    scale, unit, _, command_unit = units(joint_names, command)
    rate_scale, rate_unit = variation_units(command_unit)
    keys = ' / '.join(groups(joint_names))
    print(f'learning from repetition, per period: RMS error {unit} ({keys}) | tip RMS mm (the '
          f"controller's kinematics) | worst command variation {rate_unit}")
    for k, row in enumerate(rows):
        tip = '' if row.tip is None else f'{1e3 * row.tip:.3f}'
        print(f'{k + 1:4d}  ' + ' / '.join(f'{scale * r:.4f}' for r in row.rms)
              + f'  | {tip} | {rate_scale * row.rate:.2f}')


def plot_periods(path, joint_names, rows, command) -> None:
    """Plot the RMS error per group and the tip's per period (log scale) into `path`."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    scale, unit, _, _ = units(joint_names, command)
    tips = rows[0].tip is not None if rows else False
    figure, axes = plt.subplots(2 if tips else 1, 1, sharex=True, figsize=(7, 6 if tips else 3.5),
                                squeeze=False, layout='constrained')
    periods = np.arange(1, len(rows) + 1)
    for key, values in zip(groups(joint_names), zip(*(row.rms for row in rows))):
        axes[0, 0].semilogy(periods, scale * np.array(values), marker='.', label=key)
    axes[0, 0].set_ylabel(f'RMS error per period [{unit}]')
    if tips:
        axes[1, 0].semilogy(periods, [1e3 * row.tip for row in rows], marker='.',
                            label="tip (the controller's kinematics)")
        axes[1, 0].set_ylabel('tip RMS [mm]')
    axes[-1, 0].set_xlabel('period after the blend (1: nothing learnt yet)')
    for ax in axes[:, 0]:
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=8)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def show_periods(path, settings, q0, joint_names, t, error, command, tip=None,
                 origin=None) -> bool:
    """
    Print and plot (into `path`) the run's periods where its loop learns; return whether.

    `settings`, `q0`: as `learnt_period`; the rest as `per_period`, from the activation on.
    """
    learnt = learnt_period(settings, q0)
    rows = [] if learnt is None else per_period(joint_names, t, error, command, *learnt, tip,
                                                origin)
    if not rows:
        return False
    print_periods(joint_names, rows, command)
    plot_periods(path, joint_names, rows, command)
    return True
