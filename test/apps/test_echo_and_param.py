"""
Watching and tuning without ros2cli: `continuum-ctrl echo` and `continuum-ctrl param`, and the
simulator's joint_states heard by a default-QoS (reliable) subscriber.
"""

import subprocess
import sys
import threading

import pytest
from sensor_msgs.msg import JointState

from continuum_ctrl.params.launch_description import config_path
from support.ros_nodes import running

pytestmark = pytest.mark.ros


def cli(*args):
    """Run `continuum-ctrl ARGS...`; return the finished process."""
    return subprocess.run([sys.executable, '-m', 'continuum_ctrl.apps.cli', *args],
                          capture_output=True, text=True, timeout=120)


def test_echo_param_and_reliable_joint_states(tmp_path):
    with running(tmp_path, config_path('planar_2r.yaml')) as (rec, _):
        heard = threading.Event()
        rec.node.create_subscription(JointState, '/joint_states', lambda msg: heard.set(), 10)
        assert rec.wait(heard.is_set, 20.0), 'a reliable subscriber got no joint_states'

        echo = cli('echo', '/joint_states', '--count', '1')
        assert echo.returncode == 0, echo.stderr
        assert '- joint1' in echo.stdout and 'position:' in echo.stdout

        assert cli('param', 'get', 'continuum_controller', 'gains.kp').stdout.strip() == \
            '[100.0, 100.0]'
        assert cli('param', 'set', 'continuum_controller', 'gains.kp', '[120, 120]'
                   ).returncode == 0
        assert cli('param', 'get', 'continuum_controller', 'gains.kp').stdout.strip() == \
            '[120.0, 120.0]'
        refused = cli('param', 'set', 'continuum_controller', 'gains.kp', '[-1, 1]')
        assert refused.returncode == 1 and 'must all be > 0' in refused.stdout
        unknown = cli('param', 'get', 'continuum_controller', 'gains.kq')
        assert unknown.returncode == 2
        assert unknown.stderr.strip() == ("continuum-ctrl param: error: parameter 'gains.kq': "
                                          "is not a parameter of /continuum_controller")
