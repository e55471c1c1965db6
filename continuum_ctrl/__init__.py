"""
continuum_ctrl: computed-torque control of continuum (PMA) and rigid arms.

The dynamics, control and simulation code imports no ROS; ROS lives in
`continuum_ctrl.ros` only.
"""

import os
import sys

# One BLAS thread, set before NumPy loads its OpenBLAS (a caller's own setting wins): the
# package's matrices are small (the tuner's loops reach ~200 states), and on a loaded 2-core
# machine OpenBLAS's threads spin against each other and the control loop's thread: a
# 198-state Schur form took 1.3 s with them and 0.08 s without, the tuner 10-17 times longer.
#: whether NumPy's BLAS runs one thread: set so here, or by the caller before NumPy loaded
ONE_BLAS_THREAD = (os.environ.get('OPENBLAS_NUM_THREADS', '1') == '1'
                   and ('numpy' not in sys.modules or 'OPENBLAS_NUM_THREADS' in os.environ))
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')

from continuum_ctrl.params import ConfigError  # noqa: E402 - after the BLAS setting
from continuum_ctrl.models import load_model  # noqa: E402

__all__ = ['ConfigError', 'load_model']
