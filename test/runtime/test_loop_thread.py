"""The dedicated loop thread (absolute deadlines, clean stop) and the lock-free state handoff."""

import sys
import threading
import time

import numpy as np
import pytest

from continuum_ctrl.control.loop import ACTIVE, ControlLoop, WAITING
from continuum_ctrl.control.planner import ReferenceSlot
from continuum_ctrl.control.references import Hold
from continuum_ctrl.control.settings import ControllerSettings
from continuum_ctrl.params.launch_description import config_path
from continuum_ctrl.models import load_model
from continuum_ctrl.params import file_parameters
from continuum_ctrl.runtime.handoff import StateHandoff
from continuum_ctrl.runtime.loop_thread import LoopThread, MAX_SPIN_BEFORE, SWITCH_INTERVAL
from continuum_ctrl.runtime.node_settings import ControllerNodeSettings

PERIOD = 0.002


class Recorder:
    """A ROS-free tick: records when it ran and how late it said it was."""

    def __init__(self, slow_tick=None, slow_for=0.0):
        self.starts, self.lateness, self.deadlines = [], [], []
        self.slow_tick, self.slow_for = slow_tick, slow_for
        self.thread = None

    def __call__(self, lateness):
        self.starts.append(time.monotonic())
        self.lateness.append(lateness)
        self.deadlines.append(self.thread.deadline)
        if len(self.starts) == self.slow_tick:
            time.sleep(self.slow_for)


def run_for(recorder, seconds, **options):
    thread = LoopThread(recorder, PERIOD, **options)
    recorder.thread = thread
    before = sys.getswitchinterval()
    began = time.monotonic()
    thread.start()
    lowered = sys.getswitchinterval()
    time.sleep(seconds)
    stopped = thread.stop()
    # the GIL changes hands more often while the loop runs (the interpreter keeps whole us)
    assert lowered == pytest.approx(min(before, SWITCH_INTERVAL), rel=0.02)
    assert sys.getswitchinterval() == pytest.approx(before, rel=0.02)
    return thread, began, stopped


@pytest.mark.parametrize('spin_before', [0.0, MAX_SPIN_BEFORE])
def test_ticks_start_on_a_fixed_grid_never_early_and_the_thread_stops_cleanly(spin_before):
    recorder = Recorder()
    thread, began, stopped = run_for(recorder, 0.4, spin_before=spin_before)
    assert stopped and not thread.alive and thread.error is None
    count = len(recorder.starts)
    after_stop = time.monotonic()
    time.sleep(3 * PERIOD)
    assert len(recorder.starts) == count                    # nothing runs after stop()
    assert thread.ticks == count > 0
    deadlines = np.array(recorder.deadlines)
    assert np.all(np.array(recorder.starts) >= deadlines)  # never before its deadline
    grid = (deadlines - deadlines[0]) / PERIOD
    np.testing.assert_allclose(grid, np.round(grid), atol=1e-6)      # no drift off the grid
    assert np.all(np.diff(np.round(grid)) >= 1)
    # every deadline up to the stop either got its tick or was counted as missed
    elapsed = int(round(grid[-1])) + 1
    assert elapsed <= thread.ticks + thread.missed
    assert deadlines[-1] <= after_stop and deadlines[0] > began


def test_an_overrun_skips_the_deadlines_it_covers_and_keeps_the_grid():
    recorder = Recorder(slow_tick=20, slow_for=5.5 * PERIOD)
    thread, _, stopped = run_for(recorder, 0.2)
    assert stopped
    assert recorder.lateness[20] >= 4.5 * PERIOD            # measured from the first unserved
    assert thread.missed >= 4                               # the 5.5-period tick covered 4+
    steps = np.diff(recorder.deadlines) / PERIOD
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
    assert round(steps[19]) >= 5                            # served the latest passed one


def test_a_move_from_a_tick_moves_the_deadlines_after_it_not_the_period():
    recorder = Recorder()
    moved = 0.3 * PERIOD

    def tick(lateness):
        recorder(lateness)
        if len(recorder.starts) == 50:
            recorder.thread.move(moved)
    thread = LoopThread(tick, PERIOD)
    recorder.thread = thread
    thread.start()
    time.sleep(0.2)
    assert thread.stop()
    grid = (np.array(recorder.deadlines) - recorder.deadlines[0]) / PERIOD
    before, after = grid[:50], grid[50:] - moved / PERIOD
    np.testing.assert_allclose(before, np.round(before), atol=1e-6)
    np.testing.assert_allclose(after, np.round(after), atol=1e-6)   # shifted, same period
    assert np.all(np.array(recorder.starts) >= np.array(recorder.deadlines))


