"""
MuJoCo as the plant's physics engine: a continuum disc stack or a URDF arm.

    engine = MujocoArm(continuum_mjcf(spec, discs, timestep, obstacles), spec, timestep)
    engine = MujocoJoints(urdf_mjcf(path, joints, ...), joints, timestep)
    q, qd = engine.reset(q0)        # model order: PMA length changes (m) or joint positions
    q, qd = engine.step(tau, dt)    # dt s (MuJoCo steps of at most `timestep`), forces tau
    q, qd = engine.step(tau, dt, push)  # and a force (N, base axes) on the `pushed` frame

The state is what the simulator publishes: each PMA's length change (the sum of its pieces'
tendon lengths minus L) and its rate, or the joints' positions and velocities. `mujoco` is
imported here only, so the built-in engine runs without it. Integrator: MuJoCo's
`implicitfast` (the stiff PMA damping implicitly).
"""

import math
from xml.etree import ElementTree

import numpy as np

from continuum_ctrl.models.continuum.kinematics import arc_variables
from continuum_ctrl.params import ConfigError
from continuum_ctrl.sim.mujoco_arm import body_name, Obstacles, piece_name

#: Newton iterations placing the disc stack at a given PMA pose, and their tolerance (m)
POSE_ITERATIONS = 20
POSE_TOLERANCE = 1e-12


def _mujoco():
    import mujoco
    return mujoco


class MujocoEngine:
    """
    What both MuJoCo engines share: the model of `xml`, stepping, checks and contacts.

    `timestep`: the longest MuJoCo step, s; `q`, `qd`: the state after the last `reset` or
    `step` (subclasses give `state` and `reset`); `ctrl`: the actuator of each force's share,
    `owner`: the force (model order) each of those actuators takes; `pushed`: the body a push
    acts on (-1: none; subclasses find it, `_body`).
    """

    def __init__(self, xml, timestep, path=None):
        mujoco = _mujoco()
        self.xml, self.timestep = xml, timestep
        self.model = (mujoco.MjModel.from_xml_string(xml) if path is None
                      else mujoco.MjModel.from_xml_path(str(path)))
        self.data = mujoco.MjData(self.model)
        self._ctrl = np.zeros(0, dtype=int)
        self._owner = np.zeros(0, dtype=int)
        self._largest_contact = 0.0
        self.q = self.qd = np.zeros(0)
        self.pushed = -1

    def _body(self, name, frame):
        """Return the id of body `name`, which frame `frame` is; ConfigError without one."""
        mujoco = _mujoco()
        body = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        if body < 0:
            raise ConfigError('push.frame', f"'{frame}' is no body of the MuJoCo arm")
        return body

    def state(self):
        """Return ``(q, qd)`` at the current MuJoCo state; set `q` and `qd`."""
        raise NotImplementedError

    def step(self, tau, dt, push=None):
        """
        Advance by `dt` s with PMA forces `tau` (N, model order) held; return the state.

        `dt` is split into equal MuJoCo steps of at most `timestep`. Between calls MuJoCo's
        position and velocity stage has run at the current state (`mj_step1`), so the
        tendon lengths are the state's and the next step goes on from them. `push` (N, base
        axes; None: none): a force on the body `pushed` at its origin, held over `dt` as
        the generalized force it makes at the step's start, as the built-in engine holds
        ``J^T push``.
        """
        mujoco = _mujoco()
        m, d = self.model, self.data
        steps = max(1, math.ceil(dt / self.timestep - 1e-9))
        m.opt.timestep = dt / steps
        d.ctrl[self._ctrl] = np.asarray(tau)[self._owner]
        d.qfrc_applied[:] = 0.0
        if push is not None:
            mujoco.mj_applyFT(m, d, np.asarray(push, dtype=float), np.zeros(3),
                              d.xpos[self.pushed], self.pushed, d.qfrc_applied)
        mujoco.mj_step2(m, d)
        if steps > 1:
            mujoco.mj_step(m, d, steps - 1)
        mujoco.mj_step1(m, d)
        self._check()
        if d.ncon:
            self._largest_contact = max(self._largest_contact, self.contact_force())
        return self.state()

    def _check(self):
        """
        Raise ArithmeticError when MuJoCo met a non-finite or huge state or input.

        MuJoCo then resets its data to the model's rest pose and goes on; a plant that jumps
        there would hide the divergence, so the plant's caller hears of it instead.
        """
        mujoco = _mujoco()
        bad = [mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
               mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADCTRL]
        counts = [self.data.warning[int(w)].number for w in bad]
        if any(counts):
            for w in bad:
                self.data.warning[int(w)].number = 0
            raise ArithmeticError('MuJoCo: the simulation is unstable (non-finite or huge '
                                  'state, acceleration or force)')

    def warm_up(self, tau, dt):
        """Do nothing: MuJoCo compiles nothing on its first step."""

    def largest_contact_force(self):
        """Return the largest `contact_force` at a step end since the last call, N; reset it."""
        largest, self._largest_contact = self._largest_contact, 0.0
        return largest

    def contact_force(self):
        """Return the sum of the normal forces of the current contacts, N."""
        mujoco = _mujoco()
        total, wrench = 0.0, np.zeros(6)
        for c in range(self.data.ncon):
            mujoco.mj_contactForce(self.model, self.data, c, wrench)
            total += abs(wrench[0])
        return total


