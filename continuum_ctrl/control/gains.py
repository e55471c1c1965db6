"""
Feedback gains of the computed-torque law: per-joint vectors or symmetric positive definite.

A gain is given as ``n`` positive numbers (a diagonal gain), as an ``(n, n)`` symmetric positive
definite matrix, or as that matrix flattened row-major into ``n*n`` numbers (ROS parameters are
flat arrays). Units: ``kp`` in 1/s^2, ``kd`` in 1/s (they act on the error before the inertia).
"""

import numpy as np

from continuum_ctrl.params import ConfigError

#: relative tolerance on ``|K - K^T|`` before a matrix gain counts as non-symmetric
SYMMETRY_RTOL = 1e-9


def validate_gain(value, n, key):
    """
    Return a validated gain: an (n,) vector when diagonal, else an (n, n) SPD matrix.

    `value` is a sequence or array of n positive numbers, an (n, n) matrix, or n*n numbers
    row-major. A diagonal matrix comes back as its diagonal vector. Anything else raises
    ConfigError naming `key` (e.g. ``'gains.kp'``).
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise ConfigError(key, f'must be {n} positive numbers or an {n}x{n} symmetric positive '
                               f'definite matrix, got {value!r}')
    try:
        array = np.array(value)
    except ValueError as exc:
        raise ConfigError(key, f'is not a rectangular array of numbers: {exc}') from exc
    if array.dtype.kind not in 'iuf' or array.size == 0:
        raise ConfigError(key, f'must hold numbers only, got {value!r}')
    array = array.astype(float)
    if not np.all(np.isfinite(array)):
        raise ConfigError(key, f'must be finite, got {array.tolist()}')
    if array.shape == (n,):
        if np.any(array <= 0.0):
            raise ConfigError(key, f'per-joint gains must all be > 0, got {array.tolist()}')
        return array
    if array.shape == (n * n,):
        array = array.reshape(n, n)
    if array.shape != (n, n):
        raise ConfigError(key, f'must have {n} entries (per joint), or {n}x{n} = {n * n} '
                               f'(a matrix), got shape {array.shape}')
    return _spd(array, key)


def _spd(matrix, key):
    scale = np.max(np.abs(matrix))
    if np.max(np.abs(matrix - matrix.T)) > SYMMETRY_RTOL * scale:
        raise ConfigError(key, f'matrix must be symmetric, got {matrix.tolist()}')
    matrix = 0.5 * (matrix + matrix.T)
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        eig = np.linalg.eigvalsh(matrix).min()
        raise ConfigError(key, f'matrix must be positive definite, smallest eigenvalue '
                               f'{eig:.6g}') from None
    if np.count_nonzero(matrix - np.diag(np.diag(matrix))) == 0:
        return np.diag(matrix).copy()
    return matrix


def apply_gain(gain, error, out):
    """Write ``K @ error`` (matrix gain) or ``K * error`` (vector gain) into `out`; return it."""
    if gain.ndim == 1:
        return np.multiply(gain, error, out=out)
    return np.matmul(gain, error, out=out)
