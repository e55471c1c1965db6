"""
The commands, the top layer: each joins the layers below for one job (`continuum-ctrl COMMAND`).

- `cli`: `continuum-ctrl COMMAND ...`, one module per command;
- without ROS: `simulate` (the two nodes' cycle in one process), `warm` (compile the kernels),
  `tune` (margins and gains), `identify` (fits to recorded runs), `docs` (the parameter
  reference), with `node_pair` (a parameter file read as the two nodes read it, and checked
  before any node starts);
- over ROS 2: `demo` (the closed loop as two node processes, recorded; `task_plot`),
  `launch` (node processes started and stopped without `ros2 launch`), `record`, `echo`,
  `param` (stand-ins for the ros2cli verbs).

`derive` and `fit-betas` keep their modules in `models/` (`symbolic_export`,
`continuum.fit`), beside the code they print and fit.
"""
