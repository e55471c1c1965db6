"""
The PMA friction loop as the simulators have it and as the controller's feed-forward fits it.

    ./run shell python bench/pma_loops.py [OUT.png]     (default: docs/img/pma_friction_loop.png)

One PMA at constant pressure, its length driven slowly back and forth (a triangle of
+-0.5 mm about 13 mm, then +-0.2 mm): the Maxwell-slip bank's force against the length
(actuation/maxwell_slip.py), for the simulators' 2 N at 15 kN/m and for the element
`identify` fitted on issue 40's plant (2.008 N at 14 601 N/m, docs/pma-model.md). The loop
is 2 x the slip force wide and turns round over 2 x slip force / stiffness of travel; its
area is the energy the friction takes per cycle. This is what a displacement-controlled
sweep on a real PMA measures (docs/pma-model.md, "Measuring it on a real PMA").
"""

import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from continuum_ctrl.actuation.maxwell_slip import MaxwellSlip  # noqa: E402

#: (label, slip force N, stiffness N/m)
BANKS = (('simulators: 2 N, 15 kN/m', 2.0, 1.5e4),
         ('identify on the built-in plant: 2.008 N, 14.6 kN/m', 2.008, 14601.0))


def triangle(center, amplitudes, points=400):
    """Return a length path (m): one triangle cycle per amplitude (m) about `center`."""
    path = [np.full(1, center)]
    for amplitude in amplitudes:
        ramp = np.linspace(0.0, 1.0, points)
        path += [center + amplitude * ramp, center + amplitude * (1 - 2 * ramp),
                 center - amplitude * (1 - ramp)]
    return np.concatenate(path)


def main(argv=None):
    """Draw the loops."""
    out = (argv if argv is not None else sys.argv[1:]) or ['docs/img/pma_friction_loop.png']
    q = triangle(0.013, (5e-4, 5e-4, 2e-4))
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for (label, force, stiffness), style in zip(BANKS, ('-', '--')):
        bank = MaxwellSlip([[force]], [[stiffness]])
        bank.reset(q[:1])
        pushed = [-bank.force(np.array([x]))[0] for x in q]
        axes.plot(1e3 * (q - 0.013), pushed, style, label=label)
    axes.set_xlabel('PMA length change about 13 mm, mm')
    axes.set_ylabel('friction force to push through, N')
    axes.set_title('Maxwell-slip friction of one PMA: +-0.5 mm and +-0.2 mm cycles')
    axes.grid(True, alpha=0.3)
    axes.legend(loc='lower right', fontsize=8)
    figure.tight_layout()
    figure.savefig(out[0], dpi=110)
    print(out[0])


if __name__ == '__main__':
    main()
