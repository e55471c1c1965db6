"""
Motion capture of the simulated arm's tip: the true tip measured as a tracking system does.

    capture = TipCapture(MocapSettings.of(values), plant)   # None when mocap.rate_hz is 0
    truth = capture.take()           # after each plant advance: measure when one is due
    for sample in capture.due(t): ...     # the samples whose latency has passed by t (s)

The simulator's `mocap.*` settings: `rate_hz` (0: no capture), `frame` (default: the last
section's tip of a continuum arm; a frame of the model, or a MuJoCo body, for other arms),
`noise` (m, one standard deviation per axis, Gaussian), `latency` (s from the measurement to
its publication), `dropouts` (pairs ``start, duration`` in s of the plant's time from its
start: windows without samples, as a marker hidden from the cameras) and `topic`. Each
sample is the tip's pose in the base frame at the plant's time it was taken (its `stamp`:
the measurement's moment, as capture systems stamp them), taken at the first plant state at
or after each ``k / rate_hz``.

What is measured is the engine's tip: with `engine: mujoco` the last disc's body of the
section (continuum arms; the disc stack bends under gravity and not at constant curvature,
so it differs from the controller's kinematics) or the MuJoCo body of that name (URDF
arms); the built-in engine integrates the model, whose tip is its own kinematics at the
plant's state (`frame_pose`): a constant-curvature arm without any kinematic gap, so the
capture there only adds noise, latency and dropouts.
"""

import collections
from dataclasses import dataclass
from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple

import numpy as np

from continuum_ctrl.params import ConfigError, Field
from continuum_ctrl.params.launch_description import MOCAP_TOPIC
from continuum_ctrl.sim.mujoco_arm import body_name

#: the simulator's `mocap.*` parameters
FIELDS = {
    'mocap.rate_hz': Field('number', 0.0, 'motion capture of the tip: samples per second (0: '
                           'none)', 0.0, 2000.0),
    'mocap.frame': Field('string', ..., "the frame captured; default: a continuum arm's last "
                         'section tip'),
    'mocap.topic': Field('string', MOCAP_TOPIC, 'topic of the captured tip '
                         "(geometry_msgs/PoseStamped in the base frame; the launch remaps the "
                         "controller's ~/tip_measured to the default)"),
    'mocap.frame_id': Field('string', 'base', 'frame_id of the captured tip: the base frame'),
    'mocap.noise': Field('number', 0.0, 'capture noise, m, one standard deviation per axis',
                         0.0, 0.1),
    'mocap.latency': Field('number', 0.0, 'capture latency: measurement to publication, s',
                           0.0, 1.0),
    'mocap.dropouts': Field('numbers', [], 'capture dropouts: pairs start, duration (s of '
                            "the plant's time) without samples"),
    'mocap.seed': Field('integer', 0, 'seed of the capture noise', 0, 2 ** 31 - 1),
}


@dataclass(frozen=True)
class MocapSettings:
    """The `mocap.*` settings (module doc); `dropouts` as ``((start, end), ...)`` s."""

    rate_hz: float = 0.0
    frame: Any = None
    topic: str = MOCAP_TOPIC
    frame_id: str = 'base'
    noise: float = 0.0
    latency: float = 0.0
    dropouts: Tuple[Tuple[float, float], ...] = ()
    seed: int = 0

    @classmethod
    def of(cls, values: Dict[str, Any]) -> 'MocapSettings':
        """Return the settings of parsed (flat) `values`; odd `dropouts`: ConfigError."""
        windows = [float(v) for v in values.get('mocap.dropouts', [])]
        if len(windows) % 2:
            raise ConfigError('mocap.dropouts', f'must be pairs start, duration: got '
                                                f'{len(windows)} numbers')
        return cls(values['mocap.rate_hz'], values.get('mocap.frame'), values['mocap.topic'],
                   values['mocap.frame_id'], values['mocap.noise'], values['mocap.latency'],
                   tuple((s, s + d) for s, d in zip(windows[::2], windows[1::2])),
                   values['mocap.seed'])


