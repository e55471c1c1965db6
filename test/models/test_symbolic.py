"""Symbolic M(q)/U(q) arms: the textbook closed form, Pinocchio, and the derive exports."""

import ctypes
from pathlib import Path
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
import sympy as sp
import yaml

from continuum_ctrl import load_model
from continuum_ctrl.apps.cli import main as cli
from continuum_ctrl.models.christoffel import coriolis_from_dM
from continuum_ctrl.models.rigid import resolve_urdf
from continuum_ctrl.models.symbolic import derive

PLANAR_2R = Path(__file__).resolve().parents[2] / 'config' / 'planar_2r.yaml'
PENDULUM_URDF = 'package://double_pendulum_description/urdf/double_pendulum.urdf'

# the planar 2R arm of config/planar_2r.yaml
m1 = m2 = 1.0
l1 = 1.0
lc1 = lc2 = 0.5
I1 = I2 = 0.1
G = 9.81
# the textbook constants for this arm: M = [[a1 + 2 a2 c2, a3 + a2 c2], [a3 + a2 c2, a3]]
A1 = I1 + I2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2)
A2 = m2 * l1 * lc2
A3 = I2 + m2 * lc2**2


def closed_form_coriolis(q, qd):
    """Return the textbook closed-form C(q, qd) of the 2R arm, written out by hand."""
    h = -A2 * np.sin(q[1])
    return np.array([[h * qd[1], h * (qd[0] + qd[1])], [-h * qd[0], 0.0]])


def closed_form_gravity(q):
    """Return the hand-written g(q) (angles from the horizontal, gravity along -y)."""
    c1, c12 = np.cos(q[0]), np.cos(q[0] + q[1])
    return np.array([(m1 * lc1 + m2 * l1) * G * c1 + m2 * lc2 * G * c12, m2 * lc2 * G * c12])


