"""The main job end to end: `continuum-ctrl demo` with real node processes over DDS."""

import csv
import os
import re
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from continuum_ctrl.params.launch_description import JOINT_TRUTH_TOPIC
from continuum_ctrl.runtime.controller_runtime import CONTROLLING
from support.command_bounds import worst_chatter, worst_variation
from support.ros_nodes import stall_of, unstalled


#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: reference amplitude of config/continuum_3section.yaml, m: holding still would err by this
AMPLITUDE = 0.007
P_MAX = 5e5
ROOT = Path(__file__).resolve().parents[2]
#: share of the ticks and largest gap (s) that a recording must keep, of those the loop made
#: (its skipped deadlines have no tick to record). The demo warns below its own goal
#: (apps/demo.py: COMPLETE, MAX_GAP: 99 %, 20 ms), which a slow, loaded 2-core machine
#: misses at times: at 500 Hz, 99.4 % with a 25.6 ms gap; at 1 kHz, 2 of 7 runs, one keeping
#: 98.9 % with a 34 ms gap (with a 0.1 s ~/state ring: 2 of 3, 28-114 ms)
KEPT_SHARE, KEPT_GAP = 0.97, 0.08
#: the demo's recording line: ticks recorded and expected, skipped deadlines, largest gap
RECORDING = re.compile(r'recording: (\d+) of (\d+) ticks, \d+ missing \((\d+) deadlines the '
                       r'loop skipped, \d+ lost by the recording\), largest gap ([\d.]+) ms')
OVERRUNS = re.compile(r'simulator at the end of the run: \d+ steps, (\d+) overruns')
STALE = re.compile(r'commands gone stale (\d+)')


def recording(stdout):
    """Return ``(recorded, expected, skipped, largest gap s)`` from the demo's printout."""
    found = RECORDING.search(stdout)
    assert found, stdout
    recorded, expected, skipped, gap = found.groups()
    return int(recorded), int(expected), int(skipped), float(gap) * 1e-3


def demo_stall(stdout):
    """
    Return `ros_nodes.stall_of` a demo run (its recording's largest gap, the plant steps
    dropped, the commands gone stale), from its printout.
    """
    dropped, stale = OVERRUNS.search(stdout), STALE.search(stdout)
    return stall_of(recording(stdout)[3], int(dropped.group(1)) if dropped else 0,
                    int(stale.group(1)) if stale else 0)


def assert_complete(out, rate_hz, stdout, complete=KEPT_SHARE, max_gap=KEPT_GAP):
    """
    Assert the demo's recording in `out` holds `complete` of the loop's ticks, and no gap
    over `max_gap` beyond the deadlines the loop skipped (`stdout`: the demo's printout).

    Checked in the CSV (one row per tick from activation on, over the run's duration) and in
    the bag's ~/state; the ticks expected are those of the duration on the loop's grid, as
    the demo counts them, less the deadlines the loop skipped, which may all fall into one
    gap.
    """
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    recorded, expected, skipped, gap = recording(stdout)
    made, max_gap = expected - skipped, max_gap + skipped / rate_hz
    t = np.loadtxt(out / 'closed_loop.csv', delimiter=',', skiprows=1, usecols=0)
    print(f'{rate_hz:g} Hz: {len(t)} of the {made} ticks the loop made in the CSV '
          f'({skipped} deadlines skipped), largest gap {gap * 1e3:.1f} ms')
    assert len(t) == recorded and recorded >= complete * made and gap <= max_gap
    with open(out / 'closed_loop.mcap', 'rb') as f:
        states = [m.header for _, _, _, m in make_reader(
            f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(
                topics=['/continuum_controller/state'])]
    stamps = np.array([h.stamp.sec + 1e-9 * h.stamp.nanosec for h in states
                       if h.frame_id in CONTROLLING])
    assert len(stamps) >= complete * made and np.max(np.diff(stamps)) <= max_gap


def demo_run(out, *arguments, timeout):
    """
    Run ``continuum-ctrl demo ARGUMENTS --out OUT``; return ``((out, result), stall)``, as
    `ros_nodes.unstalled` takes it (`demo_stall`; None when the demo failed).
    """
    done = subprocess.run([sys.executable, '-m', 'continuum_ctrl.apps.cli', 'demo', *arguments,
                           '--out', str(out)], env=dict(os.environ), capture_output=True,
                          text=True, timeout=timeout)
    return (out, done), demo_stall(done.stdout) if done.returncode == 0 else None


@pytest.fixture(scope='module')
def demo_runs(tmp_path_factory):
    """
    Return ``run(k)``: the output folder and result of the k-th identical 6 s demo run.

    Runs are made when first asked for and kept for the module: the first one is checked
    whole, and it is also the first of the three that the repeatability test compares. A run
    the machine stalled is made again, once (ros_nodes.unstalled).
    """
    folder, runs = tmp_path_factory.mktemp('demo'), []

    def run(k):
        while len(runs) <= k:
            runs.append(unstalled(lambda: demo_run(folder / f'run{len(runs)}', '--duration',
                                                   '6', timeout=300)))
        return runs[k]
    return run


def test_demo_runs_the_continuum_arm_and_writes_its_outputs(demo_runs):
    tmp_path, done = demo_runs(0)
    assert done.returncode == 0, done.stdout + done.stderr
    for line in ('section1', 'section2', 'section3', 'loop rate', 'state timeouts',
                 'recording: '):
        assert line in done.stdout, done.stdout
    assert_complete(tmp_path, 500.0, done.stdout)
    assert (tmp_path / 'closed_loop.png').stat().st_size > 10_000
    header, data = read_csv(tmp_path / 'closed_loop.csv')
    joints = [f'section{i}_pma{j}' for i in (1, 2, 3) for j in (1, 2, 3)]
    assert header == (['t'] + [f'{kind}_{name}' for kind in ('q_des', 'q', 'effort', 'command')
                               for name in joints])
    assert len(data) > 500 and np.all(np.isfinite(data[:, :28]))
    assert np.all(np.diff(data[:, 0]) > 0)
    q_des, q, command = data[:, 1:10], data[:, 10:19], data[:, 28:37]
    # the command fields are empty (NaN) only before the first command the recorder heard,
    # a few ticks at most, and whole rows at a time
    sent = np.all(np.isfinite(command), axis=1)
    first = int(np.argmax(sent))
    assert np.all(sent[first:]) and not np.any(np.isfinite(command[:first])), first
    assert first < 0.1 * len(data), first
    assert np.all((command[first:] >= 0.0) & (command[first:] <= P_MAX))
    # after the 1 s blend-in the arm follows its reference: RMS error per PMA well inside the
    # amplitude (standing still would leave about the amplitude itself)
    late = data[:, 0] > data[0, 0] + 1.5
    rms = np.sqrt(np.mean((q[late] - q_des[late]) ** 2, axis=0))
    assert np.all(rms < 0.5 * AMPLITUDE), rms
    # the rosbag2 MCAP bag of the same run reads back: joint states (the sensor's and the
    # simulator's true ones), commands and ~/state
    from mcap.reader import make_reader

    from continuum_ctrl.identify.data import Joints, read_diagnostics, read_mcap
    run = read_mcap(tmp_path / 'closed_loop.mcap', Joints(joints, joints))
    assert len(run.t) > 500 and len(run.command_t) > 500
    assert np.all((run.command >= 0.0) & (run.command <= P_MAX))
    with open(tmp_path / 'closed_loop.mcap', 'rb') as f:
        summary = make_reader(f).get_summary()
    assert {c.topic for c in summary.channels.values()} == {
        '/joint_states', JOINT_TRUTH_TOPIC, '/continuum_controller/commands',
        '/continuum_controller/state', '/diagnostics'}
    assert summary.statistics.message_count > 1500
    # the controller's figures read back from the bag, the command's among them, and the
    # printout's per section, computed from the recorded commands (CSV)
    statuses = read_diagnostics(tmp_path / 'closed_loop.mcap', 'continuum_controller')
    chatter = [float(figures['chatter_index']) for *_, figures in statuses
               if figures['command_variation_joint']]   # windows with two active ticks
    assert len(chatter) >= 4 and all(0.0 <= x <= 1.0 for x in chatter), statuses
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith('section')]
    t = data[:, 0]
    for row, section in zip(rows, (command[:, :3], command[:, 3:6], command[:, 6:])):
        assert row[6] == 'MPa/s' and float(row[5]) == pytest.approx(
            worst_variation(t, section) * 1e-6, abs=1e-3), row
        assert float(row[7]) == pytest.approx(worst_chatter(t, section), abs=1e-3), row
    assert 'tip (section3_tip): RMS error ' in done.stdout


