"""
An embedded closed loop for identification tests: the controller's loop on a mismatched plant.

No ROS: `ControlLoop` (the node's cycle) at the control rate against the simulator's `Plant`
(integral model, mismatch and sensor noise from its settings), recording what a bag would hold:
measured positions and the commands at each tick. `ValveLag` stands in for the valve dynamics
of the simulator (a delay, then a first-order lag of the applied pressure); where
sim/actuator.py exists, it replaces this class.
"""

import numpy as np

from continuum_ctrl.config import flatten, nest
from continuum_ctrl.control.loop import ControlLoop
from continuum_ctrl.control.references import Multisine
from continuum_ctrl.control.settings import ControllerSettings, file_parameters
from continuum_ctrl.identify.data import Run
from continuum_ctrl.launch_description import CONTROLLER, SIMULATOR
from continuum_ctrl.models import load_model
from continuum_ctrl.sim.plant import Plant, PlantSettings

PARAMS = 'config/continuum_3section.yaml'
#: the acceptance test's plant against the nominal file
MISMATCH = {'mismatch.stiffness_scale': 1.2, 'mismatch.damping_scale': 0.75,
            'mismatch.area_scale': 1.1, 'mismatch.deadzone': 15e3}
NOISE = {'noise.position': 2e-5, 'noise.velocity': 2e-3, 'noise.seed': 3}


def node_parameters(paths, node, overrides=None):
    """Return ``(tree, model namespace)`` of `node` from parameter files merged in order."""
    flat = {}
    for path in paths:
        tree, model = file_parameters(path, node)
        flat.update(flatten({**tree, 'model': model}))
    flat.update(overrides or {})
    tree = nest(flat)
    return tree, tree.pop('model')


class ValveLag:
    """Applied pressure (Pa): the command delayed by `delay` s, lagged by `time_constant` s."""

    def __init__(self, time_constant, delay, step, p0):
        self.time_constant, self.step = time_constant, step
        self.pending = [np.array(p0, dtype=float)] * int(round(delay / step))
        self.p = np.array(p0, dtype=float)

    def advance(self, command):
        """Take the command held over the next step; return the applied pressure after it."""
        self.pending.append(np.array(command, dtype=float))
        u = self.pending.pop(0)
        a = np.exp(-self.step / self.time_constant) if self.time_constant > 0.0 else 0.0
        self.p = u + (self.p - u) * a
        return self.p


def closed_loop(controller_files, plant_overrides, duration, controller_overrides=None,
                time_constant=0.0, delay=0.0, step=None):
    """
    Run the loop for `duration` s; return ``(Run, t, q, q_des)`` (true q, model order).

    The controller reads `controller_files` merged (plus overrides); the plant the nominal
    file's simulator section with `plant_overrides`.
    """
    tree, model_ns = node_parameters(controller_files, CONTROLLER, controller_overrides)
    model = load_model(model_ns)
    settings = ControllerSettings.parse(tree, model)
    loop = ControlLoop(model, settings)
    sim_overrides = {'initial.position': [0.013], **plant_overrides}
    if step is not None:
        sim_overrides['step'] = step
    sim_tree, sim_model = node_parameters([PARAMS], SIMULATOR, sim_overrides)
    sim_tree = {k: v for k, v in sim_tree.items() if k not in ('gains', 'reference')}
    plant = Plant(PlantSettings.parse(sim_tree, sim_model))
    ps = plant.settings
    period, dt = settings.period, ps.step
    substeps = int(round(period / dt))
    valve = ValveLag(time_constant, delay, dt, ps.actuation.p_min)
    ticks = int(round(duration / period))
    times = period * np.arange(ticks)
    measured, commands, true_q, desired = (np.zeros((ticks, model.n)) for _ in range(4))
    for k, t in enumerate(times):
        q, qd = plant.measure()
        loop.set_state(q, qd, t)
        command = loop.tick(t)
        measured[k], commands[k], true_q[k], desired[k] = q, command, plant.q, loop.q_des
        pressure = ps.vectors.to_model(command)
        for _ in range(substeps):
            tau = ps.actuation.force(valve.advance(pressure))
            plant.q, plant.qd = ps.integrator(ps.model, plant.q, plant.qd, tau, dt)
    order = settings.order
    model_order = np.empty_like(commands)
    model_order[:, order] = commands
    return Run('embedded', times, measured, times.copy(), model_order), times, true_q, desired


def synthetic_run(setup, duration=10.0, rate=500.0, stiffness=1.2, damping=0.75, area=1.1,
                  deadzone=15e3, noise=0.0, seed=0, band=(0.2, 3.0)):
    """
    Return a Run whose pressures make the controller's own model follow a multisine exactly.

    The true PMA parameters are the nominal ones scaled (stiffness, damping, area) and a dead
    zone in Pa; a PMA that would have to pull is vented (0 Pa). Position noise in m.
    """
    n = setup.model.n
    reference = Multisine(np.full(n, 0.013), np.full(n, 0.006), band, 4)
    t = np.arange(int(round(duration * rate))) / rate
    q, qd, qdd = (np.array(x) for x in zip(*(reference.sample(s) for s in t)))
    h = np.array([setup.rigid.inverse_dynamics(*x) for x in zip(q, qd, qdd)])
    k = stiffness * setup.stiffness[setup.section]
    d = damping * setup.damping[setup.section]
    force = h + k * q + d * qd
    a = area * setup.actuation.area
    pressure = np.where(force > 0.0, force / a + deadzone, 0.0)
    measured = q + noise * np.random.default_rng(seed).standard_normal(q.shape)
    return Run('synthetic', t, measured, t.copy(), pressure)
