"""Continuum models (integral and CoG): structure, exactness, energy balance, bad specs."""

from pathlib import Path

from support.continuum_reference import (arm, cog_kinetic_energy, integral_kinetic_energy,
                                         REFERENCE_ARM, SECOND_ARM)
from numba import njit
import numpy as np
import pytest

from continuum_ctrl import ConfigError, load_model
from continuum_ctrl.params import file_parameters
from continuum_ctrl.models.christoffel import coriolis_from_dM, skew_residual
from continuum_ctrl.numerics.jit import compiled
from continuum_ctrl.models.continuum.params import DEFAULT_BETA

ARMS = {'reference': REFERENCE_ARM, 'second': SECOND_ARM}
KINDS = ('continuum_cog', 'continuum_integral')
CASES = [(a, k) for a in ARMS for k in KINDS]
CONFIG = Path(__file__).resolve().parents[2] / 'config' / 'continuum_3section.yaml'


@pytest.fixture(scope='module')
def models():
    return {(a, k): load_model(arm(ARMS[a], k)) for a, k in CASES}


def states(name, count, seed, bend=1.0):
    """Random states: q uniform in [0, bend * l_max], qd Gaussian with l_max per second."""
    rng = np.random.default_rng(seed)
    lmax = np.repeat(ARMS[name]['sections']['max_extension'], 3)
    return [(rng.uniform(0, bend, lmax.size) * lmax, rng.normal(size=lmax.size) * lmax)
            for _ in range(count)]


def richardson(f, x, d, h):
    """Directional derivative of f at x along d, fourth order."""
    d1 = (f(x + h * d) - f(x - h * d)) / (2 * h)
    d2 = (f(x + 2 * h * d) - f(x - 2 * h * d)) / (4 * h)
    return (4 * d1 - d2) / 3


@pytest.mark.parametrize('name,kind', CASES)
def test_mass_matrix_is_symmetric_positive_definite(models, name, kind):
    model = models[name, kind]
    for q, _ in states(name, 10, 1) + states(name, 5, 11, bend=0.0):
        M = model.mass_matrix(q)
        assert np.array_equal(M, M.T)
        assert np.linalg.eigvalsh(M)[0] > 1e-6 * np.abs(M).max()


@pytest.mark.parametrize('name', ARMS)
def test_kinetic_energy_matches_independent_arc_form_reference(models, name):
    spec = ARMS[name]
    rng = np.random.default_rng(5)
    beta = rng.uniform(0.5, 2.0, 6)
    shaped = load_model(dict(arm(spec, 'continuum_cog'), cog={'beta': beta.tolist()}))
    for q, qd in states(name, 3, 2):
        K = integral_kinetic_energy(spec, q, qd)
        assert models[name, 'continuum_integral'].kinetic_energy(q, qd) == pytest.approx(K, 1e-8)
        K = cog_kinetic_energy(spec, q, qd, DEFAULT_BETA)
        assert models[name, 'continuum_cog'].kinetic_energy(q, qd) == pytest.approx(K, 1e-8)
        K = cog_kinetic_energy(spec, q, qd, beta)
        assert shaped.kinetic_energy(q, qd) == pytest.approx(K, 1e-8)


@pytest.mark.parametrize('name,kind', CASES)
def test_dM_and_christoffel_coriolis_are_exact(models, name, kind):
    model = models[name, kind]
    n = model.n
    for q, qd in states(name, 2, 3):
        dM = model.mass_matrix_derivative(q)
        fd = np.stack([richardson(model.mass_matrix, q, e, 1e-5) for e in np.eye(n)], axis=-1)
        scale = np.abs(fd).max()
        assert np.abs(dM - fd).max() <= 1e-7 * scale
        C = model.coriolis_matrix(q, qd)
        reference = coriolis_from_dM(fd, qd)
        assert np.abs(C - reference).max() <= 1e-7 * np.abs(reference).max()
        mdot = richardson(model.mass_matrix, q, qd, 1e-4)
        assert skew_residual(mdot, C) <= 1e-7 * np.abs(mdot).max()


