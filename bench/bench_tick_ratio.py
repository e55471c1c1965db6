"""
The controller tick against its model call, per shipped config, in one process and one run.

For each config (the controller's loop and the simulator's plant of the file, without ROS:
`node_pair`), the loop is brought active on the plant's resting state (for the Gazebo file,
which has no simulator, the middle of the joint limits) and run past its blend
(a tip reference's plan made and installed). Then, in interleaved rounds (medians of round
medians, us):
- ``tick``: a fresh state in (`ControlLoop.set_state`, measured one period before) and
  `ControlLoop.tick`, the clock moving by one period per call;
- ``runtime``: the same through the node's `ControllerRuntime` (`post_state`, `tick`: the
  hand-off, the timing figures, the starvation window and the ``~/state`` row around it);
- ``bytes``: the runtime tick handing its command to the node's publisher, which serializes
  it (`ros.fast_publish.CommandPublisher.serialize`) but does not publish: state in, tick,
  the command's bytes;
- ``published``: the same, the bytes published by rclpy on an in-process node without
  subscribers: what the node's loop thread runs;
- ``stamped``: ``published`` with ``output.message: joint_state`` (a JointState of the joint
  names, stamped with the tick's time);
- ``publish``: a publish alone of the same command as rclpy makes it, the baseline: its bytes
  (`CommandPublisher.serialize`) handed to ``Publisher.publish``, rclpy's public call. The
  node's `CommandPublisher.publish` holds the publisher's handle and skips that call's guard
  and checks (ros/fast_publish.py), about 0.5 us less;
- ``model``: the model call alone at the tick's state and desired acceleration:
  `inverse_dynamics` (the CoG kernel for the continuum arms, the generated code for the
  symbolic one), ``pinocchio.rnea`` for the Pinocchio arms;
and the ratios to the model call: tick, runtime, bytes, published and stamped against the
model;
published against the model plus the publish (the measure for the Pinocchio arms, whose
model call is about as cheap as a publish). Run: ``python bench/bench_tick_ratio.py``
(~40 s), or with config names to run only those. ``continuum_observer`` is the continuum
file with ``observer.type: kalman`` (control/observer.py), ``continuum_friction`` with
``output.friction`` and ``output.area_slope`` (docs/pma-model.md), ``continuum_unlearnt``
with ``gains.learn_window: 0`` (docs/law.md).
"""

import sys
import time

import numpy as np
import pinocchio as pin
import rclpy

from continuum_ctrl.control.loop import ACTIVE
from continuum_ctrl.models.rigid import RigidModel
from continuum_ctrl.apps.node_pair import controller_runtime, node_pair
from continuum_ctrl.ros.fast_publish import CommandPublisher

ROUNDS = 15
CALLS = 200
#: the shipped configs, each a file list as a controller is given it (overlays last)
CONFIGS = {'continuum_3section': ['continuum_3section.yaml'],
           'continuum_task': ['continuum_3section.yaml', 'continuum_task.yaml'],
           'identify_excitation': ['continuum_3section.yaml', 'identify_excitation.yaml'],
           'panda': ['panda.yaml'],
           'gazebo_arm': ['gazebo_arm.yaml'],
           'planar_2r': ['planar_2r.yaml'],
           'continuum_observer': ['continuum_3section.yaml'],
           'continuum_friction': ['continuum_3section.yaml'],
           'continuum_unlearnt': ['continuum_3section.yaml']}
#: controller overrides of a config (by name): the continuum file with its state observed,
#: with the PMAs' falling area and friction feed-forward (docs/pma-model.md), and without
#: its learnt stiffness (docs/law.md)
OVERRIDES = {'continuum_observer': {'observer.type': 'kalman'},
             'continuum_friction': {'output.friction': [2.0], 'output.area_slope': [0.15]},
             'continuum_unlearnt': {'gains.learn_window': 0.0}}


def median_us(function, calls=CALLS):
    """Return the median duration (us) of `function()` over `calls` calls."""
    times = np.empty(calls)
    for k in range(calls):
        start = time.perf_counter()
        function()
        times[k] = time.perf_counter() - start
    return float(np.median(times)) * 1e6


