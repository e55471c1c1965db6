"""
The threading rule of models/base.py: one thread per model object, `for_thread` for another.

For each model kind, two threads evaluate the same arm at once, the loop's calls on the model
and the executor's and planner's calls (frames, IK, backbone) on `model.for_thread()`, while
the interpreter switches threads as often as it can; every result must equal, to the last
bit, the one a single thread computed. (Both threads on the one model object instead cross
results of the continuum and Pinocchio models within a few rounds.)
"""

import numpy as np
import pytest

from continuum_ctrl import load_model
from continuum_ctrl.params import config_path
from support.threads import run_interleaved

#: kind -> (parameter file, node, a frame or None)
KINDS = {
    'continuum_cog': ('continuum_3section.yaml', 'continuum_controller', 'section3_tip'),
    'continuum_integral': ('continuum_3section.yaml', 'continuum_simulator', 'section2_tip'),
    'urdf': ('panda.yaml', 'continuum_controller', 'panda_hand'),
    'symbolic': ('planar_2r.yaml', 'continuum_controller', None),
}
ROUNDS = 150


def calls(model, frame):
    """Return named evaluations, each a function of (q, qd, qdd): those the threads make."""
    out = {
        'dynamics': lambda q, qd, qdd: model.dynamics(q, qd),
        'inverse': lambda q, qd, qdd: model.inverse_dynamics(q, qd, qdd),
        'passive_at': lambda q, qd, qdd: model.inverse_dynamics_passive_at(
            q, qd, qdd, 0.5 * q, 0.5 * qd),
        'gravity': lambda q, qd, qdd: model.gravity_vector(q),
        'forward': lambda q, qd, qdd: model.forward_dynamics(q, qd, qdd),
    }
    if frame is not None:
        out['frame'] = lambda q, qd, qdd: model.frame_kinematics(q, frame)
        out['pose'] = lambda q, qd, qdd: model.frame_pose(q, frame)
        out['jdot'] = lambda q, qd, qdd: model.frame_jacobian_derivative(q, qd, frame)
    if hasattr(model, 'backbone'):
        out['backbone'] = lambda q, qd, qdd: model.backbone(q, 5)
    return out


def states(model, count, seed):
    """Return `count` states (q within the limits, qd, qdd)."""
    rng = np.random.default_rng(seed)
    low, high = model.joint_limits()
    low, high = np.where(np.isfinite(low), low, -np.pi), np.where(np.isfinite(high), high, np.pi)
    return [(rng.uniform(low, high), rng.normal(size=model.n), rng.normal(size=model.n))
            for _ in range(count)]


def flat(result):
    """Return a call's result as one float array."""
    parts = result if isinstance(result, tuple) else (result,)
    return np.concatenate([np.ravel(np.asarray(p, dtype=float)) for p in parts])


def run_together(models, frame):
    """Evaluate every call at every state on each model, each on a thread; return mismatches."""
    cases = states(models[0], 4, 3)
    expected = {name: [flat(call(*s)) for s in cases]
                for name, call in calls(models[0], frame).items()}
    wrong = []

    def hammer(model):
        evaluations = calls(model, frame)
        for _ in range(ROUNDS):
            for name, call in evaluations.items():
                for k, state in enumerate(cases):
                    try:
                        if not np.array_equal(flat(call(*state)), expected[name][k]):
                            wrong.append(name)
                    except (ArithmeticError, ValueError) as exc:   # a workspace overwritten
                        wrong.append(f'{name}: {exc}')

    run_interleaved(hammer, models)
    return sorted(set(wrong))


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_two_threads_with_their_own_data_agree_with_one(kind):
    path, node, frame = KINDS[kind]
    model = load_model(str(config_path(path)), node)
    copy = model.for_thread()
    assert type(copy) is type(model) and copy.joint_names == model.joint_names
    if hasattr(model, 'memory'):
        assert copy.memory is not model.memory
    if hasattr(model, 'data') and kind == 'urdf':
        assert copy.data is not model.data
    assert run_together([model, copy], frame) == []
