"""
Parameters of real node processes: runtime sets through the parameter services are refused
whole when any value is bad (reason naming the key) and take effect at the next tick when
good; every documented start-up error is one line naming the key and exit status 2.
"""

from pathlib import Path

import numpy as np
import pytest
import yaml
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import GetParameters, SetParameters, SetParametersAtomically
from rclpy.parameter import Parameter

from continuum_ctrl.params import read_yaml
from continuum_ctrl.params.launch_description import (config_path, CONTROLLER, controller,
                                                      simulation)
from support.forked import Forker
from support.ros_nodes import merge, params_file, running
from support.safety_tools import joint_state, state_publisher, Timeline, wall

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

STATE = [0.2, -0.1]


def call(rec, service_type, name, request, timeout=30.0):
    """Call a service of the controller from the recorder's node; return the response."""
    client = rec.node.create_client(service_type, f'/{CONTROLLER}/{name}')
    assert client.wait_for_service(timeout_sec=timeout)
    future = client.call_async(request)
    assert rec.wait(future.done, timeout)
    return future.result()


def parameters(**values):
    """Return rcl_interfaces Parameter messages for dotted names given with '__' for '.'."""
    return [Parameter(name.replace('__', '.'), value=value).to_parameter_msg()
            for name, value in values.items()]


def get(rec, name):
    """Return a parameter's value (list or scalar) from the controller."""
    response = call(rec, GetParameters, 'get_parameters', GetParameters.Request(names=[name]))
    return Parameter.from_parameter_msg(ParameterMsg(name=name, value=response.values[0])).value


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    """The 2R controller alone, holding [0.3, 0.5], fed a fixed state at 200 Hz."""
    tmp_path = tmp_path_factory.mktemp('parameters')
    path = params_file(tmp_path, 'planar_2r.yaml', continuum_controller={
        'state_timeout': 1.0, 'reference': {'type': 'hold', 'position': [0.3, 0.5],
                                            'blend_time': 0.0}})
    with running(tmp_path, path, with_simulator=False) as (rec, procs):
        timeline, pub = Timeline(rec), state_publisher(rec)
        msg = joint_state(['joint1', 'joint2'], STATE, [0.0, 0.0])
        rec.node.create_timer(0.005, lambda: pub.publish(msg))
        assert rec.wait(lambda: timeline.rows and timeline.rows[-1][1] == 'active', 60.0, procs)
        yield rec, procs, timeline


def effort_now(rec, timeline):
    """Return the effort of a tick that starts after now."""
    now = wall()
    assert rec.wait(lambda: timeline.rows[-1][0] > now, 10.0)
    return timeline.rows[-1][4]


def test_a_set_with_one_bad_value_is_refused_whole(node):
    rec, procs, timeline = node
    before = effort_now(rec, timeline)
    request = SetParametersAtomically.Request(parameters=parameters(
        gains__kp=[50.0, 50.0], gains__kd=[-1.0, 1.0]))
    result = call(rec, SetParametersAtomically, 'set_parameters_atomically', request).result
    assert not result.successful and 'gains.kd' in result.reason
    assert list(get(rec, 'gains.kp')) == [100.0, 100.0]
    assert np.array_equal(effort_now(rec, timeline), before)


@pytest.mark.parametrize('name, value, named', [
    ('limits.effort', [0.0, 1.0], 'limits.effort'),
    ('limits.effort_rate', [-5.0], 'limits.effort_rate'),
    ('gains.kp', [1.0, 2.0, 3.0], 'gains.kp'),
    ('gains.kp', [1.0, 2.0, 2.0, 1.0], 'gains.kp'),             # symmetric, not definite
    ('gains.kd', [1.0, 2.0, 0.0, 1.0], 'gains.kd'),             # not symmetric
    ('rate_hz', 20000.0, 'rate_hz'),
    ('resume_count', 0, 'resume_count'),
    ('safe_mode', 'brake', 'safe_mode'),
    ('reference.position', [0.3, 0.5, 0.1], 'reference.position'),
    ('model.type', 'urdf', 'model.type'),                       # read-only
    ('gains.kx', [1.0, 1.0], 'gains.kx'),                       # not declared
])
def test_each_bad_runtime_value_is_refused_and_changes_nothing(node, name, value, named):
    rec, procs, timeline = node
    before = effort_now(rec, timeline)
    request = SetParameters.Request(parameters=parameters(**{name.replace('.', '__'): value}))
    result = call(rec, SetParameters, 'set_parameters', request).results[0]
    assert not result.successful
    assert named in result.reason or 'read-only' in result.reason or (
        'undeclared' in result.reason)                        # rclpy's own refusals
    assert np.array_equal(effort_now(rec, timeline), before)
    assert procs[0].poll() is None


def test_a_good_limit_takes_effect_at_the_next_tick(node):
    rec, procs, timeline = node
    limit = np.array([1.0, 0.5])
    assert np.all(np.abs(effort_now(rec, timeline)) > limit)    # gravity alone is larger
    request = SetParameters.Request(parameters=parameters(limits__effort=list(limit)))
    result = call(rec, SetParameters, 'set_parameters', request).results[0]
    answered = wall()
    assert result.successful, result.reason
    rec.run(0.3)
    after = [row for row in timeline.rows if row[0] > answered]
    assert len(after) > 50
    assert all(np.allclose(np.abs(row[4]), limit, rtol=1e-12) for row in after)