class MujocoArm(MujocoEngine):
    """
    A continuum arm as a disc stack; `n` PMAs, state in the model's joint order.

    `xml`: its MJCF from `continuum_mjcf` for `spec`; `pushed`: the frame pushed, a
    ``section{i}_tip`` (its section's last disc, whose origin is the tip), or None.
    """

    def __init__(self, xml, spec, timestep, pushed=None):
        super().__init__(xml, timestep)
        mujoco = _mujoco()
        self.spec = spec
        self.n = 3 * spec.sections
        self.discs = [self._count(i) for i in range(spec.sections)]
        # piece tendon ids per PMA (model order: section-major, PMA-minor)
        pieces = [[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_TENDON,
                                     piece_name(i + 1, j + 1, k + 1))
                   for k in range(self.discs[i])]
                  for i in range(spec.sections) for j in range(3)]
        self._flat = np.array([t for piece in pieces for t in piece])
        self._owner = np.repeat(np.arange(self.n), [len(piece) for piece in pieces])
        actuated = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR,
                                      mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_TENDON,
                                                        int(t))) for t in self._flat]
        self._ctrl = np.asarray(actuated, dtype=int)
        self._rest = np.repeat(spec.length, 3)
        self._section_dofs = [self._dofs(i) for i in range(spec.sections)]
        if pushed is not None:
            section = int(pushed[len('section'):-len('_tip')])
            self.pushed = self._body(body_name(section, self.discs[section - 1]), pushed)

    def _count(self, i):
        """Return the number of discs of section `i` in the model."""
        mujoco = _mujoco()
        k = 0
        while mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY,
                                body_name(i + 1, k + 1)) >= 0:
            k += 1
        return k

    def _dofs(self, i):
        """Return the qpos addresses (x, y, z) of section `i`'s discs, (N, 3)."""
        mujoco = _mujoco()
        return np.array([[self.model.jnt_qposadr[mujoco.mj_name2id(
            self.model, mujoco.mjtObj.mjOBJ_JOINT, f'{body_name(i + 1, k)}_{axis}')]
            for axis in 'xyz'] for k in range(1, self.discs[i] + 1)])

    def state(self):
        """Return ``(q, qd)``: PMA length changes (m) and rates (m/s) at the current pose."""
        d = self.data
        self.q = np.bincount(self._owner, d.ten_length[self._flat], self.n) - self._rest
        self.qd = np.bincount(self._owner, d.ten_velocity[self._flat], self.n)
        return self.q, self.qd

    def reset(self, q0):
        """Place the arm at rest at the PMA pose `q0` (m); return the state."""
        mujoco = _mujoco()
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        q0 = np.asarray(q0, dtype=float)
        for i, dofs in enumerate(self._section_dofs):
            self._place(i, dofs, q0[3 * i:3 * i + 3])
        mujoco.mj_step1(m, d)
        return self.state()

    def _place(self, i, dofs, target):
        """Bend section `i` into equal segments whose PMA lengths are `target` (Newton)."""
        mujoco = _mujoco()
        m, d = self.model, self.data
        # the section's extension (its arc length less L: `arc_variables` of length 0) and
        # bending, shared equally by its N segments
        extension, u, w = arc_variables.py_func(0.0, self.spec.radius[i], target)
        x = np.array([-w, u, extension]) / self.discs[i]   # hinge x, hinge y, slide

        def lengths(x):
            d.qpos[dofs] = x
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_tendon(m, d)
            return self.state()[0][3 * i:3 * i + 3]

        for _ in range(POSE_ITERATIONS):
            residual = lengths(x) - target
            if np.max(np.abs(residual)) < POSE_TOLERANCE:
                break
            J = np.empty((3, 3))
            for c in range(3):
                e = np.zeros(3)
                e[c] = 1e-7
                J[:, c] = (lengths(x + e) - lengths(x - e)) / 2e-7
            x = x - np.linalg.solve(J, residual)
        lengths(x)


