"""
The MuJoCo disc-stack arm against the integral model: statics, gravity, convergence, contact.

ROS-free. The integral model is the reference (models/continuum/integral.py); the disc stack is
an independent model of the same arm (sim/mujoco_arm.py), so agreement is evidence for both.
"""

import subprocess
import sys

import mujoco
import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

from continuum_ctrl.apps.node_pair import node_pair, plant_of, plant_settings
from continuum_ctrl.models import load_model
from continuum_ctrl.params import ConfigError, file_parameters
from continuum_ctrl.params.launch_description import config_path, SIMULATOR
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.mujoco_arm import continuum_mjcf
from continuum_ctrl.sim.mujoco_plant import MujocoArm
from continuum_ctrl.sim.plant import Plant

FILE = 'continuum_3section.yaml'
AREA, STIFFNESS = 1.33e-4, 2200.0
#: the simulator's integral model without its limit stiffening (the disc stack has stops)
_, SPEC = file_parameters(config_path(FILE), SIMULATOR)
SPEC = {k: v for k, v in SPEC.items() if k != 'limit_stiffness'}
BEND = np.array([3e5, 1e5, 1e5, 1e5, 3e5, 1e5, 2e5, 2e5, 2e5])     # Pa, sections bend apart


def integral(gravity=None, damping=None):
    """Return the integral model of the reference arm, with another gravity or damping."""
    spec = dict(SPEC)
    if gravity is not None:
        spec['gravity'] = gravity
    if damping is not None:
        spec['sections'] = dict(spec['sections'], damping=damping)
    return load_model(spec)


def disc_stack(model, discs, timestep=1e-3):
    """Return the MuJoCo arm of `model`'s spec with `discs` discs per section."""
    xml = continuum_mjcf(model.spec, [discs] * model.spec.sections, timestep)
    return MujocoArm(xml, model.spec, timestep)


def rest(arm, tau, duration, dt=1e-3):
    """Hold the PMA forces `tau` (N) for `duration` s; return the final ``(q, qd)``."""
    for _ in range(round(duration / dt)):
        q, qd = arm.step(tau, dt)
    return q, qd


def equilibrium(model, tau):
    """Return the integral model's static pose under the PMA forces `tau` (N)."""
    zero = np.zeros(model.n)
    return scipy.optimize.fsolve(
        lambda q: model.passive_forces(q, zero) + model.gravity_vector(q) - tau,
        tau / STIFFNESS, xtol=1e-12)


@pytest.mark.parametrize('pressure', [np.full(9, 3e5), BEND], ids=['extend', 'bend'])
def test_statics_each_pma_stretches_by_its_force_over_its_stiffness(pressure):
    """Zero gravity, constant pressures: every PMA ends at area (p - deadzone) / k (1 %)."""
    deadzone = 2e4
    plant = plant_of(FILE, {'engine': 'mujoco', 'model.gravity': [0.0, 0.0, 0.0],
                            'output.deadzone': [deadzone], 'command_timeout': 10.0,
                            'mismatch.damping_scale': 30.0})
    plant.command(pressure, 0.0)
    for t in np.arange(0.0, 3.0, 0.01):            # within the plant's largest catch-up
        plant.advance(t)
    assert plant.overruns == 0
    expected = AREA * (pressure - deadzone) / STIFFNESS
    assert np.all(np.abs(plant.q - expected) <= 0.01 * expected)
    assert np.max(np.abs(plant.qd)) < 1e-4


@pytest.mark.parametrize('discs', [1, 4])
def test_an_upright_straight_arm_sags_exactly_as_the_integral_model(discs):
    """
    Equal pressures, gravity along the arm: each PMA carries the weight above it.

    The load is linear in the arc length, which the trapezoidal lumping integrates exactly,
    so the sag agrees with the integral model at any number of discs (0.1 % of the sag).
    """
    model = integral(damping=[300.0] * 3)
    tau = np.full(9, AREA * 2e5)
    expected = equilibrium(model, tau)
    q, _ = rest(disc_stack(model, discs), tau, 2.0)
    sag = expected - tau / STIFFNESS
    assert np.all(sag < -5e-5)                                  # it does sag (0.07-0.37 mm)
    assert np.max(np.abs(q - expected)) <= 1e-3 * np.max(np.abs(sag))


