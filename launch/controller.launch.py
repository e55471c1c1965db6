"""
Launch the controller alone, for hardware: `ros2 launch continuum_ctrl controller.launch.py`.

Arguments: `params_file` (default: the reference continuum arm; several files separated by
spaces merge in order, an overlay last), `use_sim_time`, and
`commands_topic`: where `~/commands` goes, e.g. ``/effort_controller/commands`` for a
ros2_control ForwardCommandController, or a driver's command topic with
``output.message: joint_state`` (default: not remapped).
The node list comes from continuum_ctrl.params.launch_description, as for `continuum-ctrl launch`.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from continuum_ctrl.params.launch_description import config_path, controller, DEFAULT_PARAMS


def nodes(context):
    """Return the controller node of the `params_file` argument's files (split at spaces)."""
    files = LaunchConfiguration('params_file').perform(context).split()
    use_sim_time = LaunchConfiguration('use_sim_time')
    commands_topic = LaunchConfiguration('commands_topic')
    return [Node(package=d.package, executable=d.executable, name=d.name,
                 parameters=[*map(str, d.parameters),
                             {'use_sim_time': ParameterValue(use_sim_time, value_type=bool)}],
                 remappings=list(d.remappings) + [('~/commands', commands_topic)],
                 output='screen')
            for d in controller(files)]


def generate_launch_description():
    """Return the launch description of the controller node."""
    return LaunchDescription([
        DeclareLaunchArgument('params_file', default_value=str(config_path(DEFAULT_PARAMS)),
                              description='ROS 2 parameter file(s) of the controller, '
                                          'separated by spaces, merged in order'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (true in Gazebo)'),
        DeclareLaunchArgument('commands_topic', default_value='~/commands',
                              description='topic of the commands, e.g. a ros2_control '
                                          'forward command controller'),
        OpaqueFunction(function=nodes),
    ])
