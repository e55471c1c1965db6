"""The CoG model against the integral model: shipped betas, the fit, the fit-betas command."""

from pathlib import Path

from support.continuum_reference import arm, REFERENCE_ARM, SECOND_ARM
import numpy as np
import pytest

from continuum_ctrl.apps.cli import main as cli
from continuum_ctrl.models.continuum.fit import (energy_features, fit, min_eigenvalue_ratio,
                                                 relative_errors, sample_states)
from continuum_ctrl.models.continuum.params import DEFAULT_BETA, read_spec

CONFIG = Path(__file__).resolve().parents[2] / 'config' / 'continuum_3section.yaml'


@pytest.mark.parametrize('name,spec,seed', [('reference', REFERENCE_ARM, 101),
                                            ('second', SECOND_ARM, 202)])
def test_shipped_betas_match_the_integral_model_on_held_out_states(name, spec, seed):
    spec = read_spec(arm(spec, 'continuum_cog'))
    Q, QD = sample_states(spec, 400, np.random.default_rng(seed))   # not the fit's seed 0
    F, K = energy_features(spec, Q, QD)
    shaped = np.abs(relative_errors(F, K, DEFAULT_BETA))
    plain = np.abs(relative_errors(F, K, np.ones(6)))
    print(f'{name} arm, relative kinetic-energy error, median / p95: '
          f'shipped betas {100 * np.median(shaped):.3f} % / '
          f'{100 * np.percentile(shaped, 95):.3f} %, '
          f'plain {100 * np.median(plain):.3f} % / {100 * np.percentile(plain, 95):.3f} %')
    assert np.median(shaped) <= 0.005
    assert np.percentile(shaped, 95) <= 0.02
    assert np.median(plain) >= 0.02             # the plain CoG model is several % off
    assert min_eigenvalue_ratio(spec, DEFAULT_BETA, Q[:50]) > 0


def test_fit_reproduces_the_shipped_betas_and_holds_the_angular_ones():
    spec = read_spec(arm(REFERENCE_ARM, 'continuum_cog'))
    result = fit(spec, samples=800, held_out=200, seed=0)
    assert list(result['fitted']) == [True, True, True, False, False, False]
    assert np.array_equal(result['beta'][3:], np.ones(3))
    assert np.allclose(result['beta'][:3], DEFAULT_BETA[:3], atol=0.05)
    assert np.median(np.abs(result['test'])) < 0.2 * np.median(np.abs(result['plain']))
    assert result['min_eig_ratio'] > 0


def test_fit_betas_command(capsys):
    status = cli(['fit-betas', str(CONFIG), '--samples', '200', '--held-out', '50'])
    out = capsys.readouterr().out
    assert status == 0
    assert 'model.cog.beta: [' in out and 'plain (betas = 1)' in out
    line = next(s for s in out.splitlines() if s.startswith('model.cog.beta'))
    beta = [float(v) for v in line.split('[')[1].rstrip(']').split(',')]
    assert len(beta) == 6 and beta[3:] == [1.0, 1.0, 1.0]
    assert cli(['fit-betas', str(CONFIG) + '.missing']) == 2
