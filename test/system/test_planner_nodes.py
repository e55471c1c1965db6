"""
Tip circles through the node pair: planned on the controller's worker, never on its loop.

An unreachable circle (0.5 m around the arm of continuum_task.yaml) takes the worker seconds
of IK; the loop keeps its rate meanwhile (diagnostics). A reachable 1 cm circle is planned in
milliseconds; no tick waits for it, at activation nor when a stale state stream resumes (the
simulator stopped past `state_timeout`, then continued): the ``~/state`` stamps, one per tick,
show no gap there longer than in steady running. The steady baseline (the largest gap over 2 s of
the same run, at least two periods) absorbs this machine's scheduling jitter, which reaches 2
periods between ticks with no plan at all; a plan on the loop's thread stalls one tick for
14 ms (7 periods), far past the baseline plus one period that is allowed. A loaded machine
still stretches a gap past that now and then (8.8 ms at an activation, against 6.8 steady, on
CI), so the test plans four times (the activation, three recoveries) and asks at least half of
them to stay within the bound: a plan on the loop's thread would break all four.
"""

import os
import signal
import time

import numpy as np
import pytest
from support.ros_nodes import params_file, running

from continuum_ctrl.params.launch_description import arm_files

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CONFIG = arm_files('continuum_task')
PERIOD = 0.002          # the file's rate_hz: 500
#: stale-stream recoveries, each planned again (with the activation: four plans)
RECOVERIES = 3


def circle(tmp_path, radius):
    return params_file(tmp_path, CONFIG, continuum_controller={
        'reference': {'tip_radius': radius}})


def figures(rec):
    """Return the controller's last numeric /diagnostics figures (not the status and names)."""
    return {k: float(v) for k, v in rec.diagnostics[-1].items()
            if k != 'status' and not k.endswith('_joint')}


def largest_gap(rec, start, seconds):
    """Return the longest interval between ~/state stamps in ``[start, start + seconds]``, s."""
    stamps = np.array([row[0] for row in rec.states if start <= row[0] <= start + seconds])
    assert len(stamps) > 0.5 * seconds / PERIOD, len(stamps)
    return float(np.max(np.diff(stamps)))


def test_unreachable_circle_keeps_the_loop_rate(tmp_path):
    with running(tmp_path, circle(tmp_path, 0.5)) as (rec, processes):
        assert rec.wait(lambda: rec.diagnostics and figures(rec)['plans'] >= 1, 120.0,
                        processes)
        planning = [d for d in rec.diagnostics if d['status'] == 'active']
        rec.run(2.5)                        # two diagnostics windows after the plan
        values = figures(rec)
        windows = [float(d['rate_hz']) for d in rec.diagnostics[len(rec.diagnostics) - 2:]]
        planned = [float(d['rate_hz']) for d in planning[1:]]
        print(f'unreachable circle: plan {values["plan_max_s"]:.2f} s; rate while planning '
              f'{min(planned, default=np.nan):.1f} Hz (lowest window), after '
              f'{min(windows):.1f} Hz; period p99 {values["run_period_p99_us"]:.0f} us, '
              f'max {values["run_period_max_us"]:.0f} us over the run')
        if values['plan_max_s'] > 1.5:      # a plan this long spans a 1 Hz diagnostics window
            assert any(d['planning'] == '1' for d in planning)
        assert values['planning'] == 0 and values['clamped_tip_targets'] == 1
        assert min(planned + windows) >= 0.95 / PERIOD
        assert values['run_period_p99_us'] <= 3 * PERIOD * 1e6
    log = (tmp_path / 'continuum_controller.log').read_text()
    held = log.find('holding the measured pose')            # held while planning, then
    assert 0 <= held < log.find('unreachable: clamped') and held < log.find('reference planned')


def test_reachable_circle_no_long_tick_at_activation_nor_after_recovery(tmp_path):
    with running(tmp_path, circle(tmp_path, 0.01)) as (rec, processes):
        assert rec.wait(lambda: rec.diagnostics and figures(rec)['plans'] >= 1, 60.0,
                        processes)
        gaps = [largest_gap(rec, rec.active_since - 0.1, 0.6)]        # at activation
        rec.run(2.2)
        steady = max(2 * PERIOD, largest_gap(rec, rec.active_since + 0.6, 2.0))
        simulator = processes[1]
        for plans in range(2, 2 + RECOVERIES):
            os.kill(simulator.pid, signal.SIGSTOP)          # joint states stop: stale
            time.sleep(0.4)
            resumed = time.time()
            os.kill(simulator.pid, signal.SIGCONT)
            assert rec.wait(lambda: figures(rec)['plans'] >= plans, 30.0, processes)
            rec.run(1.0)
            gaps.append(largest_gap(rec, resumed, 0.6))
        values = figures(rec)
        print(f'1 cm circle: longest tick interval {gaps[0] * 1e3:.2f} ms at activation, '
              f'{", ".join(f"{g * 1e3:.2f}" for g in gaps[1:])} ms at the recoveries, '
              f'{steady * 1e3:.2f} ms steady; plans up to {values["plan_max_s"] * 1e3:.1f} ms; '
              f'run period max {values["run_period_max_us"]:.0f} us')
        # a plan on the loop's thread lengthens every one of these gaps; noise, a few
        assert sum(gap <= steady + PERIOD for gap in gaps) >= len(gaps) / 2, gaps
    log = (tmp_path / 'continuum_controller.log').read_text()
    count = 1 + RECOVERIES
    assert log.count('control active') == count and log.count('reference planned') == count, log
