"""
`continuum-ctrl COMMAND ...`: the package's commands, each in its own module.

    continuum-ctrl demo        closed loop over ROS 2: simulator and controller processes
    continuum-ctrl simulate    closed loop in one process, without ROS
    continuum-ctrl derive      print/export C(q, qd) and g(q) of a symbolic model
    continuum-ctrl fit-betas   fit the CoG model's energy-shaping coefficients
    continuum-ctrl launch      run a launch description's nodes without `ros2 launch`
    continuum-ctrl tune        margins of the loop over plant errors, and gains that keep them
    continuum-ctrl identify    fit PMA parameters or a URDF arm's inertia to recorded runs
    continuum-ctrl commission  a new arm to a tuned file: excite, record, identify, tune, verify
    continuum-ctrl record      record topics into a rosbag2 MCAP file without ros2cli
    continuum-ctrl warm        compile the continuum kernels once, after installing
    continuum-ctrl echo        print the messages of a topic (no ros2cli needed)
    continuum-ctrl param       get or set a running node's parameter (no ros2cli needed)
    continuum-ctrl docs        write docs/parameters.md from the parameter tables
"""

import sys
from importlib import import_module

from continuum_ctrl.params import ConfigError

COMMANDS = {
    'demo': ('continuum_ctrl.apps.demo',
             'closed loop over ROS 2 topics: simulator and controller processes'),
    'simulate': ('continuum_ctrl.apps.simulate', 'closed loop in one process, without ROS'),
    'derive': ('continuum_ctrl.models.symbolic_export',
               'print or export C(q, qd) and g(q) of a symbolic model'),
    'fit-betas': ('continuum_ctrl.models.continuum.fit',
                  "fit the CoG model's energy-shaping coefficients"),
    'launch': ('continuum_ctrl.apps.launch',
               "run a launch description's nodes as processes, without ros2 launch"),
    'tune': ('continuum_ctrl.apps.tune',
             'margins of the loop over a box of plant errors, and gains that keep them'),
    'identify': ('continuum_ctrl.apps.identify',
                 "fit PMA parameters or a URDF arm's inertial parameters to recorded runs"),
    'commission': ('continuum_ctrl.apps.commission',
                   'excite, record, identify, tune and verify an arm through its driver'),
    'record': ('continuum_ctrl.apps.record', 'record topics into a rosbag2 MCAP file'),
    'warm': ('continuum_ctrl.apps.warm',
             'compile the continuum Numba kernels into their cache (after installing)'),
    'echo': ('continuum_ctrl.apps.echo', 'print the messages of a topic, like ros2 topic echo'),
    'param': ('continuum_ctrl.apps.param',
              "get or set a running node's parameter, like ros2 param get/set"),
    'docs': ('continuum_ctrl.apps.docs',
             'write the parameter reference docs/parameters.md from the Field tables'),
}


def usage():
    """Return the command list."""
    lines = ['usage: continuum-ctrl COMMAND [ARGS...]', '', 'commands:']
    lines += [f'  {name:<10} {text}' for name, (_, text) in COMMANDS.items()]
    return '\n'.join(lines)


def main(argv=None):
    """Run one command through its own module; a ConfigError exits with status 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ('-h', '--help') or argv[0] not in COMMANDS:
        print(usage(), file=sys.stderr if argv and argv[0] not in ('-h', '--help') else sys.stdout)
        return 0 if argv and argv[0] in ('-h', '--help') else 2
    module = import_module(COMMANDS[argv[0]][0])
    try:
        return module.main(argv[1:]) or 0
    except ConfigError as exc:
        print(f'continuum-ctrl {argv[0]}: error: {exc}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
