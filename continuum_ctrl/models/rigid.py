"""
Rigid arms from URDF through Pinocchio (``model.type: urdf``).

Every quantity comes from Pinocchio's own algorithms (CRBA, RNEA, ABA, Coriolis matrix,
generalized gravity, energies); nothing here is hand-written rigid-body dynamics. The base is
fixed (no root joint). Only 1-DoF joints (revolute with limits, prismatic) can be selected;
an unbounded ``continuous`` joint (Pinocchio stores it as cos/sin, nq=2, nv=1) is rejected,
but may be locked.

Parameters (namespace ``model``):

    urdf              path, ``file://`` or ``package://pkg/rest`` URI of the URDF
    joints            optional: the controlled joints, in the order of the model's arrays
    locked_positions  optional: joint name -> position (rad or m) for joints left out (else 0)
    gravity           optional: gravity vector in the URDF base frame, m/s^2; [0, 0, -9.81]
    payload           optional: mass (kg), frame, offset (m, in the frame) of a payload the
                      URDF does not hold, a ball of PAYLOAD_RADIUS (`add_payload`)
"""

import copy
from functools import lru_cache
from importlib import metadata
import os
from pathlib import Path

import numpy as np
import pinocchio as pin

from continuum_ctrl.models.fields import RIGID_SCHEMA
from continuum_ctrl.params import check_readable, ConfigError, Reader
from continuum_ctrl.models.base import DynamicsModel


@lru_cache(maxsize=None)
def example_robot_data_share():
    """Return the ``share`` directory of the installed example-robot-data wheel, or None."""
    try:
        dist = metadata.distribution('example-robot-data')
    except metadata.PackageNotFoundError:
        return None
    for entry in dist.files or []:
        parts = entry.parts
        if 'example-robot-data' in parts and parts.index('example-robot-data') > 0:
            index = parts.index('example-robot-data')
            if parts[index - 1] == 'share':
                return Path(dist.locate_file(Path(*parts[:index])))
    return None


def package_roots(package):
    """Yield candidate root directories of ROS package `package`, most specific first."""
    try:
        from ament_index_python.packages import get_package_share_directory
        yield Path(get_package_share_directory(package))
    except (ImportError, LookupError, OSError, ValueError):
        pass
    for entry in os.environ.get('ROS_PACKAGE_PATH', '').split(os.pathsep):
        if entry:
            yield Path(entry) / package
            if Path(entry).name == package:
                yield Path(entry)
    share = example_robot_data_share()
    if share is not None:
        yield share / package
        yield share / 'example-robot-data' / 'robots' / package


def resolve_urdf(uri, key='model.urdf'):
    """
    Return the path of an existing URDF file named by a path or a file/package URI.

    ``package://pkg/rest`` is looked up in the ament index, then ROS_PACKAGE_PATH, then the
    example-robot-data wheel. A relative path is taken from the current directory.
    """
    if uri.startswith('package://'):
        package, _, rest = uri[len('package://'):].partition('/')
        if not package or not rest:
            raise ConfigError(key, f"'{uri}' is not of the form package://PACKAGE/PATH")
        tried = []
        for root in package_roots(package):
            path = root / rest
            if path.is_file():
                return path
            tried.append(str(path))
        hint = '' if example_robot_data_share() else (
            '; example-robot-data is not installed (for its robots: '
            'pip install --no-deps example-robot-data)')
        raise ConfigError(key, f"cannot resolve '{uri}': no such file in "
                               f"{tried or 'any known package location'}{hint}")
    path = Path(uri[len('file://'):] if uri.startswith('file://') else uri).expanduser()
    if not path.is_file():
        raise ConfigError(key, f"URDF file '{path}' " + (
            'is a directory' if path.is_dir() else 'does not exist'))
    return path


#: a payload's radius, m: a solid ball (MuJoCo needs some rotational inertia; at 1 cm, 3 kg
#: add 1.2e-4 kg m^2 about its centre, next to a Panda hand's 2.5e-3)
PAYLOAD_RADIUS = 0.01


def payload_at(model, frame, offset):
    """
    Return ``(joint id, position in the joint's frame)`` of a point at `offset` in `frame`.

    `model` a Pinocchio model; `frame` one of its frame names, `offset` (3,) m.
    """
    placement = model.frames[model.getFrameId(frame)].placement
    return (model.frames[model.getFrameId(frame)].parentJoint,
            placement.act(np.asarray(offset, dtype=float)))


def payload_inertia(mass, position):
    """Return a ball of `mass` kg (PAYLOAD_RADIUS) at `position` (m) as a Pinocchio Inertia."""
    return pin.Inertia.FromSphere(mass, PAYLOAD_RADIUS).se3Action(pin.SE3(np.eye(3), position))


def add_payload(model, frame, mass, offset):
    """Add a ball of `mass` kg at `offset` (m) in `frame` to Pinocchio `model`, in place."""
    joint, position = payload_at(model, frame, offset)
    model.inertias[joint] = model.inertias[joint] + payload_inertia(mass, position)