class MujocoJoints(MujocoEngine):
    """
    An arm whose coordinates are named one-DoF joints or tendons of its MJCF, in `joints` order.

    Forces go to the actuators named as the joints (`by_name`, the URDF arms), else to the
    model's first actuators in order (a user's MJCF, `mujoco.model` at `path`). `pushed`: the
    frame pushed, the body of that name (a URDF link), or None.
    """

    def __init__(self, xml, joints, timestep, path=None, by_name=True, pushed=None):
        super().__init__(xml, timestep, path)
        mujoco = _mujoco()
        m = self.model
        ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name) for name in joints]
        self._joint = np.array([i >= 0 for i in ids])
        self._qpos = np.array([m.jnt_qposadr[i] if i >= 0 else -1 for i in ids])
        self._dof = np.array([m.jnt_dofadr[i] if i >= 0 else -1 for i in ids])
        self._tendon = np.array([-1 if i >= 0 else mujoco.mj_name2id(
            m, mujoco.mjtObj.mjOBJ_TENDON, name) for i, name in zip(ids, joints)])
        self._ctrl = (np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
                                for name in joints]) if by_name else np.arange(len(joints)))
        self._owner = np.arange(len(joints))
        self.n = len(joints)
        if pushed is not None:
            self.pushed = self._body(pushed, pushed)

    def state(self):
        """Return ``(q, qd)``: joint positions (rad or m) or tendon lengths, and rates."""
        d, joint, tendon = self.data, self._joint, ~self._joint
        self.q, self.qd = np.empty(self.n), np.empty(self.n)
        self.q[joint], self.qd[joint] = d.qpos[self._qpos[joint]], d.qvel[self._dof[joint]]
        self.q[tendon] = d.ten_length[self._tendon[tendon]]
        self.qd[tendon] = d.ten_velocity[self._tendon[tendon]]
        return self.q, self.qd

    def reset(self, q0):
        """Rest at `q0` (the joints' positions; tendons start as the MJCF has them)."""
        mujoco = _mujoco()
        mujoco.mj_resetData(self.model, self.data)
        joint = self._joint
        self.data.qpos[self._qpos[joint]] = np.asarray(q0, dtype=float)[joint]
        mujoco.mj_step1(self.model, self.data)
        return self.state()


def check_user_model(path, names):
    """Return the problem with MJCF `path` for coordinates `names` (None: it fits)."""
    mujoco = _mujoco()
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:
        return f"MuJoCo cannot read '{path}': {str(exc).strip().splitlines()[0]}"
    for name in names:
        joint = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        kinds = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        if joint >= 0 and int(m.jnt_type[joint]) not in kinds:
            return f"joint '{name}' of '{path}' is not a hinge or a slide"
        if joint < 0 and mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_TENDON, name) < 0:
            return f"'{path}' has no joint or tendon named '{name}'"
    if m.nu < len(names):
        return f"'{path}' has {m.nu} actuators, the commands need {len(names)}"
    return None


