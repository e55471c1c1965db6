"""
`continuum-ctrl param get NODE KEY` and `continuum-ctrl param set NODE KEY VALUE`.

What ``ros2 param get/set`` do, for environments without ros2cli (the PyPI wheels), through
the node's standard parameter services. VALUE is read as YAML (``700``, ``[700, 700]``,
``true``, ``hold``) and converted to the type the parameter has now, so ``700`` sets a
double parameter to 700.0.
"""

import argparse

import rclpy
from rclpy.parameter import Parameter, parameter_value_to_python
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters, SetParameters
import yaml

from continuum_ctrl.params import ConfigError

#: parameter type -> conversion of a YAML value to it
CONVERT = {
    ParameterType.PARAMETER_DOUBLE: float,
    ParameterType.PARAMETER_INTEGER: int,
    ParameterType.PARAMETER_BOOL: bool,
    ParameterType.PARAMETER_STRING: str,
    ParameterType.PARAMETER_DOUBLE_ARRAY: lambda v: [float(x) for x in v],
    ParameterType.PARAMETER_INTEGER_ARRAY: lambda v: [int(x) for x in v],
    ParameterType.PARAMETER_BOOL_ARRAY: lambda v: [bool(x) for x in v],
    ParameterType.PARAMETER_STRING_ARRAY: lambda v: [str(x) for x in v],
}


def call(node, service_type, name, request, timeout):
    """Call a service of another node; return the response or raise ConfigError."""
    client = node.create_client(service_type, name)
    if not client.wait_for_service(timeout_sec=timeout):
        raise ConfigError('NODE', f"no node answers on '{name}' (waited {timeout:g} s)")
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    if future.result() is None:
        raise ConfigError('NODE', f"'{name}' did not answer within {timeout:g} s")
    return future.result()


def get_value(node, target, key, timeout):
    """Return the parameter's value message (ConfigError if the node does not have it)."""
    response = call(node, GetParameters, f'{target}/get_parameters',
                    GetParameters.Request(names=[key]), timeout)
    value = response.values[0] if response.values else None
    if value is None or value.type == ParameterType.PARAMETER_NOT_SET:
        raise ConfigError(key, f'is not a parameter of {target}')
    return value


def main(argv=None):
    """Get or set one parameter; return 0, or 1 when the node refuses the new value."""
    parser = argparse.ArgumentParser(prog='continuum-ctrl param', description=__doc__.split(
        '\n\n')[0].strip())
    parser.add_argument('verb', choices=['get', 'set'])
    parser.add_argument('node', help='node name, e.g. continuum_controller or /ns/name')
    parser.add_argument('key', help='parameter name, e.g. gains.kp')
    parser.add_argument('value', nargs='?', help='new value, as YAML (set only)')
    parser.add_argument('--timeout', type=float, default=5.0, help='seconds (default 5)')
    args = parser.parse_args(argv)
    if (args.verb == 'set') != (args.value is not None):
        parser.error('set takes a VALUE, get does not')
    target = args.node if args.node.startswith('/') else '/' + args.node
    rclpy.init()
    node = rclpy.create_node('continuum_ctrl_param')
    try:
        current = get_value(node, target, args.key, args.timeout)
        if args.verb == 'get':
            print(parameter_value_to_python(current))
            return 0
        try:
            value = CONVERT[current.type](yaml.safe_load(args.value))
        except (TypeError, ValueError, KeyError, yaml.YAMLError) as exc:
            raise ConfigError(args.key, f'cannot take {args.value!r}: {exc}') from None
        request = SetParameters.Request(parameters=[
            Parameter(args.key, value=value).to_parameter_msg()])
        result = call(node, SetParameters, f'{target}/set_parameters', request,
                      args.timeout).results[0]
        if not result.successful:
            print(f'continuum-ctrl param: {target} refused {args.key}: {result.reason}')
            return 1
        print(f'{target}: {args.key} = {value}')
        return 0
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
