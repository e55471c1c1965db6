"""
The simulator's sensor: what a driver publishes of the plant's true state, as hardware has it.

    settings = SensorSettings.of(values)   # `noise.*`, `sensor.*`: the plant's parsed values
    sensor = Sensor(settings, n)
    sensor.record(q, qd)             # the plant's state after each step (model order)
    q, qd = sensor.read()            # what the sensor reads now (qd None without velocities)
    sample = sensor.publish(held, due)   # a publication due at `due` s: a Sample, None if lost

The sensor reads the true state of `sensor.delay` s ago (a ring of the last states, one per
plant step), adds Gaussian noise (`noise.*`), rounds positions to `sensor.quantization` (after
the noise, as an encoder counts) and leaves velocities out without `sensor.velocity`, as
string potentiometers, encoders and motion capture do. A state that held within a burst
(`noise.burst_*`: a loose connector, a sensor near a motor) has `noise.burst_position` in place
of `noise.position`. A publication is lost with probability
`sensor.drop` and held back by a uniform random 0..`sensor.jitter` s; its stamp is the time
the state held (`measurement`, what a driver should stamp) or its publication (`publish`).
Noise draws come from `noise.seed`'s generator exactly as before the other traits existed;
losses and holds from a second stream of the same seed, so each setting is repeatable and
turning one on leaves the others' draws alone. The defaults publish exact states, stamped at
the measurement.
"""

from collections import deque
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from continuum_ctrl.params import Check, Field

#: what the header stamp holds
STAMPS = ('measurement', 'publish')
#: the sensor's parameters, under `noise.*` and `sensor.*`
FIELDS = {
    'noise.position': Field('number', 0.0, 'std. dev. of position noise, m or rad', 0.0, 1.0),
    'noise.velocity': Field('number', 0.0, 'std. dev. of velocity noise, m/s or rad/s', 0.0,
                            10.0),
    'noise.seed': Field('integer', 0, 'seed of the noise generator (and of sensor.drop and '
                        'sensor.jitter)', 0, 2 ** 31 - 1),
    'noise.burst_start': Field('numbers', ..., "when each burst of position noise starts, s on "
                               "the plant's clock, as push.start (none: no burst)", 0.0),
    'noise.burst_duration': Field('number', 2.0, 'how long each burst lasts, s', 0.0),
    'noise.burst_position': Field('number', 0.0, 'std. dev. of the position noise in a burst, m '
                                  'or rad, in place of noise.position', 0.0, 1.0),
    'sensor.velocity': Field('bool', True, 'publish velocities; false: `velocity` empty, '
                             'as string potentiometers, encoders and motion capture'),
    'sensor.quantization': Field('number', 0.0, 'position resolution, m or rad: positions '
                                 'rounded to it after the noise (0: none)', 0.0, 1.0),
    'sensor.delay': Field('number', 0.0, 'age of the published state at publication, s; a '
                          'whole number of plant steps', 0.0, 1.0),
    'sensor.stamp': Field('string', 'measurement', 'header stamp: the time the state held '
                          '(measurement) or the publication time (publish)', choices=STAMPS),
    'sensor.jitter': Field('number', 0.0, 'each publication held back by a uniform random '
                           '0..jitter s; less than the publishing period', 0.0, 1.0),
    'sensor.drop': Field('number', 0.0, 'probability that a sample is not published', 0.0,
                         1.0),
}


def _whole_steps(delay, step):
    """Whether `delay` is a whole number of plant steps of `step` s (to 1e-9 of a step)."""
    return not abs(delay - round(delay / step) * step) > 1e-9 * step


#: the checks of the sensor's keys against the plant's `step` and `publish_rate_hz`
CHECKS = (
    Check('sensor.delay', ('sensor.delay', 'step'), _whole_steps,
          lambda delay, step: f'must be a whole number of plant steps of {step} s, got '
                              f'{delay} s'),
    Check('sensor.jitter', ('sensor.jitter', 'publish_rate_hz'),
          lambda jitter, rate: not jitter >= 1.0 / rate,
          lambda jitter, rate: f'must be less than the publishing period {1.0 / rate:g} s, '
                               f'got {jitter} s'),
)


