"""
Replay the controller's stamped commands late, from beside it on the two-host rig.

    ip netns exec NEAR python test/support/rig_late_command.py COUNT [AGE]

Hears the controller's `~/commands` (`output.message: joint_state`), then publishes COUNT
times, 50 ms apart, the command it heard AGE s ago (default 0.5), unchanged: as a network
queue or a replaying switch would deliver it, with the stamp of the tick that made it.
Prints the number published. A driver that checks stamps must drop every one.
"""

import sys
import time

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState

from continuum_ctrl.params.launch_description import CONTROLLER
from continuum_ctrl.ros.conversion import stamp_seconds
from continuum_ctrl.ros.plumbing import single_threaded_executor

#: s between two replays: the histories (depth 10) keep all of them
PACE = 0.05
#: s to wait for the controller's commands and the simulator's subscription
PATIENCE = 30.0


def main(count, age=0.5):
    """Replay `count` commands `age` s old; return the number published."""
    count, age = int(count), float(age)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('rig_late_command', context=context)
    executor = single_threaded_executor(events=False, context=context)
    executor.add_node(node)
    heard = []
    topic = f'/{CONTROLLER}/commands'
    node.create_subscription(JointState, topic, heard.append, QoSProfile(depth=1000))
    replay = node.create_publisher(JointState, topic, QoSProfile(depth=10))
    end = time.monotonic() + PATIENCE
    while time.monotonic() < end and not (
            replay.get_subscription_count() >= 2 and heard
            and stamp_seconds(heard[-1].header.stamp) - stamp_seconds(heard[0].header.stamp)
            > age + 0.1):
        executor.spin_once(timeout_sec=0.01)
    sent = 0
    while sent < count and time.monotonic() < end:
        executor.spin_once(timeout_sec=PACE)
        target = stamp_seconds(heard[-1].header.stamp) - age
        replay.publish(min(heard, key=lambda msg: abs(stamp_seconds(msg.header.stamp) -
                                                      target)))
        sent += 1
    replay.wait_for_all_acked(Duration(seconds=5.0))     # all across before the node goes
    node.destroy_node()
    rclpy.shutdown(context=context)
    return sent


if __name__ == '__main__':
    print(main(*sys.argv[1:]), flush=True)
