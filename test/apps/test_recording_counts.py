"""How the demo counts a recording's missing ticks: skipped by the loop, or lost on the way."""

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest

from continuum_ctrl.apps.demo import recording_line
from continuum_ctrl.ros.diagnostics import diagnostic_array
from continuum_ctrl.ros.recorder import Recorder

PERIOD = 0.002


def ticks(seconds, holes):
    """Return the stamps of a 500 Hz loop over `seconds`, less the tick indices `holes`."""
    t = np.arange(round(seconds / PERIOD) + 1) * PERIOD
    return np.delete(t, list(holes))


def test_missing_ticks_split_into_skipped_and_lost():
    line = recording_line(ticks(2.0, range(100, 110)), PERIOD, 4)
    assert 'recording: 991 of 1001 ticks, 10 missing (4 deadlines the loop skipped, 6 lost ' \
           'by the recording), largest gap 22.0 ms' in line
    assert 'warning: the recording has holes' in line        # a gap over 20 ms
    complete = recording_line(ticks(2.0, [500]), PERIOD, 1)
    assert '1 missing (1 deadlines the loop skipped, 0 lost by the recording)' in complete
    assert 'warning' not in complete
    # a tail that never came is missing, and a gap up to where the recording was to end
    tail = recording_line(ticks(2.0, []), PERIOD, 0, end=2.1)
    assert '1001 of 1051 ticks, 50 missing (0 deadlines the loop skipped, 50 lost' in tail
    assert 'largest gap 100.0 ms' in tail and 'warning' in tail
    # the loop's count may reach back a window before the recording: never a negative loss
    assert '0 lost by the recording' in recording_line(ticks(2.0, [500]), PERIOD, 30)


@pytest.mark.ros
def test_run_counts_grow_from_the_window_before_the_span():
    """Recorder.grown: a run count's growth over a span, windows counted by their share."""
    with Recorder('controller_under_test', 'simulator_under_test', record=False) as rec:
        node = rec.node
        publisher = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        assert rec.wait(lambda: publisher.get_subscription_count() > 0, 10.0)
        for stamp, missed, overruns in ((10.0, 3, 0), (11.0, 5, 1), (12.0, 12, 4)):
            for name, values in ((rec.controller, [('run_missed_deadlines', missed)]),
                                 (rec.simulator, [('overruns', overruns)])):
                msg = diagnostic_array(node, 'figures', values, 'running')
                msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), 0
                msg.status[0].hardware_id = f'/{name}'
                publisher.publish(msg)
        assert rec.wait(lambda: len(rec.sim_diagnostics) == 3, 10.0)
        # windows (10, 11] and (11, 12] grew by 2 and 7 missed deadlines
        assert rec.grown('run_missed_deadlines', 11.0) == 7
        assert rec.grown('run_missed_deadlines', 11.5) == 4            # half of (11, 12]
        assert rec.grown('run_missed_deadlines', 10.5, 11.5) == 1 + 4  # two halves: 1, 3.5
        assert rec.grown('run_missed_deadlines', 9.0) == 12            # the first whole
        assert rec.grown('overruns', 10.0, simulator=True) == 4
        assert rec.grown('no_such_count', 10.5) == 0