def test_a_failing_tick_ends_the_loop_and_is_kept():
    def tick(lateness):
        raise RuntimeError('boom')

    thread = LoopThread(tick, PERIOD)
    thread.start()
    thread._thread.join(1.0)
    assert not thread.alive and isinstance(thread.error, RuntimeError)
    assert thread.stop()


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match='spin_before'):
        LoopThread(lambda lateness: None, PERIOD, spin_before=1e-3)
    with pytest.raises(ValueError, match='period'):
        LoopThread(lambda lateness: None, 0.0)
    assert LoopThread(lambda lateness: None, PERIOD).stop()  # never started: nothing to join


def continuum_loop(resume_count):
    tree, model = file_parameters(config_path('continuum_3section.yaml'), 'continuum_controller')
    tree['resume_count'] = resume_count
    model = load_model(model)
    node, rest = ControllerNodeSettings.split(tree)
    return ControlLoop(model, ControllerSettings.parse(rest, model), node.period)


def test_handoff_gives_the_loop_the_latest_state_and_the_rejections_in_order():
    loop = continuum_loop(resume_count=3)
    handoff = StateHandoff()
    q = np.full(loop.model.n, 0.01)
    qd = np.zeros(loop.model.n)
    assert not handoff.take(loop)                           # nothing posted yet
    handoff.post(q, qd, 1.0)
    q[:] = 99.0                                             # the posted copy is unaffected
    assert handoff.take(loop) and loop.valid_streak == 1
    assert loop.q[0] == 0.01 and loop.last_state_time == 1.0
    assert not handoff.take(loop)                           # same tuple: nothing new
    q[:] = 0.02
    handoff.post_rejection()                                # rejected, then valid
    handoff.post(q, qd, 1.001)
    handoff.take(loop)
    assert loop.valid_streak == 1 and loop.q[0] == 0.02
    handoff.post(q, qd, 1.002)                              # valid, then rejected
    handoff.post_rejection()
    handoff.take(loop)
    assert loop.valid_streak == 0 and loop.last_state_time == 1.002
    handoff.post_rejection()                                # two rejections in a row
    handoff.take(loop)
    assert loop.valid_streak == 0
    for k in range(3):
        handoff.post(q, qd, 1.003 + 0.001 * k)
        handoff.take(loop)
    assert loop.status == ACTIVE


def test_handoff_between_threads_never_mixes_two_states():
    """A writer posts (v, v) pairs while the reader checks every pair it takes is whole."""
    loop = continuum_loop(resume_count=1000)    # stays WAITING, just records
    n = loop.model.n
    handoff = StateHandoff()
    done = threading.Event()

    def write():
        value = np.zeros(n)
        for k in range(20000):
            value[:] = k
            handoff.post(value, value, float(k))
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    taken = 0
    while not done.is_set() or handoff.latest is not handoff._seen:
        if handoff.take(loop):
            taken += 1
            assert np.all(loop.q == loop.last_state_time)
            assert np.all(loop.qd == loop.last_state_time)
    writer.join()
    assert taken > 0 and loop.last_state_time == 19999.0 and loop.status == WAITING


def test_reference_slot_refuses_a_plan_overtaken_by_a_newer_reference():
    """A tip target clamped aside loses to a trajectory posted meanwhile; each installs once."""
    loop = continuum_loop(resume_count=1)
    slot = ReferenceSlot()
    planned, newer = Hold(np.zeros(loop.model.n)), Hold(np.full(loop.model.n, 0.01))
    ticket = slot.claim()
    assert slot.current(ticket)
    assert slot.post(newer, 1.0)                        # the executor's trajectory
    assert not slot.current(ticket)
    assert not slot.post(planned, 2.0, ticket)          # the worker's late plan
    assert slot.take(loop) and loop.reference.reference is newer and loop.reference.t0 == 1.0
    assert not slot.take(loop)                          # installed once
    assert slot.post(planned, 3.0, slot.claim())        # a plan nothing overtook
    assert slot.take(loop) and loop.reference.reference is planned


def test_reference_slot_check_and_store_are_one_step_between_threads():
    """
    A worker posts with its ticket while the executor posts a newer reference at the same time.

    Whatever the interleaving, the newer reference must win: the ticket predates it. A check
    and a store in two steps lose it when the executor posts between them.
    """
    loop = continuum_loop(resume_count=1)
    references = [Hold(np.full(loop.model.n, k)) for k in range(2)]
    slot = ReferenceSlot()
    start = threading.Barrier(2)
    lost = []

    def worker(ticket):
        start.wait()
        slot.post(references[0], 0.0, ticket)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(2000):
            thread = threading.Thread(target=worker, args=(slot.claim(),))
            thread.start()
            start.wait()
            slot.post(references[1], 0.0)
            thread.join()
            if slot.latest[0] is not references[1]:
                lost.append(1)
    finally:
        sys.setswitchinterval(interval)
    assert not lost
    assert slot.take(loop) and loop.reference.reference is references[1]
