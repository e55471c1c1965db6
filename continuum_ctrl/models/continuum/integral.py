"""
`type: continuum_integral`: the disc-stack reference model (contract section 4).

Each section is a stack of thin discs (mass ``m dxi``, radius r) along ``xi`` in [0, 1]; the
kinetic-energy integral is evaluated by Gauss-Legendre quadrature (``model.quadrature`` points
per section) of the exact, smooth integrand. ``dM/dq`` is exact (analytic Jacobian
derivatives at each node) and ``C`` comes from the shared Christoffel routine
`continuum_ctrl.models.christoffel.coriolis_from_dM`. Gravity uses the closed-form CoG, so it
is exact.
"""

from continuum_ctrl.models.christoffel import coriolis_from_dM
from continuum_ctrl.models.continuum.data import layout
from continuum_ctrl.models.continuum.kinematics import (chain, rotate_matrix, rotate_tensor,
                                                        section_cog, section_point,
                                                        section_rotation, WITHOUT_DERIVATIVES)
from continuum_ctrl.models.continuum.model import ContinuumModel, finish, TASK_NONE
from continuum_ctrl.models.continuum.modes import CORIOLIS, CQ_ALONE, MASS, MASS_DERIVATIVE
from continuum_ctrl.models.continuum.params import read_spec
from continuum_ctrl.models.continuum.terms import (add_gravity, add_term, angular_jacobian,
                                                   COLUMN0, point_jacobian)
from continuum_ctrl.numerics.jit import compiled


@compiled()
def _point_vector(B, ob, p, x):
    for c in range(3):
        x[c] = ob[c] + B[c, 0] * p[0] + B[c, 1] * p[1] + B[c, 2] * p[2]


@compiled()
def integral_evaluate(arm, memory, q, qd, mode, task, v):
    """
    Fill ``data.sums``: M, g and (mode 2) dM of the disc-stack model; return ``U_g`` [J].

    `arm`: the `data.Arm` (quadrature ``arm.nodes``, ``arm.weights``); `memory`: the model's
    workspace block, carved into its `data.ContinuumData` by `layout`; then the `finish` task.
    """
    n = arm.length.shape[0]
    data = layout(memory, n)[1]
    ch, body, sums, tw, work = data.chain, data.body, data.sums, data.terms, data.section
    J, JO, dJ, dJO = body.J, body.JO, body.dJ, body.dJO
    x, wI, ones, p, dp, d2p, dpw, d2pw = (body.x, body.wI, body.ones, body.p, body.dp,
                                          body.d2p, body.dpw, body.d2pw)
    deriv = mode == MASS_DERIVATIVE
    chain(arm, q, ch, work, deriv)
    sums.M[:] = 0.0
    sums.g[:] = 0.0
    if deriv:
        sums.dM[:] = 0.0
    U = 0.0
    for i in range(n):
        nu = 3 * i
        Ni = nu + 3
        m = arm.mass[i]
        qi = q[nu:Ni]
        B = ch.Rb[i]
        section_cog(arm.length[i], arm.radius[i], qi, p, dp, d2p, work)
        _point_vector(B, ch.ob[i], p, x)
        rotate_matrix(B, dp, dpw)
        point_jacobian(i, x, dpw, d2pw, ch.om, ch.v0, ch.dom, ch.dv0, WITHOUT_DERIVATIVES,
                       J, dJ)
        U += add_gravity(m, arm.gravity, x, J, Ni, sums.g)
        r2 = arm.radius[i] * arm.radius[i]
        for k in range(arm.nodes.shape[0]):
            mk = m * arm.weights[k]
            section_point(arm.length[i], arm.radius[i], qi, arm.nodes[k], p, dp, d2p, work)
            _point_vector(B, ch.ob[i], p, x)
            rotate_matrix(B, dp, dpw)
            rotate_tensor(B, d2p, d2pw)
            point_jacobian(i, x, dpw, d2pw, ch.om, ch.v0, ch.dom, ch.dv0, deriv, J, dJ)
            add_term((J, dJ, COLUMN0, Ni), (J, dJ, COLUMN0, Ni), ones, 0.5 * mk, qd, Ni, mode,
                     sums, tw)
            section_rotation(arm.radius[i], qi, arm.nodes[k], body.R, body.kap, body.dkap,
                             work)
            angular_jacobian(i, B, body.R, body.kap, body.dkap, ch.om, ch.dom, deriv, JO, dJO,
                             body.Rw, body.omt)
            wI[0] = wI[1] = 0.25 * mk * r2
            wI[2] = 0.5 * mk * r2
            add_term((JO, dJO, COLUMN0, Ni), (JO, dJO, COLUMN0, Ni), wI, 0.5, qd, Ni, mode,
                     sums, tw)
    finish(arm, sums, q, qd, task, v)
    return U


class IntegralModel(ContinuumModel):
    """
    The disc-stack continuum model, by quadrature of the exact integrand.

    Its kernel fills ``M`` and ``dM``; ``C`` comes from ``dM`` here, before the task.
    """

    kernel = staticmethod(integral_evaluate)

    def _run(self, q, qd=None, mode=MASS, task=TASK_NONE, v=None):
        if mode == MASS:
            return super()._run(q, qd, MASS, task, v)
        q, qd, v = self._vector(q), self._vector(qd), self._vector(v)
        U = self._kernel(self.arm, self.memory, q, qd, MASS_DERIVATIVE, TASK_NONE, v)
        sums = self.data.sums
        if mode == CORIOLIS or mode == CQ_ALONE:
            sums.C[:] = coriolis_from_dM(sums.dM, qd)
            sums.cq[:] = sums.C @ qd
        finish(self.arm, sums, q, qd, task, v)
        return U


def from_spec(spec):
    """Build the integral model from the nested `model` namespace (see `params.read_spec`)."""
    return IntegralModel(read_spec(spec))
