"""
The ROS 2 edge, the only rclpy and message code: the nodes, their topics and parameters.

- `controller_node` (a LifecycleNode) and `simulator_node`: the two nodes;
- `parameters`: declaration from the field tables, all-or-nothing updates;
- `plumbing`: executor choice, heap settling, log lines, `spin` (both nodes);
- `raw_input`, `controller_input`, `command_input`: serialized input bounded, then read;
  `conversion`, `joint_state_cdr`: messages (and JointState's CDR bytes) to checked arrays
  by joint name; `fast_publish`: commands as pre-serialized bytes;
- `loop_runner`: the loop thread, or the executor timer on sim time, that ticks the ROS-free
  `runtime.ControllerRuntime`; `task_topics`, `task_messages`, `state_message`,
  `diagnostics`: the controller's other topics;
- `recorder`: the demo's and the tests' listener, to CSV rows and an MCAP bag.

`conversion`, `joint_state_cdr`, `controller_input`, `command_input` and `loop_runner` import
no rclpy themselves: they read message objects or their bytes, or drive the node's timer, and
serve only the nodes. The commands that use ROS (`demo`, `record`, `echo`, `param`) are in
`apps`; the nodes' own settings in `runtime.node_settings`.
"""
