"""
The control loop's supervisor: its status, the state watchdog, the safe command, failures.

    supervisor = loop.supervisor
    supervisor.status            # WAITING, ACTIVE, STALE or STOPPED
    supervisor.receive(t)        # a valid state received at t: the streak, the gap since
    supervisor.resume()          # True when the streak (re)starts control now (logged)
    supervisor.reject()          # a bad state: the streak restarts
    supervisor.watch(t)          # the watchdog, each tick: True while active
    supervisor.fail(problem)     # a failed tick: counted, logged once, the safe command
    supervisor.safe_command()    # zero effort, p_min (vent) or hold, in joints order
    supervisor.start(); supervisor.stop()
    supervisor.take_events()     # the (level, text) transitions to log, once

`reported(status, degraded)` is the one rule for the status a node reports: `degraded` while
active and starved, else the loop's own.
"""

from typing import List, Sequence, Tuple

import numpy as np

from continuum_ctrl.actuation.pressure_map import clamp_effort

#: loop status: no valid state yet, controlling, safe command after a state timeout, or
#: stopped (safe command until `start`); `LOOP_STATUSES`: all four
LOOP_STATUSES = WAITING, ACTIVE, STALE, STOPPED = 'waiting', 'active', 'stale', 'stopped'
#: status reported while the loop is active and misses too many deadlines
DEGRADED = 'degraded'
#: what `take_events` returns when nothing happened (no allocation per tick)
NO_EVENTS: Sequence[Tuple[str, str]] = ()


def reported(status: str, degraded: bool) -> str:
    """
    Return the status a node reports: `degraded` while active and starved, else `status`.

    A loop that is not active sends its safe command whatever its timing: its own status
    (stale, waiting, stopped) says more than its starvation.
    """
    return DEGRADED if degraded and status == ACTIVE else status


class Supervisor:
    """
    What decides whether a loop controls, and what it sends when it does not (module doc).

    `loop`: the ControlLoop whose `settings` (`state_timeout`, `resume_count`, `safe_mode`,
    the actuation), `model` and buffers (`q`, `effort`, `command`) it reads and writes.
    Public attributes: `status`, `valid_streak` (consecutive valid states), `last_state_time`
    (receive time of the last valid state, s), `timeouts` (times it went stale),
    `nonfinite` (ticks whose law failed),
    `failing` (the last tick's law failed) and `events` (transitions to log).
    """

    def __init__(self, loop) -> None:
        self._loop = loop
        self.status = WAITING
        self.valid_streak = 0
        self.last_state_time = -np.inf
        self.timeouts = 0
        self.nonfinite = 0
        self.failing = False
        self.events: List[Tuple[str, str]] = []

    def receive(self, t: float) -> float:
        """
        Count a valid state received at `t` (s); return the time since the previous one.

        The streak restarts after a gap longer than `state_timeout`: the states that resume
        control must be consecutive and fresh.
        """
        dt = t - self.last_state_time
        if dt > self._loop.settings.state_timeout:
            self.valid_streak = 0
        self.last_state_time = t
        self.valid_streak += 1
        return dt

    def resume(self) -> bool:
        """Return True (and log it) when the streak of valid states (re)starts control now."""
        if self.status in (WAITING, STALE) and \
                self.valid_streak >= self._loop.settings.resume_count:
            self.events.append(('info', 'valid joint states: control active, reference '
                                        'anchored at the measured pose'))
            self.status = ACTIVE
            return True
        return False

    def reject(self) -> None:
        """Count a rejected measurement against the streak needed to resume."""
        self.valid_streak = 0

    def watch(self, t: float) -> bool:
        """Watch the states at tick time `t` (s): active without fresh ones, go stale."""
        if self.status == ACTIVE:
            settings = self._loop.settings
            if t - self.last_state_time <= settings.state_timeout:
                return True
            self.status = STALE
            self.valid_streak = 0
            self.timeouts += 1
            self.events.append(('warn', f'no valid joint states for more than '
                                        f'{settings.state_timeout} s: safe command '
                                        f"('{settings.safe_mode}')"))
        return False

    def start(self) -> None:
        """(Re)start after `stop`: wait for `resume_count` valid states, then control."""
        self.status = WAITING
        self.valid_streak = 0
        self.last_state_time = -np.inf

    def stop(self) -> None:
        """Stop: the safe command until `start`."""
        self.status = STOPPED

    def fail(self, problem: str) -> np.ndarray:
        """Count a tick whose law failed (`problem` says how), log it once: the safe command."""
        self.nonfinite += 1
        if not self.failing:
            self.events.append(('error', f'the control law gave {problem}: safe command'))
        self.failing = True
        return self.safe_command()

    def take_events(self) -> Sequence[Tuple[str, str]]:
        """Return the ``(level, text)`` transitions since the last call, and forget them."""
        events = self.events
        if not events:
            return NO_EVENTS
        taken = events[:]
        events.clear()
        return taken

    def safe_command(self) -> np.ndarray:
        """
        Return the safe command (joints order, the loop's buffer); the status is unchanged.

        What the loop sends while not active; a node also sends it while its loop is starved.
        """
        loop = self._loop
        settings, model, effort = loop.settings, loop.model, loop.effort
        if settings.safe_mode == 'hold' and self.status != WAITING:
            hold = model.gravity_vector(loop.q) + model.passive_forces(loop.q, np.zeros(model.n))
            effort[:] = clamp_effort(hold, settings.effort_limit)
            if not np.all(np.isfinite(effort)):
                effort[:] = 0.0
        else:
            effort[:] = 0.0
        if settings.actuation is not None:
            loop.command[:] = settings.actuation.p_min[settings.order]
            effort[:] = settings.actuation.force(settings.actuation.p_min)
            return loop.command
        return loop.output()