class RigidModel(DynamicsModel):
    """
    A fixed-base rigid arm: a Pinocchio model and the order of its joints in our arrays.

    `order[i]` is the Pinocchio velocity index of joint ``joint_names[i]``; when it is the
    identity, arrays go to Pinocchio untouched.
    """

    def __init__(self, model, joint_names, order):
        self.model = model
        self.data = model.createData()
        self.joint_names = list(joint_names)
        order = np.asarray(order, dtype=int)
        self._order = None if np.array_equal(order, np.arange(len(order))) else order
        self._to_pin = None if self._order is None else np.argsort(order)
        lower = np.tril_indices(len(order), -1)
        self._lower = np.ravel_multi_index(lower, (len(order),) * 2)
        self._upper = np.ravel_multi_index(lower[::-1], (len(order),) * 2)

    def for_thread(self):
        """Return this arm with a `pin.Data` of its own, for another thread (see base)."""
        model = copy.copy(self)
        model.data = self.model.createData()
        return model

    def with_payload(self, frame, mass, offset):
        """Return this arm carrying a ball of `mass` kg at `offset` (m) in `frame` (a copy)."""
        model = pin.Model(self.model)
        add_payload(model, frame, mass, offset)
        order = np.arange(self.n) if self._order is None else self._order
        return RigidModel(model, self.joint_names, order)

    def _in(self, x):
        """Return `x` as a float64 array in Pinocchio's joint order."""
        x = np.asarray(x, dtype=float)
        return x if self._order is None else x[self._to_pin]

    def _out(self, x):
        """Return a Pinocchio-ordered vector or matrix (fresh from Pinocchio) in our order."""
        if self._order is None:
            return x
        return x[np.ix_(self._order, self._order)] if x.ndim == 2 else x[self._order]

    def mass_matrix(self, q):
        """Generalized inertia ``M(q)`` by CRBA, (n, n), symmetrized."""
        M = np.ascontiguousarray(pin.crba(self.model, self.data, self._in(q)))
        flat = M.reshape(-1)
        flat[self._lower] = flat[self._upper]
        return self._out(M)

    def coriolis_matrix(self, q, qd):
        """Pinocchio's Christoffel-consistent Coriolis matrix ``C(q, qd)``, (n, n)."""
        return self._out(pin.computeCoriolisMatrix(self.model, self.data, self._in(q),
                                                   self._in(qd)))

    def gravity_vector(self, q):
        """Generalized gravity ``g(q)`` in N m (or N for prismatic joints), (n,)."""
        return self._out(pin.computeGeneralizedGravity(self.model, self.data, self._in(q)))

    def gravity_potential(self, q):
        """Gravitational potential energy of all bodies in joules (zero at the base origin)."""
        return float(pin.computePotentialEnergy(self.model, self.data, self._in(q)))

    def kinetic_energy(self, q, qd):
        """Kinetic energy in joules."""
        return float(pin.computeKineticEnergy(self.model, self.data, self._in(q),
                                              self._in(qd)))

    def bias_forces(self, q, qd):
        """``C qd + g`` by RNEA with zero acceleration, (n,)."""
        return self._out(pin.nonLinearEffects(self.model, self.data, self._in(q),
                                              self._in(qd)))

    def inverse_dynamics(self, q, qd, qdd):
        """
        Return ``M qdd + C qd + g`` by one RNEA call, (n,).

        The hot path of computed torque: float64 arrays in Pinocchio's order go straight to
        ``pin.rnea``; anything else is converted first.
        """
        if self._order is None:
            try:
                return pin.rnea(self.model, self.data, q, qd, qdd)
            except TypeError:
                pass
        return self._out(pin.rnea(self.model, self.data, self._in(q), self._in(qd),
                                  self._in(qdd)))

    def forward_dynamics(self, q, qd, tau):
        """Acceleration under generalized force `tau` by ABA, (n,)."""
        return self._out(pin.aba(self.model, self.data, self._in(q), self._in(qd),
                                 self._in(tau)))

    def joint_limits(self):
        """Position limits from the URDF, (n,) each; +-inf where the URDF gives none."""
        lower = self._out(self.model.lowerPositionLimit.copy())
        upper = self._out(self.model.upperPositionLimit.copy())
        unset = lower >= upper
        lower[unset], upper[unset] = -np.inf, np.inf
        return lower, upper

    def effort_limits(self):
        """Effort limits from the URDF, (n,); inf where the URDF gives none (or zero)."""
        effort = self._out(self.model.effortLimit.copy())
        effort[effort <= 0.0] = np.inf
        return effort

    def frame_names(self):
        """Return the URDF's frames (links, joints, fixed frames), in Pinocchio's order."""
        return [frame.name for frame in self.model.frames]

    def _frame_id(self, frame):
        if not isinstance(frame, str) or not self.model.existFrame(frame):
            raise self.frame_error(frame)
        return self.model.getFrameId(frame)

    def frame_pose(self, q, frame):
        """Pose of a URDF frame in the base frame by ``framesForwardKinematics``, (4, 4)."""
        fid = self._frame_id(frame)
        pin.framesForwardKinematics(self.model, self.data, self._in(q))
        return self.data.oMf[fid].homogeneous.copy()

    def frame_jacobian(self, q, frame):
        """Pinocchio's ``LOCAL_WORLD_ALIGNED`` frame Jacobian, (6, n), in our joint order."""
        fid = self._frame_id(frame)
        J = pin.computeFrameJacobian(self.model, self.data, self._in(q), fid,
                                     pin.LOCAL_WORLD_ALIGNED)
        return J if self._order is None else J[:, self._order]

    def frame_jacobian_derivative(self, q, qd, frame):
        """Pinocchio's ``getFrameJacobianTimeVariation`` (``LOCAL_WORLD_ALIGNED``), (6, n)."""
        fid = self._frame_id(frame)
        pin.computeJointJacobiansTimeVariation(self.model, self.data, self._in(q), self._in(qd))
        pin.updateFramePlacement(self.model, self.data, fid)
        Jdot = pin.getFrameJacobianTimeVariation(self.model, self.data, fid,
                                                 pin.LOCAL_WORLD_ALIGNED)
        return Jdot if self._order is None else Jdot[:, self._order]

    def frame_kinematics(self, q, frame):
        """Return ``(frame_pose, frame_jacobian)`` from one Pinocchio pass."""
        fid = self._frame_id(frame)
        J = pin.computeFrameJacobian(self.model, self.data, self._in(q), fid,
                                     pin.LOCAL_WORLD_ALIGNED)
        pin.updateFramePlacement(self.model, self.data, fid)
        T = self.data.oMf[fid].homogeneous.copy()
        return T, (J if self._order is None else J[:, self._order])


