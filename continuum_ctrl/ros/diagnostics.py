"""
A node's `/diagnostics` message (diagnostic_msgs/DiagnosticArray) from its (key, value) pairs.

Floats are written with 6 significant digits, everything else with `str`; the status's name is
``<node name>: <what>``, its hardware_id the node's full name.
"""

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue


def diagnostic_array(node, what, values, message, ok=True):
    """Return a DiagnosticArray of one status of `node` (level OK or WARN), stamped now."""
    status = DiagnosticStatus(name=f'{node.get_name()}: {what}',
                              hardware_id=node.get_fully_qualified_name(),
                              level=DiagnosticStatus.OK if ok else DiagnosticStatus.WARN,
                              message=message)
    status.values = [KeyValue(key=k, value=f'{v:.6g}' if isinstance(v, float) else str(v))
                     for k, v in values]
    msg = DiagnosticArray(status=[status])
    msg.header.stamp = node.get_clock().now().to_msg()
    return msg