def _locked(joint, position):
    """Turn a URDF <joint> into a fixed one at `position` (rad or m), its origin moved."""
    from scipy.spatial.transform import Rotation
    origin = joint.find('origin')
    if origin is None:
        origin = ElementTree.SubElement(joint, 'origin')
    xyz = np.array([float(v) for v in origin.get('xyz', '0 0 0').split()])
    turn = Rotation.from_euler('xyz', [float(v) for v in origin.get('rpy', '0 0 0').split()])
    axis = joint.find('axis')
    axis = np.array([float(v) for v in (axis.get('xyz', '1 0 0') if axis is not None
                                        else '1 0 0').split()])
    if joint.get('type') == 'prismatic':
        xyz = xyz + turn.apply(axis) * position
    else:
        turn = turn * Rotation.from_rotvec(axis / np.linalg.norm(axis) * position)
    origin.set('xyz', ' '.join(f'{v:.12g}' for v in xyz))
    origin.set('rpy', ' '.join(f'{v:.12g}' for v in turn.as_euler('xyz')))
    joint.set('type', 'fixed')


def _weld_payload(spec, joint, position, mass):
    """Add the payload ball to the body of `joint` in MjSpec `spec` (see `urdf_mjcf`)."""
    from continuum_ctrl.models.rigid import PAYLOAD_RADIUS
    body = next(body for body in spec.bodies if joint in [j.name for j in body.joints])
    inertia = 0.4 * mass * PAYLOAD_RADIUS ** 2
    # ipos set: left unset, MjSpec puts the centre of mass at `pos` again in the body's frame
    body.add_body(name='payload', pos=position, ipos=[0.0, 0.0, 0.0], mass=mass,
                  inertia=[inertia] * 3, explicitinertial=True)


def urdf_mjcf(path, joints, locked, gravity, timestep, armature, damping=None, friction=None,
              mass_scale=1.0, obstacles=Obstacles(), payload=None):
    """
    Return the MJCF of a URDF arm: collision primitives only, effort motors on `joints`.

    Visuals and mesh collisions are dropped (no mesh files are read). Movable joints not in
    `joints` are fixed at their `locked` position (default 0). Joint damping and friction
    (`frictionloss`) come from the URDF's <dynamics> unless `damping` / `friction` (per
    joint, in `joints` order) are given; `armature` per joint (kg m^2 or kg). Each motor makes
    the joint's generalized force (N m or N); MuJoCo keeps it within the URDF's effort limit.
    Masses and inertias are scaled by `mass_scale`. The arm's primitives collide only with
    the `obstacles`; without obstacles contacts are off. `payload`: ``(joint, position m,
    mass kg)``, a ball (models/rigid.py PAYLOAD_RADIUS) welded to that joint's body at that
    position in its frame (the URDF child link's), unscaled; None: none.
    """
    mujoco = _mujoco()
    root = ElementTree.parse(path).getroot()
    for link in root.findall('link'):
        for element in link.findall('visual'):
            link.remove(element)
        for element in link.findall('collision'):
            if element.find('geometry/mesh') is not None:
                link.remove(element)
    for joint in root.findall('joint'):
        if joint.get('type') not in ('fixed', 'floating', 'planar') and (
                joint.get('name') not in joints):
            _locked(joint, float(locked.get(joint.get('name'), 0.0)))
    spec = mujoco.MjSpec.from_string(ElementTree.tostring(root, encoding='unicode'))
    spec.option.timestep = timestep
    spec.option.gravity = gravity
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    for body in spec.bodies:
        body.mass *= mass_scale
        body.inertia *= mass_scale
        body.fullinertia *= mass_scale
    if payload is not None:
        _weld_payload(spec, *payload)
    for geom in spec.geoms:
        geom.contype, geom.conaffinity = 1, 0
    for box in obstacles.boxes:
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, pos=box[:3], size=box[3:],
                                contype=0, conaffinity=1)
    for ball in obstacles.spheres:
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, pos=ball[:3],
                                size=[ball[3], 0.0, 0.0], contype=0, conaffinity=1)
    if not obstacles:
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    for k, name in enumerate(joints):
        joint = spec.joint(name)
        joint.armature = armature[k]
        if damping is not None:
            joint.damping[0] = damping[k]
        if friction is not None:
            joint.frictionloss = friction[k]
        spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    return spec.to_xml()