def states(n, count, seed=1):
    """Yield `count` random (q, qd, qdd) triples from a fixed seed."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield (rng.uniform(-np.pi, np.pi, n), rng.uniform(-3, 3, n), rng.uniform(-5, 5, n))


@pytest.fixture(scope='module')
def planar():
    """Return the planar 2R model from config/planar_2r.yaml."""
    return load_model(PLANAR_2R)


def test_planar_2r_is_the_closed_form_arm(planar):
    assert planar.joint_names == ['joint1', 'joint2']
    for q, qd, _ in states(2, 20):
        c2 = np.cos(q[1])
        M = np.array([[A1 + 2 * A2 * c2, A3 + A2 * c2], [A3 + A2 * c2, A3]])
        np.testing.assert_allclose(planar.mass_matrix(q), M, rtol=1e-12)
        np.testing.assert_allclose(planar.coriolis_matrix(q, qd), closed_form_coriolis(q, qd),
                                   rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(planar.gravity_vector(q), closed_form_gravity(q), rtol=1e-13)


def test_symbolic_coriolis_is_the_closed_form():
    derivation = derive(yaml.safe_load(PLANAR_2R.read_text())['/**']['ros__parameters']
                        ['model'])
    q1, q2 = derivation.coordinates
    dq1, dq2 = derivation.velocities
    sym = {str(s): s for s in derivation.constants}
    a2 = sym['m2'] * sym['l1'] * sym['lc2']
    closed = sp.Matrix([[-a2 * sp.sin(q2) * dq2, -a2 * sp.sin(q2) * (dq1 + dq2)],
                        [a2 * sp.sin(q2) * dq1, 0]])
    assert sp.simplify(derivation.C - closed) == sp.zeros(2, 2)
    c = derivation.christoffel
    assert sp.simplify(c[0][0][1] + a2 * sp.sin(q2)) == 0           # c_112 = -a2 s2
    assert sp.simplify(c[0][1][1] + a2 * sp.sin(q2)) == 0           # c_122 = -a2 s2
    assert c[1][0][1] == 0 and c[1][1][1] == 0                      # c_212 = c_222 = 0


def finite_difference_dM(model, q, h=1e-6):
    """Return dM[i, j, k] = dM_ij/dq_k by central differences."""
    return np.stack([(model.mass_matrix(q + h * e) - model.mass_matrix(q - h * e)) / (2 * h)
                     for e in np.eye(model.n)], axis=2)


def test_coriolis_matches_the_numeric_christoffel_routine(planar):
    for q, qd, _ in states(2, 10, seed=2):
        C = planar.coriolis_matrix(q, qd)
        np.testing.assert_allclose(C, coriolis_from_dM(finite_difference_dM(planar, q), qd),
                                   atol=1e-8)
        mdot = finite_difference_dM(planar, q) @ qd
        N = mdot - 2 * C
        np.testing.assert_allclose(N, -N.T, atol=1e-8)


def test_christoffel_index_convention_on_a_coupled_three_coordinate_metric():
    # every entry depends on several coordinates, so no index symmetry can hide a mistake
    entries = {(0, 0): '3 + cos(b) + a*c/5', (0, 1): 'sin(a + c)/2 + b/3',
               (0, 2): 'cos(a)*b/4', (1, 1): '2 + sin(c)**2 + a**2/7',
               (1, 2): 'cos(b - c)/3', (2, 2): '1 + exp(-a**2)*b**2/2'}
    matrix = [entries[min(i, j), max(i, j)] for i in range(3) for j in range(3)]
    model = load_model({'type': 'symbolic', 'coordinates': ['a', 'b', 'c'],
                        'mass_matrix': matrix, 'potential': 'k*(a*b + sin(c))*exp(a/3)',
                        'constants': {'k': 1.5}})
    h = 1e-6
    for q, qd, qdd in states(3, 10, seed=8):
        dM = finite_difference_dM(model, q)
        C = model.coriolis_matrix(q, qd)
        np.testing.assert_allclose(C, coriolis_from_dM(dM, qd), atol=1e-8)
        N = dM @ qd - 2 * C
        np.testing.assert_allclose(N, -N.T, atol=1e-8)
        grad = [(model.potential_energy(q + h * e) - model.potential_energy(q - h * e)) / (2 * h)
                for e in np.eye(3)]
        np.testing.assert_allclose(model.gravity_vector(q), grad, atol=1e-8)
        tau = model.mass_matrix(q) @ qdd + C @ qd + model.gravity_vector(q)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), tau, rtol=1e-12)


def test_compiled_functions_agree_with_naive_lambdify(planar):
    d = planar.derivation
    args = (d.coordinates, d.velocities)
    naive_M = sp.lambdify([d.coordinates], d.numeric(d.M), 'numpy')
    naive_C = sp.lambdify(args, d.numeric(d.C), 'numpy')
    naive_g = sp.lambdify([d.coordinates], d.numeric(d.g), 'numpy')
    naive_U = sp.lambdify([d.coordinates], d.numeric(d.U), 'numpy')
    for q, qd, qdd in states(2, 10, seed=3):
        M, C, g = naive_M(q), naive_C(q, qd), naive_g(q).ravel()
        np.testing.assert_allclose(planar.mass_matrix(q), M, rtol=1e-13)
        np.testing.assert_allclose(planar.coriolis_matrix(q, qd), C, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(planar.gravity_vector(q), g, rtol=1e-13)
        assert planar.potential_energy(q) == pytest.approx(naive_U(q), rel=1e-13)
        np.testing.assert_allclose(planar.bias_forces(q, qd), C @ qd + g, rtol=1e-12)
        tau = M @ qdd + C @ qd + g
        np.testing.assert_allclose(planar.inverse_dynamics(q, qd, qdd), tau, rtol=1e-12)
        np.testing.assert_allclose(planar.forward_dynamics(q, qd, tau), qdd, rtol=1e-10)
        np.testing.assert_allclose(planar.inverse_dynamics(list(q), list(qd), list(qdd)), tau,
                                   rtol=1e-12)


def test_one_coordinate_and_constant_inertia():
    model = load_model({'type': 'symbolic', 'coordinates': ['th'], 'mass_matrix': ['m*l**2'],
                        'potential': '-m*g*l*cos(th)',
                        'constants': {'m': 2.0, 'l': 0.5, 'g': 9.81}})
    assert model.joint_names == ['th']
    C = model.coriolis_matrix(np.array([0.3]), np.array([1.0]))
    assert C.dtype == np.float64 and C.shape == (1, 1) and C[0, 0] == 0.0
    tau = model.inverse_dynamics(np.array([0.3]), np.array([1.0]), np.array([2.0]))
    np.testing.assert_allclose(tau, [2.0 * 0.25 * 2.0 + 2.0 * 9.81 * 0.5 * np.sin(0.3)])


def double_pendulum_spec():
    """Write the double_pendulum URDF as a symbolic model: M(q) and U(q) from its parameters."""
    root = ET.parse(resolve_urdf(PENDULUM_URDF)).getroot()
    links = {link.get('name'): link.find('inertial') for link in root.iter('link')}
    joints = {joint.get('name'): joint for joint in root.iter('joint')}
    for joint in joints.values():
        assert joint.find('axis').get('xyz').split() == ['1', '0', '0']

    def xyz(element):
        return [float(v) for v in element.find('origin').get('xyz').split()]

    constants = {'g': 9.81}
    for i, link in ((1, 'link1'), (2, 'link2')):
        inertial = links[link]
        assert inertial.find('origin').get('rpy').split() == ['0', '0', '0']
        constants[f'm{i}'] = float(inertial.find('mass').get('value'))
        constants[f'I{i}'] = float(inertial.find('inertia').get('ixx'))
        _, constants[f'c{i}y'], constants[f'c{i}z'] = xyz(inertial)
    _, constants['dy'], constants['dz'] = xyz(joints['joint2'])
    # planar arm in the y-z plane, rotations about x; R(q) v = (vy c - vz s, vy s + vz c)
    dot = '(dy*c2y + dz*c2z)*cos(q2) + (dz*c2y - dy*c2z)*sin(q2)'
    m22 = 'I2 + m2*(c2y**2 + c2z**2)'
    m12 = f'{m22} + m2*({dot})'
    m11 = f'I1 + m1*(c1y**2 + c1z**2) + {m22} + m2*(dy**2 + dz**2 + 2*({dot}))'
    z1 = 'c1y*sin(q1) + c1z*cos(q1)'
    z2 = ('(dy + c2y*cos(q2) - c2z*sin(q2))*sin(q1) '
          '+ (dz + c2y*sin(q2) + c2z*cos(q2))*cos(q1)')
    return {'type': 'symbolic', 'coordinates': ['q1', 'q2'], 'joints': ['joint1', 'joint2'],
            'mass_matrix': [m11, m12, m12, m22], 'potential': f'g*(m1*({z1}) + m2*({z2}))',
            'constants': constants}


def test_symbolic_double_pendulum_agrees_with_pinocchio():
    symbolic = load_model(double_pendulum_spec())
    rigid = load_model({'type': 'urdf', 'urdf': PENDULUM_URDF})
    model = pin.buildModelFromUrdf(str(resolve_urdf(PENDULUM_URDF)))
    data = model.createData()
    zero = np.zeros(2)
    for q, qd, qdd in states(2, 20, seed=4):
        M = pin.crba(model, data, q)
        np.testing.assert_allclose(symbolic.mass_matrix(q), np.triu(M) + np.triu(M, 1).T,
                                   rtol=1e-9, atol=1e-12)
        C = pin.computeCoriolisMatrix(model, data, q, qd)
        np.testing.assert_allclose(symbolic.coriolis_matrix(q, qd), C, rtol=1e-9, atol=1e-12)
        g = pin.computeGeneralizedGravity(model, data, q)
        np.testing.assert_allclose(symbolic.gravity_vector(q), g, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(symbolic.inverse_dynamics(q, qd, qdd),
                                   pin.rnea(model, data, q, qd, qdd), rtol=1e-9, atol=1e-12)
        assert (symbolic.potential_energy(q) - symbolic.potential_energy(zero)
                == pytest.approx(rigid.potential_energy(q) - rigid.potential_energy(zero),
                                 abs=1e-12))


def write_params(tmp_path, spec):
    """Write `spec` as a ROS 2 parameter file and return its path."""
    path = tmp_path / 'params.yaml'
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': {'model': spec}}}))
    return path


def test_derive_prints_christoffel_symbols_c_and_g(capsys):
    assert cli(['derive', str(PLANAR_2R)]) == 0
    out = capsys.readouterr().out
    assert 'c_112 = c_121 = -l1*lc2*m2*sin(q2)' in out
    assert 'C(q, dq) =' in out and 'g(q) = dU/dq =' in out
    assert cli(['derive', str(PLANAR_2R.parent / 'panda.yaml')]) == 2


@pytest.mark.parametrize('which', ['planar_2r', 'double_pendulum'])
def test_exported_python_matches_the_model(tmp_path, which):
    params = PLANAR_2R if which == 'planar_2r' else write_params(tmp_path, double_pendulum_spec())
    model = load_model(params)
    target = tmp_path / 'arm_dynamics.py'
    assert cli(['derive', str(params), '--format', 'python', '--output', str(target)]) == 0
    namespace = {}
    exec(compile(target.read_text(), str(target), 'exec'), namespace)
    assert namespace['JOINT_NAMES'] == model.joint_names
    for q, qd, qdd in states(2, 5, seed=5):
        np.testing.assert_allclose(namespace['mass_matrix'](q), model.mass_matrix(q))
        np.testing.assert_allclose(namespace['coriolis_matrix'](q, qd),
                                   model.coriolis_matrix(q, qd))
        np.testing.assert_allclose(namespace['gravity_vector'](q), model.gravity_vector(q))
        np.testing.assert_allclose(namespace['inverse_dynamics'](q, qd, qdd),
                                   model.inverse_dynamics(q, qd, qdd))
        if which == 'planar_2r':
            np.testing.assert_allclose(namespace['coriolis_matrix'](q, qd),
                                       closed_form_coriolis(q, qd), rtol=1e-13, atol=1e-14)


@pytest.mark.skipif(shutil.which('gcc') is None, reason='needs gcc')
@pytest.mark.parametrize('which', ['planar_2r', 'double_pendulum'])
def test_exported_c_compiles_and_matches_the_model(tmp_path, which):
    params = PLANAR_2R if which == 'planar_2r' else write_params(tmp_path, double_pendulum_spec())
    model = load_model(params)
    source, library = tmp_path / 'arm.c', tmp_path / 'libarm.so'
    assert cli(['derive', str(params), '--format', 'c', '--output', str(source),
                '--prefix', 'arm_']) == 0
    subprocess.run(['gcc', '-std=c99', '-O2', '-Wall', '-Werror', '-shared', '-fPIC',
                    '-o', str(library), str(source), '-lm'], check=True)
    lib = ctypes.CDLL(str(library))
    lib.arm_gravity_potential.restype = ctypes.c_double
    pointer = ctypes.POINTER(ctypes.c_double)

    def arrays(*values):
        return [np.ascontiguousarray(v, dtype=float) for v in values]

    def call(name, *args, size):
        buffers = arrays(*args, np.zeros(size))
        getattr(lib, 'arm_' + name)(*[b.ctypes.data_as(pointer) for b in buffers])
        return buffers[-1]

    for q, qd, qdd in states(2, 5, seed=6):
        np.testing.assert_allclose(call('mass_matrix', q, size=4).reshape(2, 2),
                                   model.mass_matrix(q), rtol=1e-14)
        np.testing.assert_allclose(call('coriolis_matrix', q, qd, size=4).reshape(2, 2),
                                   model.coriolis_matrix(q, qd), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(call('gravity_vector', q, size=2), model.gravity_vector(q),
                                   rtol=1e-13)
        np.testing.assert_allclose(call('bias_forces', q, qd, size=2),
                                   model.bias_forces(q, qd), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(call('inverse_dynamics', q, qd, qdd, size=2),
                                   model.inverse_dynamics(q, qd, qdd), rtol=1e-13, atol=1e-15)
        potential = lib.arm_gravity_potential(arrays(q)[0].ctypes.data_as(pointer))
        assert potential == pytest.approx(model.potential_energy(q), rel=1e-13)


def test_user_names_that_look_like_generated_names_do_not_collide():
    # coordinates and constants named like the generated code's own variables (q0, x0, ...)
    model = load_model({'type': 'symbolic', 'coordinates': ['x0', 'q0'],
                        'mass_matrix': ['qd0 + q0**2', '0', '0', 'x'],
                        'potential': 'qd0*x0 + q0', 'constants': {'qd0': 2.0, 'x': 3.0}})
    q, qd = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    # M = diag(2 + q0^2, 3) with q0 the second coordinate: c_112 = c_121 = q0, c_211 = -q0
    np.testing.assert_allclose(model.coriolis_matrix(q, qd), [[2.0, 2.0], [-2.0, 0.0]])
    np.testing.assert_allclose(model.inverse_dynamics(q, np.zeros(2), np.ones(2)),
                               [6.0 + 2.0, 3.0 + 1.0])


def test_generated_variables_keep_indices_and_coordinate_names_apart():
    """The 2R's coordinate q1 is q[0]: generated code says q_0 = q[0] and names q1 beside it."""
    import re

    from continuum_ctrl.params import model_spec
    from continuum_ctrl.params.launch_description import config_path
    from continuum_ctrl.models.symbolic import derive, python_source
    from continuum_ctrl.models.symbolic_export import c_source

    derivation = derive(model_spec(config_path('planar_2r.yaml')))
    c_text, python_text = c_source(derivation), python_source(derivation)
    assert 'const double q_1 = q[1];  /* q2 */' in c_text
    assert not re.search(r'\bq1 = q\[1\]', c_text) and not re.search(r'\bq0\b', c_text)
    for text in (c_text, python_text):
        assert 'q_0 = q1, q_1 = q2' in text