def test_a_hanging_bent_arm_sags_as_the_integral_model_within_the_lumping_bound():
    """
    A hanging arm bent by unequal pressures sags by about 3 mm of PMA length.

    Two errors part the disc stack from the integral model: the trapezoidal lumping of the
    mass, O(1/N^2) (its share of the sag is at most 1/(2 N^2)), and the constant-curvature
    shape the integral model imposes where gravity bends each section unevenly (the disc
    stack's limit: about 2.6 % of the sag here). Tolerance: ``sag (0.04 + 0.5 / N^2)``.
    """
    model = integral(gravity=[0.0, 0.0, 9.81], damping=[300.0] * 3)
    tau = AREA * BEND
    expected = equilibrium(model, tau)
    sag = np.max(np.abs(expected - tau / STIFFNESS))
    assert sag > 2e-3
    errors = []
    for discs in (1, 2, 4):
        arm = disc_stack(model, discs)
        arm.reset(expected)
        q, qd = rest(arm, tau, 3.0)
        assert np.max(np.abs(qd)) < 1e-4
        errors.append(np.max(np.abs(q - expected)))
        assert errors[-1] <= sag * (0.04 + 0.5 / discs ** 2)
    assert errors[0] > errors[1] > errors[2]


def _lengths(arm, x):
    """Set MuJoCo's joint positions to `x`; return the PMA length changes."""
    m, d = arm.model, arm.data
    d.qpos[:] = x
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    mujoco.mj_tendon(m, d)
    return arm.state()[0].copy()


def constant_curvature_mass_matrix(arm, q):
    """
    Return the disc stack's mass matrix in PMA coordinates with its segments held equal.

    Equal segments are the constant-curvature arc (to first order at a straight pose): the
    joint velocities are ``T xd`` with one (x, y, slide) rate per section, and the PMA rates
    ``G xd``; the reduced inertia in PMA rates is ``G^-T T^T M T G^-1``.
    """
    arm.reset(q)
    m, d = arm.model, arm.data
    T = np.zeros((m.nv, arm.n))
    for i, dofs in enumerate(arm._section_dofs):
        for c in range(3):
            T[dofs[:, c], 3 * i + c] = 1.0
    x0 = d.qpos.copy()
    G = np.array([(_lengths(arm, x0 + 1e-7 * T[:, c]) - _lengths(arm, x0 - 1e-7 * T[:, c]))
                  / 2e-7 for c in range(arm.n)]).T
    _lengths(arm, x0)
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    inverse = np.linalg.inv(G)
    return inverse.T @ T.T @ M @ T @ inverse


def test_the_disc_stack_held_to_arcs_converges_to_the_integral_models_inertia():
    """
    Held to equal segments, the disc stack's inertia tends to the integral model's.

    Straight: as 1/N^2 (trapezoidal rule; 13 % at N = 1). Extended by 10 mm: the slide puts
    a segment's extension beyond its pivot, so the error falls more slowly, about as 1/N.
    """
    model = integral()
    for q, check in ((np.zeros(9), 'trapezoid'), (np.full(9, 0.01), 'extended')):
        reference = model.mass_matrix(q)
        errors = [np.linalg.norm(constant_curvature_mass_matrix(disc_stack(model, discs), q)
                                 - reference) / np.linalg.norm(reference)
                  for discs in (1, 2, 4, 8)]
        assert errors[0] > errors[1] > errors[2] > errors[3]
        if check == 'trapezoid':
            assert np.all(np.abs(np.array(errors[:-1]) / errors[1:] - 4.0) < 0.2)
        else:
            assert errors[3] < 0.01


