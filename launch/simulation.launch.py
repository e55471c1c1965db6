"""
Launch controller and simulator: `ros2 launch continuum_ctrl simulation.launch.py`.

Arguments: `params_file` (default: the reference continuum arm; several files separated by
spaces merge in order, an overlay last: `params_file:="continuum_3section.yaml
continuum_task.yaml"`), `use_sim_time`. The simulator's `commands` is remapped to the
controller's `~/commands`.
The node list comes from continuum_ctrl.params.launch_description, as for `continuum-ctrl launch`.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from continuum_ctrl.params.launch_description import config_path, DEFAULT_PARAMS, simulation


def nodes(context):
    """Return the nodes of the `params_file` argument's files (split at spaces)."""
    files = LaunchConfiguration('params_file').perform(context).split()
    use_sim_time = LaunchConfiguration('use_sim_time')
    return [Node(package=d.package, executable=d.executable, name=d.name,
                 parameters=[*map(str, d.parameters),
                             {'use_sim_time': ParameterValue(use_sim_time, value_type=bool)}],
                 remappings=list(d.remappings), output='screen')
            for d in simulation(files)]


def generate_launch_description():
    """Return the launch description of the controller and simulator nodes."""
    return LaunchDescription([
        DeclareLaunchArgument('params_file', default_value=str(config_path(DEFAULT_PARAMS)),
                              description='ROS 2 parameter file(s) of both nodes, '
                                          'separated by spaces, merged in order'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='use /clock (true in Gazebo)'),
        OpaqueFunction(function=nodes),
    ])
