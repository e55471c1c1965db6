"""
Where one controller tick's time goes: its parts timed one by one, in one process.

The controller node for the three-section continuum arm (CoG model, pressure mode) is built
in-process (its loop thread stopped) and fed a fresh valid state; its runtime's loop is
active. Each part of a tick is then called on its own, back to back, in interleaved rounds
(medians of round medians, us): the reference sample (with its clamps to the joint limits),
the law (one model call and the NumPy around it), the effort clamp and rate limit, the
pressure map, the command publish (a Float64MultiArray message against the node's
pre-serialized bytes), the tick's end record (its durations and ``~/state`` row), a state's
way in, and the whole `runtime.tick` after it (with the continuum config's valve
compensation, whose prediction over `output.delay` is most of it); then the `~/state`
publish and the 1 Hz diagnostics, which the node runs on its executor, off the loop thread.
The Python side of a tick is everything but the model call. Some parts are timed woken from a
1 ms sleep too (`WOKEN`), as a live loop calls them, and woken from 0.8 ms of sleep followed
by 0.2 ms of spinning (`spin_before`). Run: `./run bench bench/bench_tick.py` (~30 s).
"""

import os
import tempfile
import time

import numpy as np

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

from bench_node import controller_in_process, params  # noqa: E402 - after the DDS settings
from rclpy.serialization import serialize_message  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

ROUNDS = 15
CALLS = 300
#: parts also timed woken from a 1 ms sleep before each call, as in a live loop
WOKEN = ('model call alone', 'publish: message', 'publish: bytes',
         'state in + whole tick')


def median_us(function, calls=CALLS, pause=0.0, spin=0.0):
    """
    Return the median duration (us) of `function()` over `calls` calls.

    Before each call: a sleep of `pause` s, then `spin` s of busy waiting.
    """
    times = np.empty(calls)
    for k in range(calls):
        if pause:
            time.sleep(pause)
        end = time.perf_counter() + spin
        while time.perf_counter() < end:
            pass
        start = time.perf_counter()
        function()
        times[k] = time.perf_counter() - start
    return float(np.median(times)) * 1e6


def fresh_state(node, msg):
    """Stamp `msg` now and hand it to the node as the executor would (serialized)."""
    msg.header.stamp = node.get_clock().now().to_msg()
    node._on_joint_states(serialize_message(msg))


def parts(node, msg):
    """
    Return {name: callable} of the parts of a tick, with the node's and its runtime's objects.

    The ticks get a state stamped just before: with the valve compensation's prediction, a
    tick's cost grows with its state's age, which in a live loop is a period or two.
    """
    runtime = node.runtime
    loop = runtime.loop
    t = node.now()
    q_des, qd_des, qdd_des = loop.reference.sample(t)
    settings = loop.settings
    low, high = loop._effort_range
    tau = loop.effort.copy()
    message_pub = node.create_publisher(Float64MultiArray, '~/commands_message', 10)
    message = Float64MultiArray()

    def publish_message():
        message.data = loop.command.tolist()
        message_pub.publish(message)

    def tick_end():
        runtime.timing.end(runtime._record, t, 1, True, 0.0, -2e-3, -5e-4, 8e-5, t, True, True,
                           loop.command)

    return {
        'reference sample (clamped to the limits)': lambda: loop.reference.sample(t),
        'law (model call + NumPy)': lambda: loop.law(loop.q, loop.qd, loop.q_des, loop.qd_des,
                                                     loop.qdd_des),
        'model call alone': lambda: loop.model.inverse_dynamics(loop.q, loop.qd,
                                                                loop.qdd_des),
        'effort check, clamp + rate limit': lambda: loop._limit_effort(tau, low, high,
                                                                       loop._step, loop.effort),
        'pressure map + order': lambda: np.take(settings.actuation.pressure(loop.effort),
                                                settings.order, out=loop.command),
        'publish: message': publish_message,
        'publish: bytes': lambda: node.command_out.publish(loop.command),
        'clock now (node.now)': node.now,
        'state in (stamp, serialize, _on_joint_states)': lambda: fresh_state(node, msg),
        'state in + whole tick': lambda: (fresh_state(node, msg), runtime.tick(node.now())),
        'tick end: durations + ~/state row (loop thread)': tick_end,
        '~/state publish (executor)': lambda: node._send_loop_output(),
        'diagnostics (1 Hz)': node._diagnostics,
    }


def main():
    """Print the median of each part and its share of the whole tick."""
    with tempfile.TemporaryDirectory() as directory:
        path = params(directory, 1000.0)
        with controller_in_process(path, '-p', 'state_decimation:=1000', '-p',
                                   'state_timeout:=10.0') as (node, msg):
            runtime = node.runtime
            for _ in range(runtime.loop.settings.resume_count + 1):
                fresh_state(node, msg)
                runtime.tick(node.now())    # each state counts towards the resume once
            if runtime.status != 'active':
                raise SystemExit(f'controller is {runtime.status}, not active')
            functions = parts(node, msg)
            rounds = {name: [] for name in functions}
            for _ in range(ROUNDS):
                for name, function in functions.items():
                    fresh_state(node, msg)
                    runtime.tick(node.now())
                    calls = 5 if name.startswith('diagnostics') else CALLS
                    rounds[name].append(median_us(function, calls))
                    if name in WOKEN:
                        rounds.setdefault(f'{name}, woken', []).append(
                            median_us(function, CALLS // 10, pause=1e-3))
                        rounds.setdefault(f'{name}, woken + spin', []).append(
                            median_us(function, CALLS // 10, pause=0.8e-3, spin=0.2e-3))
    whole = np.median(rounds['state in + whole tick'])
    for name, values in rounds.items():
        value = np.median(values)
        print(f'{name:<48} {value:8.1f} us  {value / whole:6.1%} of a tick')


if __name__ == '__main__':
    main()