def test_the_demo_at_1_khz_records_its_ticks(tmp_path):
    """
    Both nodes at SCHED_FIFO, the loop at 1 kHz: the recording keeps its ticks. A run the
    machine stalled is made again, once (ros_nodes.unstalled), as the 500 Hz runs are.
    """
    text = (ROOT / 'config' / 'continuum_3section.yaml').read_text()
    assert '    rate_hz: 500.0\n' in text
    params = tmp_path / 'continuum_1khz.yaml'
    params.write_text(text.replace('    rate_hz: 500.0\n', '    rate_hz: 1000.0\n'))
    out, done = unstalled(lambda: demo_run(tmp_path / 'run', '--arm', str(params),
                                           '--duration', '3', timeout=180))
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'recording: ' in done.stdout, done.stdout
    assert_complete(out, 1000.0, done.stdout)


#: largest ratio of one section's RMS error between runs, and largest RMS error (m), that the
#: repeatability test accepts: the loop delay is one or two plant steps depending on the phase
#: of the two nodes' 500 Hz timers (docs/simulation.md); below REPEAT_FLOOR (m) the spread
#: is that phase at tens of micrometres (measured: 0.024 to 0.22 mm per section on the
#: MuJoCo arm; one run of three 0.22 mm in section 2 against 0.035 mm in another), not a
#: regression; on a slower, loaded 2-core machine one run of three tracked 4.4 times worse
#: than the best (0.82 against 0.18 mm in section 1), still well under 1 mm
REPEAT_RATIO, REPEAT_RMS, REPEAT_FLOOR = 6.0, 1e-3, 0.3e-3


def read_csv(path):
    """Return a demo CSV's header and its rows as floats, an empty field NaN."""
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[float(x) if x else np.nan for x in row] for row in rows[1:]])


def section_rms(path):
    """Return the RMS tracking error per section (m) after the 1 s blend of a demo CSV."""
    data = read_csv(path)[1]
    late = data[:, 0] > data[0, 0] + 1.5
    error = data[late, 10:19] - data[late, 1:10]
    return np.sqrt(np.mean(error.reshape(-1, 3, 3) ** 2, axis=(0, 2)))


def test_three_demo_runs_agree_within_the_documented_spread(demo_runs):
    """Three identical `demo` runs: per-section RMS within REPEAT_RATIO of each other."""
    rms = []
    for run in range(3):
        out, done = demo_runs(run)
        assert done.returncode == 0, done.stdout + done.stderr
        rms.append(section_rms(out / 'closed_loop.csv'))
    rms = np.array(rms)
    assert np.all(rms < REPEAT_RMS), rms
    assert np.all(rms.max(axis=0) <= np.maximum(REPEAT_RATIO * rms.min(axis=0),
                                                REPEAT_FLOOR)), rms
