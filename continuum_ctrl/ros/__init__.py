"""
The ROS 2 edge, the only rclpy code: nodes, parameters, conversion, plumbing, recording.

- `controller_node` (a LifecycleNode) and `simulator_node`: the two nodes;
- `node_settings`: the nodes' own settings (no rclpy), and the parameter-file check that the
  launcher and the demo run before starting nodes;
- `parameters`: declaration from the field tables, all-or-nothing updates;
- `plumbing`: executor choice, heap settling, log throttling, `spin` (both nodes);
- `conversion`, `timing`, `scheduling`: messages to arrays, statistics, SCHED_FIFO;
- `recorder`, `closed_loop_demo`: the demo and the tests' listener.
"""
