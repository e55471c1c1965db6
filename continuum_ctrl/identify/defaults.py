"""
The identification's defaults, light to import.

`continuum-ctrl identify` shows them in its help, and checks its input files before the fit's
modules (and SciPy, 2.6 s) load.
"""

#: what `--fit` fits by default on a continuum arm
DEFAULT_FIT = ('stiffness', 'damping', 'area', 'deadzone')
#: what `--fit` fits by default on a rigid (URDF) arm
RIGID_FIT = ('inertia',)
#: default least held-out R^2 per PMA (`--min-r2`)
MIN_R2 = 0.5