@pytest.mark.parametrize('name,kind', CASES)
def test_inverse_and_forward_dynamics_invert_each_other(models, name, kind):
    model = models[name, kind]
    rng = np.random.default_rng(4)
    for q, qd in states(name, 3, 4):
        qdd = rng.normal(size=model.n)
        tau = model.inverse_dynamics(q, qd, qdd)
        assert np.allclose(model.forward_dynamics(q, qd, tau), qdd, rtol=0, atol=1e-9)
        M, C, bias = model.dynamics(q, qd)
        assert np.allclose(tau, M @ qdd + bias, rtol=1e-12, atol=1e-12)
        assert np.allclose(bias, C @ qd + model.passive_forces(q, qd)
                           + model.gravity_vector(q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('name,kind', CASES)
def test_gravity_is_the_gradient_of_the_potential(models, name, kind):
    model = models[name, kind]
    for q, _ in states(name, 3, 6):
        fd = [richardson(model.gravity_potential, q, e, 1e-4) for e in np.eye(model.n)]
        g = model.gravity_vector(q)
        assert np.allclose(g, fd, rtol=0, atol=1e-8 * np.abs(g).max())


def test_cog_and_integral_gravity_agree_exactly(models):
    for name in ARMS:
        for q, _ in states(name, 3, 7):
            a = models[name, 'continuum_cog']
            b = models[name, 'continuum_integral']
            assert a.gravity_potential(q) == pytest.approx(b.gravity_potential(q), abs=1e-15)
            assert np.allclose(a.gravity_vector(q), b.gravity_vector(q), rtol=0, atol=1e-14)


def test_passive_forces_with_limit_stiffening_derive_from_a_c2_potential():
    spec = arm(SECOND_ARM, 'continuum_cog')
    spec['limit_stiffness'] = 5e4
    model = load_model(spec)
    lmax = np.repeat(SECOND_ARM['sections']['max_extension'], 3)
    rng = np.random.default_rng(8)
    low, high = model.joint_limits()
    assert np.array_equal(low, np.zeros(9)) and np.array_equal(high, lmax)
    D = model.damping_matrix(np.zeros(9))
    assert np.array_equal(D, np.diag(np.repeat(SECOND_ARM['sections']['damping'], 3)))
    for _ in range(5):
        q = rng.uniform(-0.2, 1.2, 9) * lmax      # inside, near and beyond both limits
        qd = rng.normal(size=9)
        grad = [richardson(model.elastic_potential, q, e, 1e-7) for e in np.eye(9)]
        assert np.allclose(model.passive_forces(q, qd), np.array(grad) + D @ qd,
                           rtol=1e-8, atol=1e-8)
    # beyond the upper limit the stiffness rises smoothly from 2500 to 2500 + 5e4 N/m
    k = [richardson(lambda x: model.passive_forces(x, np.zeros(9)), lmax + d, np.eye(9)[0],
                    1e-7)[0] for d in (-1e-6, 1e-6, 0.049 * lmax[0], 0.051 * lmax[0], 0.2)]
    delta = 0.05 * lmax[0]
    assert k[0] == pytest.approx(2500.0) and k[1] == pytest.approx(2500.0 + 5e4 * 1e-6 / delta)
    assert k[2] == pytest.approx(k[3], rel=0.05) and k[4] == pytest.approx(52500.0)


def test_default_quadrature_is_converged_to_1e9():
    spec = arm(SECOND_ARM, 'continuum_integral')
    fine = load_model(dict(spec, quadrature=40))
    model = load_model(spec)
    lmax = np.repeat(SECOND_ARM['sections']['max_extension'], 3)
    for j in range(3):                          # full stroke of one PMA per section
        q = np.zeros(9)
        q[[j, 3 + (j + 1) % 3, 6 + (j + 2) % 3]] = lmax[[j, 3, 6]]
        A, B = model.mass_matrix(q), fine.mass_matrix(q)
        assert np.abs(A - B).max() <= 1e-9 * np.abs(B).max()
        A, B = model.mass_matrix_derivative(q), fine.mass_matrix_derivative(q)
        assert np.abs(A - B).max() <= 1e-9 * np.abs(B).max()


def rk4_energy_drift(model, q, qd, dt, steps):
    """Largest |E(t) - E(0)| / |E(0)| of an RK4 free motion (no input)."""
    tau = np.zeros(model.n)

    def f(x):
        return np.concatenate([x[model.n:], model.forward_dynamics(x[:model.n],
                                                                   x[model.n:], tau)])

    def energy(x):
        return model.kinetic_energy(x[:model.n], x[model.n:]) + model.potential_energy(
            x[:model.n])
    x = np.concatenate([q, qd])
    E0 = energy(x)
    worst = 0.0
    for k in range(steps):
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if k % 50 == 49:
            worst = max(worst, abs(energy(x) - E0))
    return worst / abs(E0)


@pytest.mark.slow
@pytest.mark.parametrize('kind,duration', [('continuum_cog', 2.0),
                                           ('continuum_integral', 0.1)])
def test_free_undamped_motion_conserves_energy(kind, duration):
    spec = arm(REFERENCE_ARM, kind)
    spec['sections']['damping'] = [0.0] * 3
    model = load_model(spec)
    q, qd = states('reference', 1, 9)[0]
    dt = 4e-5                                   # s; about 1/40 of the fastest mode's period
    assert rk4_energy_drift(model, q, qd, dt, int(round(duration / dt))) <= 1e-6


@pytest.mark.parametrize('name,kind', CASES)
def test_damped_energy_falls_at_exactly_qd_D_qd(models, name, kind):
    model = models[name, kind]
    for q, qd in states(name, 2, 10):
        qdd = model.forward_dynamics(q, qd, np.zeros(model.n))
        mdot = richardson(model.mass_matrix, q, qd, 1e-4)
        grad = [richardson(model.potential_energy, q, e, 1e-5) for e in np.eye(model.n)]
        rate = qd @ model.mass_matrix(q) @ qdd + 0.5 * qd @ mdot @ qd + np.dot(grad, qd)
        loss = qd @ model.damping_matrix(q) @ qd
        assert rate == pytest.approx(-loss, rel=1e-7)


def test_other_section_counts():
    rng = np.random.default_rng(12)
    for n in (1, 5):
        sections = {k: v[:1] * n for k, v in REFERENCE_ARM['sections'].items()}
        for kind in KINDS:
            model = load_model({'type': kind, 'sections': sections})
            q, qd = rng.uniform(0, 0.04, 3 * n), rng.normal(size=3 * n) * 0.04
            assert model.joint_names[-1] == f'section{n}_pma3'
            M = model.mass_matrix(q)
            assert np.linalg.eigvalsh(M)[0] > 0
            fd = np.stack([richardson(model.mass_matrix, q, e, 1e-5) for e in np.eye(3 * n)],
                          axis=-1)
            ref = coriolis_from_dM(fd, qd)
            assert np.abs(model.coriolis_matrix(q, qd) - ref).max() <= 1e-7 * np.abs(ref).max()


def test_the_pma_area_lives_in_output_area_only():
    """`model.sections.area` is refused by name; the reference arm's area is `output.area`."""
    tree, model = file_parameters(CONFIG, 'continuum_controller')
    assert tree['output']['area'] == [1.33e-4]
    assert 'area' not in model['sections']
    with pytest.raises(ConfigError, match='output.area') as err:
        load_model(dict(model, sections=dict(model['sections'], area=[1.33e-4] * 3)))
    assert err.value.key == 'model.sections.area'
    with pytest.raises(ConfigError) as err:               # not a namespace: one line too
        load_model(dict(model, sections=True))
    assert err.value.key.startswith('model.sections')


def test_reference_parameter_file():
    model = load_model(CONFIG)
    assert type(model).__name__ == 'CogModel'
    assert model.joint_names == [f'section{i}_pma{j}' for i in (1, 2, 3) for j in (1, 2, 3)]
    assert np.array_equal(model.beta, DEFAULT_BETA)
    reference = load_model(arm(REFERENCE_ARM, 'continuum_cog'))
    q = np.full(9, 0.02)
    assert np.array_equal(model.mass_matrix(q), reference.mass_matrix(q))


@pytest.mark.parametrize('key,value,where', [
    ('length', [0.2, 0.0, 0.2], 'model.sections.length'),
    ('radius', [0.013, -0.01, 0.013], 'model.sections.radius'),
    ('mass', [0.1, 0.1, 0.0], 'model.sections.mass'),
    ('mass', [0.1, 0.1], 'model.sections.mass'),
    ('max_extension', [0.04] * 4, 'model.sections.max_extension'),
    ('stiffness', [1.0] * 4, 'model.sections.stiffness'),
    ('twist', [0.0], 'model.sections.twist'),
    ('colour', [1, 2, 3], 'model.sections.colour'),
])
def test_bad_section_parameters_name_the_key(key, value, where):
    spec = arm(REFERENCE_ARM, 'continuum_cog')
    spec['sections'][key] = value
    with pytest.raises(ConfigError) as err:
        load_model(spec)
    assert err.value.key == where


@pytest.mark.parametrize('extra,where', [
    ({'cog': {'beta': [1.0] * 5}}, 'model.cog.beta'),
    ({'cog': {'beta': [1.0] * 6, 'alpha': 1}}, 'model.cog.alpha'),
    ({'quadrature': 2.5}, 'model.quadrature'),
    ({'gravity': [0, -9.81]}, 'model.gravity'),
    ({'joints': ['a'] * 9}, 'model.joints'),
    ({'limit_stiffness': -1.0}, 'model.limit_stiffness'),
    ({'speed': 3}, 'model.speed'),
])
def test_bad_model_parameters_name_the_key(extra, where):
    with pytest.raises(ConfigError) as err:
        load_model(dict(arm(REFERENCE_ARM, 'continuum_integral'), **extra))
    assert err.value.key == where


def test_compiled_falls_back_to_no_cache_where_none_is_writable():
    namespace = {}
    exec('def twice(x):\n    return 2.0 * x\n', namespace)   # no source file: no cache
    with pytest.raises(RuntimeError):
        njit(cache=True)(namespace['twice'])
    assert compiled()(namespace['twice'])(1.5) == 3.0
