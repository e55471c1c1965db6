"""
Valve compensation in closed loop over real node processes (its acceptance test).

The simulator's PMAs lag 30 ms behind a 5 ms dead time; the controller runs the continuum
demo's configuration with and without `output.time_constant` / `output.delay`. Errors count
after the reference's 1 s blend-in (and one more second for the start-up transient).
"""

import numpy as np
import pytest

from support.command_bounds import QUIET_PMA, recorded, worst_variation
from support.ros_nodes import params_file, running, stall, unstalled, windows

#: starts node processes or DDS participants, for more than a few seconds
pytestmark = [pytest.mark.ros, pytest.mark.slow]

#: seconds recorded after the controller went active; errors count from SETTLE on
DURATION, SETTLE = 6.0, 2.0
LAG, DELAY = 0.03, 0.005
#: s, the dead time the controller predicts: the valves' and the command's way to them
#: (transport, the simulator's step), rounded up as config/continuum_3section.yaml does; the
#: valves' alone left the loop 1-3 ms short on a loaded machine, and it chattered
PREDICTED = 0.01
#: m; the RMS error of the arm without valves in the one-process loop (no transport, no
#: noise), a floor for the node pair's own no-valve figure
NO_VALVES_RMS = 0.21e-3
#: the compensation on measured states at the gains its figures were measured with (kp 700,
#: kd 40: the file's former ones; without the valve model the file's observer cannot run),
#: kept through saturation (the file's guard softens the uncompensated loop, which
#: saturates: the guard's effect, not the valves', as in test/control/test_compensation.py)
MEASURED_STATES = {'observer': {'type': 'none'},
                   'gains': {'kp': [700.0] * 9, 'kd': [40.0] * 9},
                   'limits': {'saturation_gain': 1.0}}


def closed_loop(tmp_path, lag, delay, time_constant, predicted):
    """
    Return ``(rms error, m; the worst PMA's command variation, Pa/s)``, measured again when
    the machine stalled the nodes (ros_nodes.unstalled).
    """
    path = params_file(tmp_path, 'continuum_3section.yaml',
                       continuum_simulator={'actuator': {'time_constant': lag,
                                                         'delay': delay}},
                       continuum_controller={'output': {'time_constant': time_constant,
                                                        'delay': predicted},
                                             **MEASURED_STATES})

    def measure():
        with running(tmp_path, path) as (rec, _):
            rec.run(DURATION)
            since = rec.active_since + SETTLE
            t, q_des, q, _ = rec.arrays(since=since)
            commands = recorded(rec.commands, t[0])
            stalled = stall(rec, since)
            # what a failed bound needs: the input's age and latency, the plant's commands
            print(f'\nvalves {lag} s / {delay} s, predicted {time_constant} s / {predicted} s: '
                  f'{windows(rec)}')
        error = q - q_des
        return (float(np.sqrt(np.mean(error ** 2))), worst_variation(*commands)), stalled
    return unstalled(measure)


@pytest.fixture(scope='module')
def figures(tmp_path_factory):
    """Return ``{case: (rms error, m; command variation, Pa/s)}`` of the four closed loops."""
    tmp = tmp_path_factory.mktemp('valves')
    return {
        'no lag': closed_loop(tmp, 0.0, 0.0, 0.0, 0.0),
        'compensated': closed_loop(tmp, LAG, DELAY, LAG, PREDICTED),
        'time constant 20 % short': closed_loop(tmp, LAG, DELAY, 0.8 * LAG, PREDICTED),
        'uncompensated': closed_loop(tmp, LAG, DELAY, 0.0, 0.0),
    }


def test_compensation_wins_back_the_tracking_lost_to_the_valves(figures):
    """The tracking figures of docs/benchmarks.md (valves) through the nodes."""
    print({case: f'RMS {rms * 1e3:.2f} mm, worst PMA {tv / 1e6:.3g} MPa/s'
           for case, (rms, tv) in figures.items()})
    baseline, compensated = figures['no lag'][0], figures['compensated'][0]
    # the control case: the uncompensated valves cost about a millimetre or more (2.1 mm
    # measured through the nodes with the passive forces at the reference), several times
    # the arm's error without valves (micrometres)
    assert figures['uncompensated'][0] > max(1e-3, 4.0 * baseline)
    # the target: compensated, at most twice the error without valves. Through the nodes
    # that error depends on the phase of the two nodes' timers (one or two plant steps
    # between a state and its command; docs/simulation.md, repeatability) and varies far more
    # from run to run than the compensated error. So the target is judged against the larger
    # of this run's figure and the one-process figure, NO_VALVES_RMS.
    no_valves = max(baseline, NO_VALVES_RMS)
    assert compensated <= 2.0 * no_valves
    # a 20 % short time constant stays bounded: 0.17-0.37 mm measured
    assert figures['time constant 20 % short'][0] <= 3.0 * no_valves


def test_compensation_adds_no_chatter(figures):
    # The compensated loop against the bound and against the same valves uncompensated. The
    # loop without valves is the control case of the tracking test only: at these gains on
    # differenced lengths its variation follows the nodes' timing jitter (1.24 MPa/s on a
    # loaded CI machine), which the compensation does not touch.
    assert figures['compensated'][1] <= 1.5 * figures['uncompensated'][1]
    assert figures['compensated'][1] <= QUIET_PMA, figures


def test_measured_pressures_are_used_checked_and_missed(tmp_path):
    """
    `~/pressures` over real processes: bad messages are rejected and counted; valid ones
    replace the valve estimate (a false, constant reading spoils the prediction, so the arm
    errs); when they stop, the model's estimate takes over again and the arm tracks again
    (within about 1.5 s: the arm recovers slowly from the large error, as without valves).
    """
    import time
    from std_msgs.msg import Float64MultiArray
    path = params_file(tmp_path, 'continuum_3section.yaml')
    with running(tmp_path, path) as (rec, _):
        pub = rec.node.create_publisher(Float64MultiArray, '/continuum_controller/pressures',
                                        10)
        assert rec.wait(lambda: pub.get_subscription_count() > 0, 30.0)
        for bad in ([1e5] * 8, [float('nan')] * 9, [5e6] * 9):
            pub.publish(Float64MultiArray(data=bad))
        phases = [time.time() + SETTLE]
        rec.run(SETTLE + 2.0)
        phases.append(time.time())
        false = Float64MultiArray(data=[2e5] * 9)
        timer = rec.node.create_timer(0.005, lambda: pub.publish(false))
        rec.run(2.0)
        rec.node.destroy_timer(timer)
        phases.append(time.time())
        rec.run(3.5)
        phases.append(time.time())
        t, q_des, q, _ = rec.arrays()
        rms = [np.sqrt(np.mean((q - q_des)[(t >= a + wait) & (t < b)] ** 2))
               for a, b, wait in zip(phases[:-1], phases[1:], (0.0, 0.5, 2.0))]
        assert rec.diagnostics[-1]['rejected_pressures'] == '3'
        loop_figures = windows(rec)
    # a loaded machine raises the baseline (1.6 mm seen under CI load, 0.3 mm idle), so the
    # false readings are judged against both the baseline and the recovery after them
    assert rms[1] > 2.0 * rms[0] and rms[1] > 3.0 * rms[2], (rms, loop_figures)
