"""
Helpers for the node tests: parameter files, node processes, a recorder.

Nodes are started with the exact command lines of continuum_ctrl.params.launch_description.
"""

import contextlib
import threading
from pathlib import Path

import yaml

from continuum_ctrl.params import read_yaml
from continuum_ctrl.params.launch_description import (config_path, CONTROLLER, controller,
                                                      simulation)
from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.apps.node_pair import command_message
from continuum_ctrl.ros.recorder import Recorder

#: seconds a node gets to start and the controller to become active (loaded 2-core machine)
START_TIMEOUT = 90.0


#: longest hold of one command (s; the loop's longest tick period, or a gap in a recording)
#: and plant steps the simulator may drop, in a measured span, before its tracking figures
#: are the machine's rather than the controller's: a shared 2-core machine stalls both nodes
#: for hundreds of milliseconds at times (CI: 8 % of a 500 Hz demo's ticks missing), and the
#: arm drifts on its last command meanwhile
STALL_GAP, STALL_OVERRUNS = 0.04, 10


#: seconds to wait for one service response before asking again (idempotent requests only)
RESPONSE_WAIT = 5.0


def call_service(rec, service_type, name, request, node=CONTROLLER, timeout=30.0,
                 idempotent=True):
    """
    Call service `name` of `node` from the recorder's node; return the response (None: none).

    A server drops its response when it has not yet matched a new client's response reader
    (Fast DDS: "failed to send response (timeout)", ros2/rclcpp#2760), more often on a loaded
    machine; the client then waits for ever. So an `idempotent` request is sent again every
    RESPONSE_WAIT s until `timeout`; another is sent once, and None says that no response came.
    """
    client = rec.node.create_client(service_type, f'/{node}/{name}')
    assert client.wait_for_service(timeout_sec=timeout), f'no service /{node}/{name}'
    attempts = max(int(timeout // RESPONSE_WAIT), 1) if idempotent else 1
    for _ in range(attempts):
        future = client.call_async(request)
        if rec.wait(future.done, timeout / attempts):
            return future.result()
        client.remove_pending_request(future)
    assert not idempotent, f'no response from /{node}/{name} within {timeout} s'
    return None


def in_thread(function):
    """Run `function` in a new thread; return its result."""
    result = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


def merge(tree, update):
    """Return `tree` updated recursively by `update` (nested dicts)."""
    out = dict(tree)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def params_file(tmp_path, base, **nodes):
    """
    Write a copy of config/`base` (a file, or files merged in order) with node sections
    updated; return its path.

    Keyword arguments: node name (or 'all' for ``/**``) -> nested parameters to merge, e.g.
    ``continuum_controller={'gains': {'kp': [1.0, 2.0]}}``.
    """
    data = {}
    for path in ([base] if isinstance(base, (str, Path)) else base):
        for key, section in read_yaml(config_path(path)).items():
            merged = merge(data.get(key, {}).get('ros__parameters', {}),
                           section.get('ros__parameters', {}))
            data[key] = {'ros__parameters': merged}
    for node, update in nodes.items():
        key = '/**' if node == 'all' else node
        section = data.get(key, {}).get('ros__parameters', {})
        data[key] = {'ros__parameters': merge(section, update)}
    path = Path(tmp_path) / f'params_{len(list(Path(tmp_path).glob("params_*")))}.yaml'
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def stall_of(gap, dropped, stale=0):
    """
    Return what stalled the nodes, when one command was held over STALL_GAP (`gap`, s), the
    simulator dropped more than STALL_OVERRUNS plant steps, or commands stopped reaching it
    for longer than its `command_timeout` (`stale` times: its PMAs then vented while the
    controller went on ticking, and the arm fell); else None.
    """
    if gap > STALL_GAP or dropped > STALL_OVERRUNS or stale > 0:
        return (f'the machine stalled the nodes: one command held for {gap * 1e3:.0f} ms, '
                f'{dropped} plant steps dropped, commands gone stale {stale:.2g} times')
    return None


def stall(rec, since):
    """
    Return `stall_of` the span after `since` (s): the loop's longest tick period in the
    diagnostics windows published after it (the first may begin before it), the plant
    steps dropped and its commands gone stale.
    """
    periods = [float(values.get('period_max_us', 0.0)) * 1e-6
               for stamp, values in zip(rec.diagnostic_stamps, rec.diagnostics)
               if stamp > since]
    return stall_of(max(periods, default=0.0), rec.grown('overruns', since, simulator=True),
                    rec.grown('stale_commands', since, simulator=True))


def unstalled(measure, attempts=2):
    """
    Return the figures of ``measure()`` (it returns ``(figures, stall(...))``) from a run
    that no stall spoiled, measuring again up to `attempts` times in all; the last
    attempt's figures are returned whatever its stall (the test judges them), which is
    printed.
    """
    for attempt in range(1, attempts + 1):
        figures, stalled = measure()
        if stalled is None:
            return figures
        print(f'\nattempt {attempt} of {attempts}: {stalled}')
    return figures


def windows(rec, since=0, sim_since=0):
    """
    Return the diagnostics windows from index `since` (`sim_since`) on, in short: what a
    failed bound on a loaded machine needs to say which side stalled.

    Per controller window: status, the p99 age of the state a tick used and the p99 latency
    of the states received (ms), the longest tick period (ms); per simulator window, the
    commands it accepted per plant step (0: none reached it).
    """
    def ms(values, key):
        return round(float(values.get(key, 'nan')) / 1e3, 1)
    loop = [(w['status'], ms(w, 'input_age_p99_us'), ms(w, 'state_latency_p99_us'),
             ms(w, 'period_max_us')) for w in rec.diagnostics[since:]]
    plant = [w.get('commands_per_step') for w in rec.sim_diagnostics[sim_since:]]
    return (f'controller (status, input age p99 ms, state latency p99 ms, period max ms): '
            f'{loop}; simulator commands per step: {plant}')


@contextlib.contextmanager
def launched(tmp_path, nodes, **recorder):
    """
    Start `nodes` with logs in `tmp_path`; yield ``(recorder, processes, tails)``.

    `recorder`: the Recorder's options; `tails()` returns the last lines of the logs. On
    exit every process is stopped and its log closed, whatever happened.
    """
    logs = [open(Path(tmp_path) / f'{node.name}.log', 'w') for node in nodes]

    def tails():
        for log in logs:
            log.flush()
        return '\n'.join(Path(log.name).read_text()[-3000:] for log in logs)

    processes = []
    try:
        processes = start(nodes, outputs=logs)
        with Recorder(**recorder) as rec:
            yield rec, processes, tails
    finally:
        stop(processes)
        for log in logs:
            log.close()


@contextlib.contextmanager
def running(tmp_path, path, with_simulator=True):
    """
    Run the controller (and simulator) from `path`; yield ``(recorder, processes)``.

    Waits until the controller's loop is active (with the simulator) or until its first
    `~/state` message; fails with the nodes' logs when they do not start. When the body
    fails, the logs' tails go to stdout, which pytest shows with the failure.
    """
    nodes = simulation(path) if with_simulator else controller(path)
    with launched(tmp_path, nodes, message=command_message(path)) as (rec, processes, tails):
        ready = (lambda: rec.active_since is not None) if with_simulator else (
            lambda: rec.status is not None)
        if not rec.wait(ready, START_TIMEOUT, processes):
            last = rec.diagnostics[-1] if rec.diagnostics else None
            raise AssertionError(f'nodes did not start: status {rec.status}, '
                                 f'{len(rec.states)} states, diagnostics {last}, '
                                 f'simulator {rec.sim_diagnostics[-1:]}\n{tails()}')
        try:
            yield rec, processes
        except Exception:
            print(f'the nodes\' logs, last lines:\n{tails()}')
            raise
