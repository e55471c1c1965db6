"""
The ROS 2 edge, the only rclpy code: nodes, parameters, conversion, plumbing, recording.

- `controller_node` (a LifecycleNode) and `simulator_node`: the two nodes;
- `node_settings`: the nodes' own settings (no rclpy), and the parameter-file check that the
  launcher and the demo run before starting nodes;
- `parameters`: declaration from the field tables, all-or-nothing updates;
- `plumbing`: executor choice, heap settling, log lines, `spin` (both nodes);
- `controller_input`, `conversion`: messages to checked arrays; `loop_runner`: the loop
  thread (or sim-time timer) that ticks the ROS-free `runtime.ControllerRuntime`;
  `task_topics`, `state_message`, `diagnostics`: the controller's other topics;
- `recorder`, `closed_loop_demo`: the demo and the tests' listener.
"""
