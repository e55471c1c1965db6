"""
A calibration run in process: the tip visiting the workspace, recorded as a bag.

    goals = workspace_tour(model, frame, count)       # tip targets around the axis
    record_calibration(runtime, plant, 60.0, 'calib.mcap', goals)

The nodes' loop and plant run in one process (sim.closed_loop.simulate_nodes) with the
plant's motion capture on (`mocap.rate_hz`); the joint states and the captured tips the loop
receives are written, with their header stamps (the measurement) and publication times, to
a rosbag2 MCAP bag on /joint_states and /mocap/tip: what `ros2 bag record /joint_states
/mocap/tip` gives through the nodes while the tip is sent to the same targets
(docs/task-space.md).
"""

import numpy as np

from continuum_ctrl.identify.bag import BagWriter, stamp
from continuum_ctrl.params.launch_description import MOCAP_TOPIC
from continuum_ctrl.sim.closed_loop import simulate_nodes

#: the bag's clock origin, s since 1970 (a zero header stamp means none)
ORIGIN = 1_700_000_000
#: the golden ratio's fraction: successive distances that never repeat and fill a range evenly
GOLDEN_RATIO = 0.5 * (np.sqrt(5.0) - 1.0)


def bent_tip(model, frame, radius, angle, rest=0.013, stroke=0.012):
    """
    Return the tip `radius` m off the axis, bent towards `angle` rad, about mid-stroke.

    Every section bends the same way about `rest` m per PMA (the PMA at 120 k degrees
    shortens by ``a cos(angle - 120 k deg)``, ``a`` up to `stroke`, found by bisection): a pose
    well inside the strokes.
    """
    shape = -np.tile(np.cos(angle - np.radians([0.0, 120.0, 240.0])), model.n // 3)
    low, high = 0.0, stroke
    for _ in range(50):
        a = 0.5 * (low + high)
        tip = model.frame_pose(rest + a * shape, frame)[:3, 3]
        low, high = (a, high) if np.hypot(*tip[:2]) < radius else (low, a)
    return tip


def workspace_tour(model, frame, count, radii=(0.2, 0.5), turns=2, start=0.3):
    """
    Return `count` tip targets visiting the workspace: `turns` turns about the axis.

    Bearings in equal steps (near neighbours: short moves), distances off the axis spread
    over `radii` (m) by the golden ratio, so every sector of bearings sees near and far reach.
    """
    k = np.arange(count)
    distance = radii[0] + (radii[1] - radii[0]) * ((k * GOLDEN_RATIO) % 1.0)
    bearing = start + 2.0 * np.pi * turns * k / count
    return [bent_tip(model, frame, r, a) for r, a in zip(distance, bearing)]


def record_calibration(runtime, plant, duration, path, goals, first=1.0):
    """
    Send the tip to `goals` in turn from `first` s, over `duration` s; write the bag `path`.

    Returns the NodeLoopLog. The runtime's input methods are wrapped for the run: each joint
    state and captured tip it is handed is also written (model order, the model's joint names).
    """
    names = list(runtime.loop.model.joint_names)
    frame_id = plant.settings.mocap.frame_id
    dwell = (duration - first) / len(goals)
    pending = [(first + k * dwell, goal) for k, goal in enumerate(goals)]
    post_state, post_tip = runtime.post_state, runtime.post_tip
    with BagWriter(path) as bag:
        def state(q, qd, t, measured_at=None, latency=None):
            bag.write('/joint_states', 'sensor_msgs/msg/JointState',
                      {'header': {'stamp': stamp(ORIGIN + (t if measured_at is None
                                                           else measured_at)),
                                  'frame_id': ''}, 'name': names, 'position': list(q),
                       'velocity': [], 'effort': []}, ORIGIN * 10 ** 9 + round(t * 1e9))
            post_state(q, qd, t, measured_at, latency)

        def tip(position, measured, t):
            x, y, z = (float(v) for v in position)
            bag.write(MOCAP_TOPIC, 'geometry_msgs/msg/PoseStamped',
                      {'header': {'stamp': stamp(ORIGIN + measured), 'frame_id': frame_id},
                       'pose': {'position': {'x': x, 'y': y, 'z': z},
                                'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}},
                      ORIGIN * 10 ** 9 + round(t * 1e9))
            return post_tip(position, measured, t)

        def send(k, t):
            while pending and pending[0][0] <= t:
                runtime.request_tip_target(pending.pop(0)[1])

        runtime.post_state, runtime.post_tip = state, tip
        try:
            return simulate_nodes(runtime, plant, duration, send)
        finally:
            del runtime.post_state, runtime.post_tip