def active_loop(paths, with_plant=True, overrides=None):
    """Return ``(runtime, q, qd, t)``: the file's runtime, its loop active past its blend."""
    if with_plant:          # at the plant's resting state
        runtime, plant = node_pair(paths, overrides)
        q, qd = (np.array(v) for v in plant.measure())
        loop = runtime.loop
    else:                   # no simulator in the file: the middle of the joint limits, at rest
        runtime = controller_runtime(paths)
        loop = runtime.loop
        low, high = (np.clip(b, -3.0, 3.0) for b in (loop.low, loop.high))
        q, qd = 0.5 * (low + high), np.zeros(loop.model.n)
    loop.warm_up()
    t, period = 0.0, loop.period
    blend = loop.settings.reference.blend_time
    while loop.status != ACTIVE or loop.awaiting_plan or t < blend + 2 * period:
        loop.set_state(q, qd, t, t - period)
        loop.tick(t)
        loop.planner.step()
        t += period
        if t > blend + 60.0:
            raise RuntimeError(f'{paths}: the loop did not become active')
    return runtime, q, qd, t


def model_call(loop, q, qd):
    """Return the model call alone, at `q`, `qd` and the loop's desired acceleration."""
    model, qdd = loop.model, loop.qdd_des.copy()
    if isinstance(model, RigidModel):
        return lambda: pin.rnea(model.model, model.data, q, qd, qdd)
    return lambda: model.inverse_dynamics(q, qd, qdd)


def measure(paths, node, overrides=None):
    """Return ``(tick, runtime, bytes, published, stamped, publish, model)`` us for `paths`."""
    runtime, q, qd, t = active_loop(paths, paths != ['gazebo_arm.yaml'], overrides)
    loop = runtime.loop
    clock = [t]
    period = loop.period
    publisher = CommandPublisher(node, 'commands', loop.settings.joints)
    stamped = CommandPublisher(node, 'stamped_commands', loop.settings.joints, 'joint_state')

    def tick():
        now = clock[0]
        loop.set_state(q, qd, now, now - period)
        loop.tick(now)
        clock[0] = now + period

    def runtime_tick():
        now = clock[0]
        runtime.post_state(q, qd, now, now - period)
        runtime.tick(now)
        clock[0] = now + period

    def sending(send):
        """Return the median time of the runtime tick with `send` as its command's destination."""
        runtime.send = send
        try:
            return median_us(runtime_tick)
        finally:
            runtime.send = None
    command = loop.command.copy()
    model = model_call(loop, q, qd)
    rounds = np.array([(median_us(tick), median_us(runtime_tick), sending(publisher.serialize),
                        sending(publisher.publish), sending(stamped.publish),
                        median_us(lambda: publisher.publisher.publish(
                            publisher.serialize(command))), median_us(model))
                       for _ in range(ROUNDS)])
    if loop.status != ACTIVE:
        raise RuntimeError(f'{paths}: the loop left control ({loop.status})')
    for made in (publisher, stamped):
        made.close()
        node.destroy_publisher(made.publisher)
    return tuple(np.median(rounds, axis=0))


def main(names=None):
    """Print the times (us) and ratios per config (all of `CONFIGS` by default)."""
    print(f'{"config":20s} {"tick":>6s} {"runtime":>8s} {"bytes":>6s} {"published":>9s} '
          f'{"stamped":>8s} {"publish":>8s} {"model":>6s}   ratios: tick runtime bytes '
          f'published stamped /model, published /(model+publish)')
    rclpy.init()
    node = rclpy.create_node('bench_tick_ratio')
    try:
        for name in names or CONFIGS:
            tick, runtime, data, published, stamped, publish, model = measure(
                CONFIGS[name], node, OVERRIDES.get(name))
            print(f'{name:20s} {tick:6.1f} {runtime:8.1f} {data:6.1f} {published:9.1f} '
                  f'{stamped:8.1f} {publish:8.1f} {model:6.1f}   {tick / model:4.1f} '
                  f'{runtime / model:4.1f} {data / model:4.1f} {published / model:4.1f} '
                  f'{stamped / model:4.1f} {published / (model + publish):4.1f}', flush=True)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == '__main__':
    main(sys.argv[1:])