class TipSample(NamedTuple):
    """A captured tip: `pose` (4, 4) in the base frame [m], `stamp` and `published` (s)."""

    pose: np.ndarray
    stamp: float
    published: float


def true_tip(plant, frame):
    """
    Return ``() -> pose (4, 4)``: the tip of `plant`'s engine now, in the base frame [m].

    MuJoCo continuum arms: the last disc of section ``i`` of frame ``section{i}_tip``;
    other MuJoCo arms: the body named `frame`; the built-in engine: the model's `frame_pose`
    at the plant's state. Raises ConfigError('mocap.frame') for a frame it does not have.
    """
    engine = plant.engine
    if not hasattr(engine, 'data'):
        if frame not in plant.model.frame_names():
            raise ConfigError('mocap.frame', f"'{frame}' is not a frame of the plant's model")
        return lambda: plant.model.frame_pose(plant.q, frame)
    import mujoco
    name = frame
    if hasattr(engine, 'discs'):           # the continuum disc stack
        section = int(frame[len('section'):-len('_tip')]) if frame.startswith('section') \
            and frame.endswith('_tip') and frame[7:-4].isdigit() else 0
        if not 1 <= section <= len(engine.discs):
            raise ConfigError('mocap.frame', f"'{frame}': the continuum arm's frames are "
                                             f'section1_tip .. section{len(engine.discs)}_tip')
        name = body_name(section, engine.discs[section - 1])
    body = mujoco.mj_name2id(engine.model, mujoco.mjtObj.mjOBJ_BODY, name)
    if body < 0:
        raise ConfigError('mocap.frame', f"'{frame}' is not a body of the MuJoCo model")
    pose = np.eye(4)

    def measure():
        mujoco.mj_kinematics(engine.model, engine.data)   # the state after the last step
        pose[:3, :3] = engine.data.xmat[body].reshape(3, 3)
        pose[:3, 3] = engine.data.xpos[body]
        return pose.copy()
    return measure


def default_frame(model):
    """Return the last frame of a continuum arm's model (its tip), else None."""
    names = model.frame_names()
    return names[-1] if names and hasattr(model, 'backbone') else None


class TipCapture:
    """
    The capture of `plant`'s tip by `settings` (module doc).

    `taken`, `dropped` count the samples measured and those lost in dropouts.
    """

    def __init__(self, settings: MocapSettings, plant):
        frame = settings.frame or default_frame(plant.model)
        if frame is None:
            raise ConfigError('mocap.frame', 'is required for an arm that is not a continuum '
                                             'arm')
        self.settings, self.plant, self.frame = settings, plant, frame
        self.measure = true_tip(plant, frame)
        self.rng = np.random.default_rng(settings.seed)
        self.queue: collections.deque = collections.deque()
        self.origin = None                  # the plant's time of the first sample, s
        self.count = 0                      # samples due so far
        self.taken = self.dropped = 0

    def take(self) -> Optional[np.ndarray]:
        """
        Measure the tip when a sample is due at the plant's time (after an advance).

        Return the true pose (4, 4) when one was due, dropouts included, without noise or
        latency (the simulator's ground truth, for benchmarks), else None.
        """
        t = self.plant.t
        if t is None:
            return None
        if self.origin is None:
            self.origin = t
        period = 1.0 / self.settings.rate_hz
        if t + 1e-9 < self.origin + self.count * period:
            return None
        self.count = int((t + 1e-9 - self.origin) / period) + 1
        truth = self.measure()
        elapsed = t - self.origin
        if any(start <= elapsed < end for start, end in self.settings.dropouts):
            self.dropped += 1
            return truth
        pose = truth.copy()
        if self.settings.noise > 0.0:
            pose[:3, 3] += self.rng.normal(0.0, self.settings.noise, 3)
        self.queue.append(TipSample(pose, t, t + self.settings.latency))
        self.taken += 1
        return truth

    def due(self, t: float) -> Iterator[TipSample]:
        """Yield the samples published by `t` (s), oldest first."""
        queue = self.queue
        while queue and queue[0].published <= t + 1e-9:
            yield queue.popleft()
