"""
`continuum-ctrl fit-betas PARAMS.yaml`: fit the CoG model's energy-shaping coefficients.

The CoG kinetic energy is linear in the six betas: ``K_cog = K_0 + sum_k beta_k F_k``. At
sampled states the fit matches it to the integral model's ``K_int`` by least squares of the
relative error ``(K_cog - K_int)/K_int``.

Samples: ``q`` uniform in ``[0, l_max]`` per PMA; ``qd`` Gaussian, independent per PMA, with
standard deviation ``l_max`` per second. The relative energy error of a quadratic form does
not depend on the size of ``qd``, only on its direction, so an isotropic distribution (in
stroke-normalized PMA rates) weighs every direction of motion alike: extension and bending of
every section and all their combinations.

A beta whose term carries less than ``--min-share`` (median) of the kinetic energy cannot be
determined by the data and is held at 1: on thin arms that is the three angular betas. The
others are fitted with a small ridge toward 1; if ``M`` is not positive definite at every
sample, the ridge grows until it is.
"""

import argparse
import dataclasses

import numpy as np

from continuum_ctrl.params import model_spec
from continuum_ctrl.models.continuum.cog import CogModel
from continuum_ctrl.models.continuum.integral import IntegralModel
from continuum_ctrl.models.continuum.params import read_spec

BETA_NAMES = ('bv1', 'bv2', 'bv3', 'bw1', 'bw2', 'bw3')


def sample_states(spec, count, rng):
    """Return ``(Q, QD)``, (count, 3n) each, drawn as described in the module docstring."""
    lmax = np.repeat(spec.max_extension, 3)
    Q = rng.uniform(0.0, 1.0, (count, lmax.size)) * lmax
    QD = rng.normal(size=(count, lmax.size)) * lmax
    return Q, QD


def energy_features(spec, Q, QD):
    """
    Return ``(F, K_int)``: CoG energy ``K_0`` and per-beta terms ``F_k``, (count, 7); integral.

    ``K_cog(beta) = F[:, 0] + F[:, 1:] @ beta``.
    """
    integral = IntegralModel(spec)
    models = [CogModel(dataclasses.replace(spec, beta=b)) for b in np.vstack([np.zeros(6),
                                                                              np.eye(6)])]
    F = np.empty((len(Q), 7))
    K = np.empty(len(Q))
    for s, (q, qd) in enumerate(zip(Q, QD)):
        K[s] = integral.kinetic_energy(q, qd)
        energies = np.array([m.kinetic_energy(q, qd) for m in models])
        F[s, 0] = energies[0]
        F[s, 1:] = energies[1:] - energies[0]
    return F, K


def relative_errors(F, K, beta):
    """Return the relative kinetic-energy errors ``(K_cog - K_int)/K_int`` per sample."""
    return (F[:, 0] + F[:, 1:] @ np.asarray(beta, dtype=float) - K) / K


def min_eigenvalue_ratio(spec, beta, Q):
    """Return the smallest ``lambda_min(M)/lambda_max(M)`` of the CoG model over states `Q`."""
    model = CogModel(dataclasses.replace(spec, beta=np.asarray(beta, dtype=float)))
    worst = np.inf
    for q in Q:
        eig = np.linalg.eigvalsh(model.mass_matrix(q))
        worst = min(worst, eig[0] / eig[-1])
    return worst


def solve_betas(F, K, min_share=0.005, ridge=1e-6):
    """
    Return ``(beta, fitted)``: least-squares betas (6,) and a mask of the ones fitted.

    Betas whose term's median energy share is below `min_share` stay at 1; the rest are
    shrunk toward 1 by the ridge weight `ridge` (per sample).
    """
    A = F[:, 1:] / K[:, None]
    y = (K - F[:, 0]) / K
    share = np.median(np.abs(A), axis=0)
    fitted = share >= min_share
    beta = np.ones(6)
    rhs = y - A[:, ~fitted].sum(axis=1)
    Af = A[:, fitted]
    reg = np.sqrt(ridge * len(K)) * np.eye(Af.shape[1])
    beta[fitted] = np.linalg.lstsq(np.vstack([Af, reg]),
                                   np.concatenate([rhs, reg @ np.ones(Af.shape[1])]),
                                   rcond=None)[0]
    return beta, fitted


def fit(spec, samples=4000, held_out=2000, seed=0, min_share=0.005):
    """
    Fit the betas of `spec` (a ContinuumSpec); return a dict of the results.

    Keys: beta, fitted (mask), ridge, train and test (relative errors with the fitted betas),
    plain (test errors with all betas 1), min_eig_ratio (over all samples).
    """
    rng = np.random.default_rng(seed)
    Q, QD = sample_states(spec, samples + held_out, rng)
    F, K = energy_features(spec, Q, QD)
    train = slice(0, samples)
    test = slice(samples, samples + held_out)
    ridge = 1e-6
    while True:
        beta, fitted = solve_betas(F[train], K[train], min_share, ridge)
        ratio = min_eigenvalue_ratio(spec, beta, Q)
        if ratio > 0.0 or ridge > 1e6:
            break
        ridge *= 10.0
    if ratio <= 0.0:
        beta, fitted = np.ones(6), np.zeros(6, dtype=bool)
        ratio = min_eigenvalue_ratio(spec, beta, Q)
    return {'beta': beta, 'fitted': fitted, 'ridge': ridge,
            'train': relative_errors(F[train], K[train], beta),
            'test': relative_errors(F[test], K[test], beta),
            'plain': relative_errors(F[test], K[test], np.ones(6)),
            'min_eig_ratio': ratio}


def _summary(errors):
    e = np.abs(errors)
    return (f'median {100 * np.median(e):.3f} %, p95 {100 * np.percentile(e, 95):.3f} %, '
            f'max {100 * e.max():.3f} %')


def main(argv):
    """Fit and print the betas for the arm in a parameter file; return the exit status."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl fit-betas', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('params', help='parameter YAML with the `model` namespace of the arm')
    parser.add_argument('--samples', type=int, default=4000, help='training states')
    parser.add_argument('--held-out', type=int, default=2000, help='test states')
    parser.add_argument('--seed', type=int, default=0, help='random seed')
    parser.add_argument('--min-share', type=float, default=0.005,
                        help='hold at 1 betas whose term has a smaller median energy share')
    parser.add_argument('--node', default=None, help='node name in the parameter file')
    args = parser.parse_args(argv)
    spec = read_spec(model_spec(args.params, args.node))
    result = fit(spec, args.samples, args.held_out, args.seed, args.min_share)
    print(f'arm: {spec.sections} sections, {args.samples} training and {args.held_out} '
          f'held-out states, seed {args.seed}, ridge {result["ridge"]:g}')
    for name, value, fitted in zip(BETA_NAMES, result['beta'], result['fitted']):
        print(f'  {name} = {value:.6f}' + ('' if fitted else '  (held at 1: undetermined)'))
    print('model.cog.beta: [' + ', '.join(f'{b:.6f}' for b in result['beta']) + ']')
    print('relative kinetic-energy error, held-out states:')
    print('  fitted betas: ' + _summary(result['test']))
    print('  plain (betas = 1): ' + _summary(result['plain']))
    print(f'smallest eigenvalue ratio of M over all states: {result["min_eig_ratio"]:.3e}')
    return 0