def test_the_first_bending_mode_approaches_the_integral_models_from_below():
    """
    Free, the disc stack's first bending frequency rises with N towards the integral model's.

    The integral model is the arm held to constant-curvature arcs, so by Rayleigh's principle
    its frequencies are upper bounds; the disc stack's first mode converges to 2.2 % below it
    (zero gravity, straight, springs relaxed, so no geometric stiffness).
    """
    model = integral(gravity=[0.0, 0.0, 0.0])
    q = np.zeros(9)
    reference = np.sqrt(scipy.linalg.eigh(STIFFNESS * np.eye(9), model.mass_matrix(q),
                                          eigvals_only=True)[0])
    first = []
    for discs in (1, 2, 4, 8):
        arm = disc_stack(model, discs)
        arm.reset(q)
        J = _piece_jacobian(arm, arm.data.qpos.copy())
        mujoco.mj_forward(arm.model, arm.data)
        M = np.zeros((arm.model.nv, arm.model.nv))
        mujoco.mj_fullM(arm.model, arm.data, M)
        K = J.T @ np.diag(arm.model.tendon_stiffness) @ J      # N k per piece
        first.append(np.sqrt(scipy.linalg.eigh(K, M, eigvals_only=True)[0]))
    first = np.array(first)
    assert np.all(np.diff(first) > 0.0) and np.all(first < reference)
    assert first[2] > 0.97 * reference


def _slowest_modes(A, dt=None):
    """Return the eigenvalues of the state matrix `A` (or of its `dt` step), slowest first."""
    values = np.linalg.eigvals(A).astype(complex)
    if dt is not None:
        values = np.log(values) / dt
    return values[np.argsort(-values.real)]


def test_the_bent_arm_rings_for_seconds_on_both_engines_alike():
    """
    Bent by constant pressures, the arm settles over some 30 s on either engine.

    Its slowest mode is the whole arm swinging on section 1 (0.74 Hz), damped only by the
    PMAs' Kelvin-Voigt damping, which at that frequency is a damping ratio of 0.03: time
    constants of 6.7 s (integral model) and 7.2 s (4 discs). The disc stack's slowest mode
    is the integral model's within 10 % in frequency and decay, so the slow settling is the
    arm's physics, not the universal joints' (which the integral model does not have). Their
    twist, ``a b / 2`` per segment for hinge angles a and b, is static and small: 5.2 mrad
    per disc in section 2, which bends diagonally to the hinges.
    """
    model = integral(gravity=[0.0, 0.0, 0.0])
    tau = AREA * BEND
    q = equilibrium(model, tau)
    zero = np.zeros(9)
    K = np.column_stack([
        (model.passive_forces(q + e, zero) - model.passive_forces(q - e, zero)) / 2e-7
        for e in 1e-7 * np.eye(9)])
    M, D = model.mass_matrix(q), model.damping_matrix(q)
    reference = _slowest_modes(np.block([[np.zeros((9, 9)), np.eye(9)],
                                         [-np.linalg.solve(M, K), -np.linalg.solve(M, D)]]))[0]
    arm = disc_stack(model, 4, timestep=5e-4)
    arm.reset(q)
    rest(arm, tau, 40.0, dt=2e-3)
    m, d = arm.model, arm.data
    A = np.zeros((2 * m.nv, 2 * m.nv))
    mujoco.mjd_transitionFD(m, d, 1e-7, True, A, None, None, None)
    slowest = _slowest_modes(A, m.opt.timestep)[0]
    assert -1.0 / reference.real > 5.0 and abs(reference.imag) == pytest.approx(4.7, rel=0.05)
    assert slowest.real == pytest.approx(reference.real, rel=0.1)
    assert abs(slowest.imag) == pytest.approx(abs(reference.imag), rel=0.1)
    relative = np.zeros(4)
    twist = []
    for body in range(2, m.nbody):                 # each disc against the one it hangs on
        mujoco.mju_negQuat(relative, d.xquat[m.body_parentid[body]])
        mujoco.mju_mulQuat(relative, relative, d.xquat[body])
        twist.append(2.0 * np.arctan2(relative[3], relative[0]))
    assert np.max(np.abs(twist)) < 6e-3


def _piece_jacobian(arm, x0):
    """Return d(piece tendon lengths)/d(joint positions) at `x0`."""
    m, d = arm.model, arm.data

    def pieces(x):
        _lengths(arm, x)
        return d.ten_length.copy()
    J = np.array([(pieces(x0 + 1e-7 * e) - pieces(x0 - 1e-7 * e)) / 2e-7
                  for e in np.eye(m.nv)]).T
    pieces(x0)
    return J