@dataclass(frozen=True)
class SensorSettings:
    """Validated sensor settings; `delay_steps`: `sensor.delay` in plant steps of `step` s."""

    noise_position: float = 0.0
    noise_velocity: float = 0.0
    seed: int = 0
    velocity: bool = True
    quantization: float = 0.0
    delay_steps: int = 0
    step: float = 0.001
    stamp: str = 'measurement'
    jitter: float = 0.0
    drop: float = 0.0
    bursts: Tuple[Tuple[float, float], ...] = ()
    burst_position: float = 0.0

    @classmethod
    def of(cls, values: Dict[str, Any]) -> 'SensorSettings':
        """Return the `noise.*` and `sensor.*` settings of the plant's parsed `values`."""
        step = values['step']
        return cls(noise_position=values['noise.position'],
                   noise_velocity=values['noise.velocity'], seed=values['noise.seed'],
                   velocity=values['sensor.velocity'],
                   quantization=values['sensor.quantization'],
                   delay_steps=round(values['sensor.delay'] / step), step=step,
                   stamp=values['sensor.stamp'], jitter=values['sensor.jitter'],
                   drop=values['sensor.drop'],
                   bursts=tuple((start, start + values['noise.burst_duration'])
                                for start in values.get('noise.burst_start', ())),
                   burst_position=values['noise.burst_position'])

    def position_noise(self, at: Optional[float]) -> float:
        """Return the position noise's std. dev. where a state held at `at` (plant's clock, s)."""
        if at is not None and any(start <= at < end for start, end in self.bursts):
            return self.burst_position
        return self.noise_position


@dataclass(frozen=True)
class Sample:
    """
    One publication: `q`, `qd` (None without velocities) in model order, SI units.

    `measured_at`: when the state held (s); `published`: when it goes out (s: due time plus
    its hold); `stamp`: its header stamp, one of the two as `sensor.stamp` says.
    """

    q: np.ndarray
    qd: Optional[np.ndarray]
    measured_at: float
    published: float
    stamp: float


class Sensor:
    """The sensor of one plant; see the module doc. `published` and `dropped` count samples."""

    def __init__(self, settings: SensorSettings, n: int):
        self.n = n
        self.noise = np.random.default_rng(settings.seed)
        self.timing = np.random.default_rng([settings.seed, 1])
        self.states: deque = deque(maxlen=settings.delay_steps + 1)
        self.settings = settings
        self.published = 0
        self.dropped = 0

    def update(self, settings: SensorSettings):
        """Take new settings; the recorded states are kept (as many as the new delay needs)."""
        self.settings = settings
        self.states = deque(self.states, maxlen=settings.delay_steps + 1)

    def restart(self, q, qd):
        """Forget the past: the arm rested at ``(q, qd)`` until now (a reset, a new grid)."""
        self.states.clear()
        self.states.append((q, qd))

    def record(self, q, qd):
        """Record the true state after a plant step (the arrays are not written afterwards)."""
        self.states.append((q, qd))

    def replace(self, q, qd):
        """Replace the newest state (the plant's own state changed without a step)."""
        self.states[-1] = (q, qd)

    def read(self, at=None):
        """
        Return ``(q, qd)``: the state `sensor.delay` ago, with noise and quantisation.

        `at`: the plant's clock (s since it started) when that state held, for the bursts;
        None: outside them.
        Before `delay` has passed since the last `restart` the arm rested: the oldest state.
        Without noise, quantisation or delay these are the plant's own arrays, as before.
        """
        s = self.settings
        q, qd = self.states[0]
        position = s.position_noise(at)
        if position or s.noise_velocity:
            q = q + position * self.noise.standard_normal(self.n)
            qd = qd + s.noise_velocity * self.noise.standard_normal(self.n)
        if s.quantization:
            q = np.round(q / s.quantization) * s.quantization
        return q, (qd if s.velocity else None)

    def publish(self, held: float, due: float,
                elapsed: Optional[float] = None) -> Optional[Sample]:
        """
        Return the sample published at `due` (s), None when it is lost (counted).

        `held`: the plant's time (s), when its newest state held; the sample's state held
        `sensor.delay` before it. `elapsed`: the plant's clock then (s since it started, as
        `push.start` counts it), which the bursts follow; None: before it starts.
        """
        s = self.settings
        age = s.delay_steps * s.step
        measured = held - age
        q, qd = self.read(None if elapsed is None else elapsed - age)
        if s.drop and self.timing.random() < s.drop:
            self.dropped += 1
            return None
        self.published += 1
        published = due + (self.timing.uniform(0.0, s.jitter) if s.jitter else 0.0)
        return Sample(q, qd, measured, published,
                      measured if s.stamp == 'measurement' else published)
