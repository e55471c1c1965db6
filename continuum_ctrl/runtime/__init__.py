"""
What runs the control loop, without ROS: imports params, numerics and control only.

    from continuum_ctrl.runtime.controller_runtime import ControllerRuntime
    runtime = ControllerRuntime(loop, options)   # the node, simulate and the tests drive it

- `controller_runtime`: the loop with its hand-offs, timing figures and starvation detector;
- `handoff`, `snapshot_ring`: the lock-free state hand-off in, the ~/state rows out;
- `timing`, `starvation`, `lateness`: the figures and the one definition of a late tick;
- `tick_record`: a tick's deadline, durations and ~/state row, recorded by compiled calls;
- `loop_thread`, `scheduling`: the loop thread at absolute deadlines, SCHED_FIFO;
- `throttle`: log lines at most once per interval;
- `node_settings`: the runtime's and the loop thread's options (`ControllerNodeSettings`: rate,
  priority, thresholds), parsed from the node's own parameters.
"""
