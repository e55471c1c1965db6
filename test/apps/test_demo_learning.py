"""
`demo --arm continuum_ilc`'s report: the error per period falling as the loop learns.

The arm's two nodes run in one process (the nodes' cycle, sim/closed_loop.py) and the demo's
own report is made of that run, as of a recording: its printout and `learning.png` beside
`closed_loop.png`. The processes and DDS around it are test/system/test_demo.py's.
"""

import numpy as np
import pytest

from continuum_ctrl.apps.demo import Recording, period_source, report, sampled_errors
from continuum_ctrl.apps.node_pair import controller_model
from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.params.launch_description import arm_files, simulation
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.period_report import per_period
from continuum_ctrl.sim.report import tip_frame

#: the overlay's blend (3 s) and 5 periods of its 1 Hz sinusoid
DURATION = 8.1


def recording(files):
    """Return the Recording of the arm of `files` run for DURATION s in one process."""
    runtime, plant = node_pair(files)
    log = simulate_nodes(runtime, plant, DURATION)
    settings = runtime.loop.settings
    first, order = int(np.argmax(log.active)), settings.order
    q_des, q, effort = (x[first:][:, order] for x in (log.q_des, log.q, log.effort))
    figures = {key: str(value) for key, value in runtime.figures()}   # as /diagnostics's
    return Recording(list(settings.joints), log.t[first:], q_des, q, effort,
                     log.command[first:], [figures], {}, 0.0, log.t[-1], {})


@pytest.mark.slow
def test_the_demo_prints_and_plots_the_error_per_period_falling(tmp_path, capsys):
    files = arm_files('continuum_ilc')
    run = recording(files)
    report(run, 'continuum_ilc', 'mujoco', 0.002, simulation(files)[0], tmp_path)
    out = capsys.readouterr().out
    lines = out.split('learning from repetition, per period:')[1].splitlines()[1:]
    rows = [line.split('|') for line in lines if line[:4].strip().isdigit()]
    assert len(rows) == 5, out
    sections = np.array([[float(v) for v in row[0].split()[1::2]] for row in rows])   # mm
    tips = np.array([float(row[1]) for row in rows])
    rates = np.array([float(row[2]) for row in rows])                                   # MPa/s
    # the 1 Hz error learnt away period by period (0.147 / 0.095 / 0.056 mm and a 9.9 mm tip
    # in the first, 0.020 / 0.024 / 0.010 mm and 1.3 mm in the fifth), the commands as quiet
    assert np.all(sections[-1] < 0.5 * sections[0]) and tips[-1] < 0.3 * tips[0], out
    assert np.all(np.diff(sections.max(axis=1)) < 0.0), out
    assert np.all(rates < 1.5), out
    for name in ('learning.png', 'closed_loop.png'):
        image = tmp_path / name
        assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and image.stat().st_size > 10_000
        assert f'{image}' in out


def test_through_the_nodes_the_periods_compare_the_samples_with_the_reference_at_their_stamps():
    # an arm exactly on a 1 Hz reference, its ~/state rows' feedback the sample the tick used,
    # 2-4 ms old (the sensor's delay, the transport, the wait): the rows read 0.1 mm of lag
    # where the samples, at their stamps, show none
    files = arm_files('continuum_ilc')
    node = simulation(files)[0]
    model, settings = controller_model(list(node.parameters), node.name)
    names = list(settings.joints)
    t = np.arange(0.0, 6.0, 0.002)
    amplitude = 0.007 * np.linspace(0.5, 1.0, len(names))             # m, 22-44 mm/s

    def reference(times):
        return 0.2 + amplitude * np.sin(2.0 * np.pi * times[:, None])
    stamps = t - 0.002 - 0.001 * np.random.default_rng(1).random(len(t))
    q_des = reference(t)
    samples = reference(stamps)
    run = Recording(names, t, q_des, samples, np.zeros_like(q_des), np.zeros_like(q_des),
                    [], {}, 0.0, t[-1], {}, (stamps, samples))
    order = [names.index(name) for name in model.joint_names]
    _, error, _, tips = sampled_errors(run, model, tip_frame(model, None), order)
    assert np.sqrt(np.mean(error ** 2)) < 1e-6 and np.max(tips) < 1e-5      # interpolation
    assert np.sqrt(np.mean((run.q - run.q_des) ** 2)) > 5e-5          # what the rows say


def test_the_periods_take_the_arms_true_positions_over_the_noisy_samples():
    # recorded beside the sensor's 20 um noise, the simulator's true joint states are the
    # arm's error: the table reads them, not the noise
    names = ['section1_pma1', 'section1_pma2', 'section1_pma3']
    t = np.arange(0.0, 2.0, 0.002)
    q_des = 0.2 + 0.007 * np.sin(2.0 * np.pi * t)[:, None] * np.ones(3)
    noisy = q_des + 2e-5 * np.random.default_rng(2).standard_normal(q_des.shape)
    run = Recording(names, t, q_des, noisy, np.zeros_like(q_des), np.zeros_like(q_des),
                    [], {}, 0.0, t[-1], {}, (t, noisy), (t[::2], q_des[::2] + 1e-6))
    assert period_source(run)[0] == 'truth'
    at, error, _, _ = sampled_errors(run, None, None, [0, 1, 2])
    assert np.array_equal(at, t[::2]) and np.allclose(error, 1e-6)
    run.truth = None                                        # not recorded: the samples
    assert np.sqrt(np.mean(sampled_errors(run, None, None, [0, 1, 2])[1] ** 2)) > 1.5e-5


def test_a_period_the_recording_lost_is_a_gap_in_the_table_not_a_failure():
    # under load a recording through the nodes lost a whole second of rows: that period has
    # no figures, the others theirs
    names = ['section1_pma1', 'section1_pma2', 'section1_pma3']
    t = np.arange(0.0, 4.001, 0.002)
    t = t[(t < 2.0) | (t >= 3.0)]
    error = np.full((len(t), 3), 1e-5)
    command = np.outer(np.sin(t), np.ones(3)) * 1e5
    rows = per_period(names, t, error, command, 1.0, 1.0, np.full(len(t), 1e-4))
    assert len(rows) == 3 and np.all(np.isnan(rows[1].rms)) and np.isnan(rows[1].tip)
    assert rows[0].rms == pytest.approx([1e-5]) and rows[2].tip == pytest.approx(1e-4)


def test_samples_heard_late_keep_the_periods_of_the_reference():
    # the recorder heard the sensor's samples 1.95 s after the activation (DDS matched its
    # subscription late): the periods still start where the reference's do
    names = ['section1_pma1']
    t = np.arange(1.95, 6.001, 0.002)
    error = np.floor(t)[:, None] * 1e-5                 # each period its own error
    command = np.sin(t)[:, None] * 1e5
    rows = per_period(names, t, error, command, 3.0, 1.0, origin=0.0)
    assert [row.rms[0] for row in rows] == pytest.approx([3e-5, 4e-5, 5e-5])