def test_an_arm_driven_into_a_wall_stays_finite_and_its_pressures_in_range():
    """
    The controller's own reference sweeps the tip around a circle of about 0.19 m radius; a
    wall at x = 0.12 m stops it. The closed loop (as the two nodes run it) stays finite, the
    commands stay in [p_min, p_max], the wall pushes back and the disc capsules do not
    pass through it.
    """
    runtime, plant = node_pair(FILE, simulator={
        'engine': 'mujoco', 'mujoco.obstacles.boxes': [0.17, 0.0, 0.6, 0.05, 0.3, 0.3]})
    arm = plant.engine
    tip = mujoco.mj_name2id(arm.model, mujoco.mjtObj.mjOBJ_BODY, 's3d4')
    advance, forces, reach = plant.advance, [], []

    def watched(t, start=None):
        steps = advance(t, start)
        forces.append(arm.contact_force())
        reach.append(arm.data.xpos[tip, 0] + arm.spec.radius[2])
        return steps
    plant.advance = watched
    log = simulate_nodes(runtime, plant, 4.0)
    assert np.all(np.isfinite(log.q)) and np.all(log.active[log.t > 0.1])
    assert np.all((log.command >= 0.0) & (log.command <= 5e5))
    assert max(forces) > 0.5 and np.mean(np.array(forces) > 0.0) > 0.1
    assert max(reach) < 0.12 + 2e-3              # the contact's soft penetration only


def test_without_obstacles_nothing_touches():
    """No obstacles: contacts are off, the contact force is 0."""
    plant = plant_of(FILE, {'engine': 'mujoco'})
    assert plant.engine.contact_force() == 0.0 and plant.engine.model.opt.disableflags & (
        mujoco.mjtDisableBit.mjDSBL_CONTACT)


def test_the_mujoco_plant_rests_until_commanded_vents_when_stale_and_resets():
    """The plant's rules hold with the MuJoCo engine as with the built-in one."""
    plant = plant_of(FILE, {'engine': 'mujoco', 'initial.position': [0.01]})
    assert np.allclose(plant.q, 0.01, atol=1e-12) and np.all(plant.qd == 0.0)
    plant.advance(0.0)
    plant.advance(0.05)
    assert plant.steps == 0                               # waits for the first command
    for t in np.arange(0.05, 0.3, 0.01):
        plant.command(np.full(9, 3e5), t)
        plant.advance(t)
    pushed = plant.q.copy()
    assert np.all(pushed > 0.012)
    for t in np.arange(0.3, 0.6, 0.01):                   # stale after 0.1 s: vented
        plant.advance(t)
    assert np.all(plant.q < pushed)
    plant.reset()
    assert np.allclose(plant.q, 0.01, atol=1e-12) and plant.t is None


@pytest.mark.parametrize('overrides, key', [
    ({'engine': 'bullet'}, 'engine'),
    ({'engine': 'mujoco', 'mujoco.timestep': 0.0003}, 'mujoco.timestep'),
    ({'engine': 'mujoco', 'mujoco.obstacles.boxes': [0.1, 0.0, 0.5, 0.1]},
     'mujoco.obstacles.boxes'),
    ({'engine': 'mujoco', 'mujoco.obstacles.spheres': [0.1, 0.0, 0.5, -0.1]},
     'mujoco.obstacles.spheres'),
    ({'engine': 'mujoco', 'mujoco.discs': 0}, 'mujoco.discs'),
    ({'mujoco.dicss': 3}, 'mujoco.dicss'),
])
def test_bad_engine_settings_name_their_key(overrides, key):
    with pytest.raises(ConfigError, match=f"'{key}'"):
        plant_of(FILE, overrides)


def test_mujoco_needs_a_continuum_or_urdf_arm():
    with pytest.raises(ConfigError, match="'engine'"):
        plant_of('planar_2r.yaml', {'engine': 'mujoco'})
    with pytest.raises(ConfigError, match="'mujoco.friction'"):
        plant_of(FILE, {'engine': 'mujoco', 'mujoco.friction': [0.1]})