def _locked_configuration(full, reader, selected):
    """Return the full configuration for the locked joints from ``model.locked_positions``."""
    q = pin.neutral(full)
    for name in reader.tree:
        key = reader.key(name)
        if not full.existJointName(name):
            raise ConfigError(key, f"'{name}' is not a joint of the URDF")
        if name in selected:
            raise ConfigError(key, f"'{name}' is listed in model.joints and cannot be locked")
        joint = full.joints[full.getJointId(name)]
        value = reader.number(name)
        if joint.nq == 1:
            q[joint.idx_q] = value
        elif joint.nq == 2 and joint.nv == 1:
            q[joint.idx_q:joint.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            raise ConfigError(key, f"joint '{name}' has {joint.nq} coordinates; "
                                   'only 1-DoF joints can be locked at a value')
    return q


def from_spec(spec):
    """Build a `RigidModel` from the nested `model` namespace (``type: urdf``)."""
    values = RIGID_SCHEMA.parse(spec, 'model')
    path = resolve_urdf(values['model.urdf'])
    check_readable(path, 'URDF file', 'model.urdf')
    gravity = values['model.gravity']
    try:
        full = pin.buildModelFromUrdf(str(path))
    except (RuntimeError, ValueError) as exc:
        raise ConfigError('model.urdf', f"Pinocchio cannot read '{path}': {exc}") from exc
    movable = [full.names[i] for i in range(1, full.njoints)]
    joints = values.get('model.joints', movable)
    if not joints:
        raise ConfigError('model.joints', 'must name at least one joint')
    for name in joints:
        if name not in movable:
            raise ConfigError('model.joints', f"'{name}' is not a movable joint of '{path}' "
                                              f'(joints: {movable})')
        joint = full.joints[full.getJointId(name)]
        if joint.nq != 1 or joint.nv != 1:
            raise ConfigError('model.joints' if 'model.joints' in values else 'model.urdf',
                              f"joint '{name}' has nq={joint.nq}, nv={joint.nv}; only 1-DoF "
                              'joints (revolute, prismatic) are supported, lock it instead')
    if len(set(joints)) != len(joints):
        raise ConfigError('model.joints', f'names a joint twice: {joints}')
    locked = Reader(spec, 'model').namespace('locked_positions')
    reference = _locked_configuration(full, locked, set(joints))
    to_lock = [full.getJointId(name) for name in movable if name not in joints]
    model = pin.buildReducedModel(full, to_lock, reference) if to_lock else full
    model.gravity.linear = np.array(gravity)
    if values['model.payload.mass']:
        frame = values.get('model.payload.frame')
        if frame is None or not model.existFrame(frame):
            raise ConfigError('model.payload.frame', f"must name a frame of '{path}' to carry "
                                                     f'model.payload.mass, got {frame!r}')
        add_payload(model, frame, values['model.payload.mass'], values['model.payload.offset'])
    order = [model.joints[model.getJointId(name)].idx_v for name in joints]
    return RigidModel(model, joints, order)