def bad_file(tmp_path, base, node, change=None, drop=None):
    """Write `base` with `change` merged into `node`'s section or key path `drop` removed."""
    data = read_yaml(config_path(base))
    section = data[node]['ros__parameters']
    if change:
        data[node]['ros__parameters'] = merge(section, change)
    if drop:
        *parents, leaf = drop.split('.')
        for part in parents:
            section = section[part]
        del section[leaf]
    path = Path(tmp_path) / f'bad_{len(list(Path(tmp_path).glob("bad_*")))}.yaml'
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


C, S, A = 'continuum_controller', 'continuum_simulator', '/**'
PRESSURE = {'output': {'mode': 'pressure', 'area': [1e-4], 'p_min': 0.0, 'p_max': 3e5}}
#: (key named, base file, section, change, dropped key, node index: 0 controller, 1 simulator)
STARTUP_ERRORS = [
    ('gains.kx', 'planar_2r.yaml', C, {'gains': {'kx': [1.0, 1.0]}}, None, 0),
    ('colour', 'planar_2r.yaml', C, {'colour': 'red'}, None, 0),
    ('gains.kp', 'planar_2r.yaml', C, None, 'gains.kp', 0),
    ('gains.kp', 'planar_2r.yaml', C, {'gains': {'kp': [1.0, 2.0, 3.0]}}, None, 0),
    ('gains.kp', 'planar_2r.yaml', C, {'gains': {'kp': [1.0, 2.0, 2.0, 1.0]}}, None, 0),
    ('gains.kd', 'planar_2r.yaml', C, {'gains': {'kd': 'big'}}, None, 0),
    ('rate_hz', 'planar_2r.yaml', C, {'rate_hz': 0.0}, None, 0),
    ('state_timeout', 'planar_2r.yaml', C, {'state_timeout': 50.0}, None, 0),
    ('resume_count', 'planar_2r.yaml', C, {'resume_count': 2.5}, None, 0),
    ('stamp_tolerance', 'planar_2r.yaml', C, {'stamp_tolerance': -1.0}, None, 0),
    ('safe_mode', 'planar_2r.yaml', C, {'safe_mode': 'brake'}, None, 0),
    ('safe_mode', 'planar_2r.yaml', C, {'safe_mode': 'hold', **PRESSURE}, None, 0),
    ('output.p_max', 'planar_2r.yaml', A, merge(PRESSURE, {'output': {'p_min': 4e5}}), None,
     0),
    ('output.area', 'planar_2r.yaml', A, merge(PRESSURE, {'output': {'area': [-1.0]}}), None,
     0),
    ('joints', 'planar_2r.yaml', C, {'joints': ['joint1', 'joint3']}, None, 0),
    ('limits.effort_rate', 'planar_2r.yaml', C, {'limits': {'effort_rate': [0.0, 1.0]}},
     None, 0),
    ('reference.type', 'planar_2r.yaml', C, {'reference': {'type': 'spline'}}, None, 0),
    ('reference.position', 'panda.yaml', C, {'reference': {'type': 'hold',
                                                           'position': [5.0]}}, None, 0),
    ('model.type', 'planar_2r.yaml', A, {'model': {'type': 'spline_arm'}}, None, 0),
    ('model.potential', 'planar_2r.yaml', A, {'model': {
        'potential': "__import__('os').system('touch PWNED')"}}, None, 0),
    ('model.mass_matrix', 'planar_2r.yaml', A, None, 'model.constants.m1', 0),  # uses m1
    ('integrator', 'planar_2r.yaml', S, {'integrator': 'leapfrog'}, None, 1),
    ('mismatch.mass_scale', 'planar_2r.yaml', S, {'mismatch': {'mass_scale': 2.0}}, None, 1),
    ('command_timeout', 'planar_2r.yaml', S, {'command_timeout': 0.0}, None, 1),
]


def test_each_startup_error_is_one_line_naming_the_key_and_exit_2(tmp_path):
    """Every bad file makes the node exit 2 with one error line naming the key, no traceback."""
    jobs = []
    for key, base, section, change, drop, index in STARTUP_ERRORS:
        path = bad_file(tmp_path, base, section, change, drop)
        jobs.append((key, simulation(path)[1] if index else controller(path)[0]))

    with Forker() as forker:        # a node that finds no error runs until SIGALRM
        done = [forker.run(job[1].command(), tmp_path, timeout=120)
                for job in jobs]
    failures = []
    for (key, _), result in zip(jobs, done):
        lines = [line for line in result.stderr.splitlines() if 'error' in line.lower()]
        if (result.returncode != 2 or len(lines) != 1 or f"parameter '{key}'" not in lines[0]
                or 'Traceback' in result.stderr):
            failures.append((key, result.returncode, result.stderr[-600:]))
    assert not failures, failures
    assert not (Path(tmp_path) / 'PWNED').exists()          # the expression was never run