def test_the_builtin_engine_runs_without_mujoco():
    """The plant and the simulator node import mujoco only for the mujoco engine."""
    code = ('import sys; sys.modules["mujoco"] = None; sys.path.insert(0, "test")\n'
            'from continuum_ctrl.apps.node_pair import plant_of\n'
            'import continuum_ctrl.ros.simulator_node\n'
            'plant = plant_of("continuum_3section.yaml")\n'
            'plant.command([1e5] * 9, 0.0); plant.advance(0.0); plant.advance(0.01)\n'
            'assert plant.steps == 5\n')
    subprocess.run([sys.executable, '-c', code], check=True, timeout=120)


def test_a_parameter_change_rebuilds_the_arm_at_its_pose():
    """New disc count: a new MuJoCo model at the same PMA lengths; same settings: kept."""
    settings = plant_settings(FILE, {'engine': 'mujoco'})
    plant = Plant(settings)
    plant.command(np.full(9, 2e5), 0.0)
    for t in np.arange(0.0, 0.2, 0.01):
        plant.advance(t)
    engine, q = plant.engine, plant.q.copy()
    plant.update(plant_settings(FILE, {'engine': 'mujoco'}))
    assert plant.engine is engine
    plant.update(plant_settings(FILE, {'engine': 'mujoco', 'mujoco.discs': 2}))
    assert plant.engine is not engine and plant.engine.discs == [2, 2, 2]
    assert np.allclose(plant.q, q, atol=1e-10) and np.all(plant.qd == 0.0)


