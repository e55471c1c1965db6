"""The IK's holding bounds (control/holding.py): task-space poses the pressures can hold."""

import numpy as np
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.control.task_numpy import NumpyTaskStep
from continuum_ctrl.control.task_space import TaskSettings, TaskSpace
from continuum_ctrl.identify.calibration_run import bent_tip
from continuum_ctrl.params import file_parameters
from continuum_ctrl.params.launch_description import arm_files
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings

TIP = 'section3_tip'


@pytest.fixture(scope='module')
def arm():
    """The task file's model, its settings (holding range from output.*) and a static map."""
    model, settings = parsed('continuum_task')
    actuation = settings.actuation

    def pressures(q):
        """Gauge pressures (Pa) that hold q still: (K q + g(q)) / area + dead zone."""
        tau = model.passive_forces(q, np.zeros(model.n)) + model.gravity_vector(q)
        return tau / actuation.area_at(q) + actuation.deadzone
    return model, settings, pressures


def inside(p, settings, share):
    """Return whether pressures `p` (Pa) keep `share` of the range free on both sides."""
    a = settings.actuation
    room = share * (a.p_max - a.p_min)
    return bool(np.all(p >= a.p_min + room - 1.0) and np.all(p <= a.p_max - room + 1.0))


def end_poses(task, pressures, settings, trials, seed):
    """
    Tip moves from random held start poses, sampled at jittered tick times (1-6 ms).

    Return per move: whether the end pose keeps the margin, whether it keeps the range, the
    tip's distance to its (clamped) goal [m].
    """
    rng = np.random.default_rng(seed)
    rows = []
    margin = settings.task.holding.margin
    while len(rows) < trials:
        q0 = rng.uniform(0.003, 0.03, 9)
        if not inside(pressures(q0), settings, margin):
            continue                    # a start the pressures hold, with room
        target = task.pose(np.clip(q0 + rng.uniform(-0.02, 0.02, 9), 0.0, 0.04))[:3, 3]
        reference = task.to_target(q0, target)
        end = reference.path.duration + 0.3
        t = 0.0
        while t < end:
            reference.sample(t)
            t += rng.uniform(1e-3, 6e-3)
        q = np.array(reference.sample(end)[0])
        goal = reference.path.sample(end)[0]
        p = pressures(q)
        rows.append((inside(p, settings, margin - 0.02), inside(p, settings, 0.0),
                     float(np.linalg.norm(task.pose(q)[:3, 3] - goal))))
    return np.array(rows)


def test_end_poses_need_pressures_within_range_and_margin(arm):
    """
    Over moves from held poses at jittered tick timings, the end pose is held with room.

    The joint limits alone end 1 move in 4 on a pose outside the pressures' range; with the
    holding bounds none does, and all but a few (a PMA kept at its start length, whose
    gravity moved) keep the margin. The tip still reaches its goal.
    """
    model, settings, pressures = arm
    holding = TaskSpace(model, settings.task)
    plain = TaskSpace(model, TaskSettings(frame=TIP, duration=settings.task.duration))
    ours = end_poses(holding, pressures, settings, 40, seed=3)
    theirs = end_poses(plain, pressures, settings, 40, seed=3)
    print(f'end poses outside the pressure range: {np.sum(~theirs[:, 1].astype(bool))} of '
          f'40 on joint limits alone, {np.sum(~ours[:, 1].astype(bool))} with the holding '
          f'bounds; outside the margin {np.sum(~theirs[:, 0].astype(bool))}, '
          f'{np.sum(~ours[:, 0].astype(bool))}; tip to goal at most {ours[:, 2].max():.2e} m')
    assert np.sum(~theirs[:, 1].astype(bool)) >= 5        # the property is not a given
    assert ours[:, 1].all()
    assert np.sum(~ours[:, 0].astype(bool)) <= 2
    assert np.all(ours[:, 2] <= 1e-6)


def test_the_closest_point_is_the_closest_the_pressures_hold(arm):
    """
    A target above the arm: the clamped pose is within the holding bounds, not at l_max.

    Straight and as long as the pressures hold (the PMAs' upper bound: 90 % of p_max's
    force, less gravity, over the stiffness), short of the stroke's 40 mm.
    """
    model, settings, pressures = arm
    task = TaskSpace(model, settings.task)
    point, distance, q = task.closest(np.array([0.0, 0.0, 0.8]), np.full(9, 0.01))
    assert distance > 0.1
    assert inside(pressures(q), settings, settings.task.holding.margin - 1e-3)
    assert np.max(q) < 0.03
    plain = TaskSpace(model, TaskSettings(frame=TIP)).closest(
        np.array([0.0, 0.0, 0.8]), np.full(9, 0.01))
    assert np.allclose(plain[2], 0.04) and not inside(pressures(plain[2]), settings, 0.0)
    assert np.linalg.norm(point - plain[0]) > 0.02


@pytest.mark.parametrize('start', [0.0, 0.002])
def test_a_tip_move_leaves_an_arm_with_every_pma_at_its_lower_bound(arm, start):
    """
    From the straight arm with every PMA at its lower bound (vented: 0 mm; at 2 mm the start
    is the holding bound, kept) the tip reaches a target 250 mm off the axis, compiled and
    in the NumPy oracle.

    No exact Newton step exists there (the tip falls only as the square of the bend, so
    going out and down needs a PMA shorter than its bound): the active set held every joint
    and the reference never moved. Through the nodes, a state timeout vented the arm and
    every tip target after it ended 250 mm off.
    """
    model, settings, _ = arm
    task = TaskSpace(model, settings.task)
    goal = bent_tip(model, TIP, 0.25, 0.0)
    for oracle in (False, True):
        reference = task.to_target(np.full(9, start), goal)
        if oracle:
            reference._step, reference._path = NumpyTaskStep(model, TIP), reference.path
        end = reference.path.duration + 0.3
        for t in np.arange(0.0, end, 0.002):
            reference.sample(t)
        q = np.array(reference.sample(end)[0])
        assert np.linalg.norm(task.tip(q) - goal) < 1e-6, (oracle, q)


def test_rigid_arms_keep_their_joint_limits():
    """No pressures, no holding range: a rigid arm's task space is as before."""
    assert parsed('panda')[1].task.holding is None


def parsed(arm):
    """Return the model and the controller's settings of a shipped arm's files."""
    tree, spec = file_parameters(arm_files(arm), 'continuum_controller')
    model = load_model(spec)
    return model, ControllerSettings.parse(ControllerNodeSettings.split(tree)[1], model)
