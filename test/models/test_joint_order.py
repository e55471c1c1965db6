"""Joint names to model order (models/joint_order.py), the rule both readers share."""

import re

import numpy as np
import pytest
from sensor_msgs.msg import JointState

from continuum_ctrl.identify.data import Joints
from continuum_ctrl.models.joint_order import FOREIGN, joint_columns, JointOrderError, NAMES
from continuum_ctrl.params import ConfigError
from continuum_ctrl.ros.conversion import JointStateReader, Rejected

JOINTS = ['a', 'b', 'c']


def test_columns_follow_the_model_order_and_ignore_other_joints():
    np.testing.assert_array_equal(joint_columns(['x', 'c', 'a', 'y', 'b'], JOINTS), [2, 4, 1])


@pytest.mark.parametrize('names, kind, words', [
    (['gripper', 'x'], FOREIGN, 'names none of the joints'),
    ([], FOREIGN, 'names none of the joints'),
    (['a', 'b'], NAMES, "joints ['c'] are missing"),
    (['a', 'b', 'c', 'b'], NAMES, "joint 'b' appears twice"),
])
def test_names_that_give_no_order_say_why(names, kind, words):
    with pytest.raises(JointOrderError, match=re.escape(words)) as caught:
        joint_columns(names, JOINTS)
    assert caught.value.kind == kind


@pytest.mark.parametrize('names', [['gripper'], ['a', 'b'], ['a', 'b', 'c', 'a']])
def test_the_controller_and_identification_apply_the_same_rule(names):
    """The live reader's rejection kind and the bag reader's outcome agree on every case."""
    reader = JointStateReader(JOINTS, np.full(3, -1.0), np.full(3, 1.0))
    with pytest.raises(Rejected) as caught:
        reader.read(JointState(name=names, position=[0.0] * len(names)), 0.0)
    joints = Joints(JOINTS, JOINTS)
    if caught.value.kind == FOREIGN:
        assert joints.position_columns(names, 'bag', foreign=True) is None
    with pytest.raises(ConfigError, match=re.escape(str(caught.value))):
        joints.position_columns(names, 'bag')
