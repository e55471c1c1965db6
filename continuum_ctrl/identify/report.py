"""
Outputs of an identification: the printed report, the fitted parameter file and the plot.

The fitted file is a ROS 2 parameter file holding only the fitted values under ``/**``, each
with its standard error in a comment; nodes take it as a second ``--params-file`` after the
nominal one, so its values win.
"""

from pathlib import Path

from continuum_ctrl.identify.excitation import CHATTER_FREQUENCY, CHATTER_SHARE, poorly_pinned
from continuum_ctrl.params import real_list, real_literal

#: parameter-file keys in the order they are written, with their namespace path
KEYS = ('model.sections.stiffness', 'model.sections.damping', 'output.area',
        'output.deadzone', 'output.area_slope', 'output.friction', 'output.friction_stiffness',
        'output.time_constant', 'output.delay')


def text(result, setup, sources):
    """Return the report: each estimate against its nominal value, and the fit's figures."""
    lines = [f'identified from {", ".join(str(s) for s in sources)} against {setup.path}',
             f'{"parameter":<34}{"estimate":>14}{"std. error":>12}{"nominal":>14}  unit']
    for e in result.estimates:
        lines.append(f'{e.label:<34}{e.value:>14.6g}{e.se:>12.3g}{e.nominal:>14.6g}  {e.unit}')
    lines.append(f'condition number of the scaled regressor: {result.condition:.3g}')
    unit = result.unit
    lines.append(f'RMS residual force: {result.rms_train:.3g} {unit} (fit, {result.samples} '
                 f'samples), {result.rms_test:.3g} {unit} (held out)')
    per_coordinate = ' '.join(f'{r:.3f}' for r in result.r2_test)
    lines.append(f'R^2 on the held-out last 30 % of each run: {result.r2_test_all:.4f} '
                 f'(per {result.per}: {per_coordinate})')
    if result.excitation:
        shares = ' '.join(f'{100 * x.chatter:.0f}' for x in result.excitation)
        lines.append(f"share of the commands' power above {CHATTER_FREQUENCY:g} Hz, % (per "
                     f'{result.per}; above {100 * CHATTER_SHARE:.0f} they chatter): {shares}')
    left_out = [f'{count} {reason}' for reason, count in result.left_out.items() if count]
    if left_out:
        lines.append(f'samples left out of the fit (per {result.per}): {", ".join(left_out)}')
    if result.scale_note:
        lines.append(f'note: {result.scale_note}')
    # a URDF arm's base parameters are combinations, many of them barely pinned by design
    poor = poorly_pinned(result) if result.excitation else []
    if poor:
        lines.append(f'note: the data barely pin {", ".join(poor)} (standard errors): excite '
                     'them more or fit fewer parameters')
    if result.values('output.delay'):
        lines.append('note: output.delay is the dead time these data show; the controller must '
                     'predict all of it and the command\'s own way to the valves too, so round '
                     'it up: a prediction short of the real latency chatters, a long one costs '
                     'little (docs/valves.md)')
    lines.extend(result.details)
    return '\n'.join(lines)


#: what a parameter file takes for each fitted key: (lowest value, strictly above it)
ALLOWED = {'model.sections.stiffness': (0.0, True), 'model.sections.damping': (0.0, False),
           'output.area': (0.0, True), 'output.deadzone': (0.0, False),
           'output.area_slope': (0.0, False), 'output.friction': (0.0, False),
           'output.friction_stiffness': (0.0, True),
           'output.time_constant': (0.0, False), 'output.delay': (0.0, False)}


def unusable(result):
    """
    Return why the fitted values cannot go into a parameter file, or None.

    A value the nodes would refuse (a negative damping, say) means the model does not
    explain the data: the file is not written.
    """
    for e in result.estimates:
        low, strict = ALLOWED.get(e.key, (-float('inf'), False))
        if e.value < low or (strict and e.value <= low):
            bound = f"{'>' if strict else '>='} {low:g}"
            return (f'not written: the fit gives {e.label} = {e.value:.4g} {e.unit}, and '
                    f'{e.key} must be {bound}: the model does not explain these data '
                    f'(held-out R^2 {result.r2_test_all:.3f}); check the joint order, the '
                    'units and that the arm is the one in the parameter file')
    return None


def fitted_yaml(result, sources):
    """Return the fitted parameter file: fitted values only, standard errors in comments."""
    tree = {}
    for key in KEYS:
        estimates = result.values(key)
        if estimates:
            tree[key] = estimates
    lines = [f'# Fitted by `continuum-ctrl identify` from {", ".join(str(s) for s in sources)}.',
             '# Give it to the controller as a second --params-file after the nominal file.',
             '/**:', '  ros__parameters:']
    opened = []
    for key, estimates in tree.items():
        *namespace, leaf = key.split('.')
        common = 0
        while common < min(len(opened), len(namespace)) and opened[common] == namespace[common]:
            common += 1
        for depth in range(common, len(namespace)):
            lines.append('    ' + '  ' * depth + f'{namespace[depth]}:')
        opened = namespace
        unit = estimates[0].unit
        if estimates[0].index is None:
            value, error = real_literal(estimates[0].value), f'{estimates[0].se:.3g}'
        else:
            value = real_list([e.value for e in estimates])
            error = real_list([e.se for e in estimates], 3)
        lines.append('    ' + '  ' * len(namespace) + f'{leaf}: {value}  # standard error '
                     f'{error} {unit}')
    return '\n'.join(lines) + '\n'


def plot(result, joint_names, path):
    """Write a PNG: measured against predicted generalized force per PMA on the held-out part."""
    from matplotlib.figure import Figure

    n = len(joint_names)
    columns = 3 if n % 3 == 0 else 1
    rows = -(-n // columns)
    figure = Figure(figsize=(5.0 * columns, 2.0 * rows), layout='constrained')
    axes = figure.subplots(rows, columns, squeeze=False, sharex=True).ravel()
    for j, (ax, name) in enumerate(zip(axes, joint_names)):
        for k, (t, measured, predicted) in enumerate(result.held_out):
            ax.plot(t, measured[:, j], color='tab:blue', linewidth=1.0,
                    label=result.plot_labels[0] if k == 0 else None)
            ax.plot(t, predicted[:, j], '--', color='tab:orange', linewidth=1.0,
                    label=result.plot_labels[1] if k == 0 else None)
        ax.set_title(f'{name}: R^2 {result.r2_test[j]:.3f}', fontsize='small')
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize='x-small', loc='best')
    for ax in axes[-columns:]:
        ax.set_xlabel('time in run (s)')
    for ax in axes[n:]:
        ax.set_visible(False)
    figure.supylabel(f'generalized force ({result.unit})')
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    return path


def has_keys(result):
    """Return whether any estimate has a parameter-file key (a fitted file can be written)."""
    return any(e.key for e in result.estimates)


def write_report(result, setup, sources, directory, fitted=True):
    """Write report.txt, fitted.yaml (any key, `fitted`) and held_out.png into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / 'report.txt']
    written[0].write_text(text(result, setup, sources) + '\n')
    if fitted and has_keys(result):
        written.append(directory / 'fitted.yaml')
        written[-1].write_text(fitted_yaml(result, sources))
    written.append(plot(result, setup.joints.model_names, directory / 'held_out.png'))
    return written