def test_simulate_runs_on_the_mujoco_arm(tmp_path, capsys):
    """
    `continuum-ctrl simulate --engine mujoco`: named in the printout, and with the file's
    gains, valves and compensation the disc stack tracks (RMS in mm per section).
    """
    from continuum_ctrl.apps import simulate
    status = simulate.main(['--arm', 'continuum', '--engine', 'mujoco', '--duration', '2',
                            '--out', str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0 and 'engine mujoco' in out
    rows = [line.split() for line in out.splitlines() if line.startswith('section')]
    rms = [float(row[1]) for row in rows]
    assert len(rms) == 3 and max(rms) < 0.5
    # the command's figures beside the errors (their bound is the quiet runs' of
    # command_bounds.py, once the file's gains are quiet on this arm) and the tip's error
    assert all(row[6] == 'MPa/s' and float(row[5]) > 0.0 and 0.0 <= float(row[7]) <= 1.0
               for row in rows), out
    assert 'tip (section3_tip): RMS error ' in out


def test_the_demo_sets_the_simulators_engine_over_the_file(tmp_path):
    """`demo --engine mujoco`: the simulator reads engine mujoco, the controller is unchanged."""
    from continuum_ctrl.params.launch_description import simulation
    from continuum_ctrl.apps.demo import with_engine
    from continuum_ctrl.apps.node_pair import check_parameter_file
    nodes = simulation(config_path(FILE))
    assert with_engine(nodes, None, tmp_path) == nodes
    changed = with_engine(nodes, 'mujoco', tmp_path)
    assert changed[0] == nodes[0]
    assert file_parameters(list(changed[1].parameters), SIMULATOR)[0]['engine'] == 'mujoco'
    check_parameter_file(list(changed[1].parameters), [SIMULATOR])


def test_a_urdf_arm_in_mujoco_has_pinocchios_dynamics_plus_its_armature():
    """
    The Panda loaded into MuJoCo (no meshes) against the Pinocchio model of the same URDF:
    at rest under random efforts the accelerations agree; armature adds to M's diagonal.
    The MJCF holds six significant digits (MuJoCo's writer), hence 1e-5.
    """
    armature = np.linspace(0.01, 0.07, 7)
    plant = plant_of('panda.yaml', {'engine': 'mujoco', 'mujoco.armature': armature.tolist()})
    bare = plant_of('panda.yaml', {'engine': 'mujoco'})
    model, rng = plant.model, np.random.default_rng(3)
    low, high = model.joint_limits()
    for _ in range(5):
        # inside the joint limits, which MuJoCo enforces and Pinocchio's model does not know
        q = rng.uniform(0.9 * low + 0.1 * high, 0.1 * low + 0.9 * high)
        tau = rng.uniform(-5.0, 5.0, 7)
        for engine, extra in ((bare.engine, np.zeros(7)), (plant.engine, armature)):
            engine.reset(q)
            m, d = engine.model, engine.data
            d.ctrl[:] = tau
            mujoco.mj_forward(m, d)
            M = np.zeros((m.nv, m.nv))
            mujoco.mj_fullM(m, d, M)
            reference = model.mass_matrix(q) + np.diag(extra)
            assert np.allclose(M, reference, rtol=1e-5, atol=1e-5 * np.max(reference))
            expected = np.linalg.solve(reference, tau - model.gravity_vector(q))
            assert np.allclose(d.qacc, expected, rtol=1e-4, atol=1e-4 * np.max(expected))


def test_the_panda_in_mujoco_with_friction_and_armature_tracks_worse_but_stays_bounded():
    """
    Computed torque on Pinocchio's model against MuJoCo's Panda: with the URDF's dynamics
    the wrist tracks to a few mrad; dry friction (0.2 N m) and armature (0.01 kg m^2) that
    the law does not know cost most at the light wrist, whose inertia-weighted feedback
    (M Kp) is weakest (measured: 0.21 rad RMS at joint 7, below 0.05 rad elsewhere).
    """
    errors = []
    for extra in ({}, {'mujoco.armature': [0.01], 'mujoco.friction': [0.2]}):
        runtime, plant = node_pair('panda.yaml', simulator={'engine': 'mujoco', **extra})
        log = simulate_nodes(runtime, plant, 6.0)
        late = log.active & (log.t > 2.0)
        assert np.all(np.isfinite(log.q))
        errors.append(np.sqrt(np.mean((log.q - log.q_des)[late] ** 2, axis=0)))
    assert np.all(errors[0] < 5e-3)
    assert np.all(errors[1] < 0.4) and np.all(errors[1] > errors[0])


#: a user's MJCF for the planar 2R arm's joint names: joint1 a hinge, joint2 a fixed tendon
USER_MJCF = """<mujoco>
  <option gravity="0 0 0"/>
  <worldbody><body><joint name="joint1" type="hinge" axis="0 0 1" damping="0.1"/>
    <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/>
    <body pos="0.5 0 0"><joint name="hidden" type="hinge" axis="0 0 1" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/></body></body>
  </worldbody>
  <tendon><fixed name="joint2"><joint joint="hidden" coef="1"/></fixed></tendon>
  <actuator><motor joint="joint1"/><motor tendon="joint2"/></actuator>
</mujoco>"""


def test_a_users_mjcf_runs_with_its_joints_and_tendons_named_as_the_joints(tmp_path):
    path = tmp_path / 'arm.xml'
    path.write_text(USER_MJCF)
    plant = plant_of('planar_2r.yaml', {'engine': 'mujoco', 'mujoco.model': str(path),
                                        'initial.position': [0.3, 0.0]})
    assert np.allclose(plant.q, [0.3, 0.0])
    for t in np.arange(0.0, 0.3, 0.01):
        plant.command([0.0, 0.5], t)             # joints order: joint1, joint2 (the tendon)
        plant.advance(t)
    assert plant.q[1] > 0.05 and plant.qd[1] > 0.0
    # the reaction on the first link turns it the other way
    assert plant.q[0] < 0.3
    wrong = tmp_path / 'wrong.xml'
    wrong.write_text(USER_MJCF.replace('joint2', 'elbow'))
    with pytest.raises(ConfigError, match="'mujoco.model'.*no joint or tendon named 'joint2'"):
        plant_of('planar_2r.yaml', {'engine': 'mujoco', 'mujoco.model': str(wrong)})
    with pytest.raises(ConfigError, match="'mujoco.model'.*cannot read"):
        plant_of('planar_2r.yaml', {'engine': 'mujoco', 'mujoco.model': str(tmp_path)})
    with pytest.raises(ConfigError, match="'mujoco.discs'.*does not apply"):
        plant_of('planar_2r.yaml', {'engine': 'mujoco', 'mujoco.model': str(path),
                                    'mujoco.discs': 3})
