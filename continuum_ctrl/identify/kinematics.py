"""
Kinematic calibration from a recorded run: the model's tip against the captured one.

    pairs = read_tip_pairs(path, model, joints, frame, base_frame)   # /joint_states, /mocap/tip
    fit = calibrate(pairs, model, frame)        # KinematicFit: the calibration, held out
    refused = fit.refusals(min_r2)

Each captured tip (geometry_msgs/PoseStamped, stamped at the measurement, in
`task.base_frame`) is paired with the joints measured at its stamp: the joint states
(their header stamps) interpolated there, so the capture's latency pairs no tip with the
joints of a later instant. The model's tip at those joints less the captured one is the gap.
Only a still tip's samples are kept (STILL, SETTLED): the calibration is of the static
kinematics. The gap is fitted by least squares as the shape's sag and twist at the joints and
ridge-regularized polynomials of the model's tip's reach and height
(control/kinematic_calibration.py says why that form; the forms are FORMS: the shape's parts
on continuum arms, the polynomial alone on others). The fit is judged on the
workspace it did not see: the samples are cut into REGIONS sectors of the tip's bearing
about the base's z axis (equal counts), and each sector's gaps are predicted by the fit to
the others. Its held-out R^2 is the share of the gap's square the calibration removes there
(``1 - sum |g - g_fit|^2 / sum |g|^2``: 0 is no better than the model alone); a fit below
`min_r2` in any sector is contradicted by the data and refused. The form kept is the one
whose held-out residual is least.
"""

from dataclasses import dataclass
from typing import List

import numpy as np

from continuum_ctrl.control.kinematic_calibration import (DEGREES, design,
                                                          KinematicCalibration, shape_design,
                                                          sizes)
from continuum_ctrl.identify.data import mcap_files
from continuum_ctrl.params import ConfigError, real_list, real_literal
from continuum_ctrl.params.launch_description import MOCAP_TOPIC

#: fewest paired samples a fit takes, and per held-out region
MIN_PAIRS, MIN_REGION = 200, 20
#: sectors of the tip's bearing held out in turn
REGIONS = 4
#: a tip stamped further than this from both neighbouring joint states is not paired, s
MAX_PAIR_GAP = 0.05
#: a tip is still, and its gap the static kinematics', when the model's tip has stayed
#: within STILL m (each coordinate) over the last SETTLED s: a moving arm's gap holds its
#: dynamics too (its sway, the PMAs' lag), which the task-space correction's live part follows
STILL, SETTLED = 0.002, 0.5
#: the ridge on the monomials' coefficients, relative (per sample, on the scaled tip), and
#: on the shape's (per sample, m^2: far below a column's square, 1e-5 m^2 and more; it only
#: keeps a section beyond the task frame, whose column is zero, at zero)
RIDGE, SHAPE_RIDGE = 1e-4, 1e-12
#: the forms fitted, ``(sag, twist, polynomial degree)`` (control/kinematic_calibration.py)
FORMS = ((True, False, 0), (True, True, 0)) + tuple(
    (True, True, degree) for degree in DEGREES) + tuple(
    (False, False, degree) for degree in DEGREES)


@dataclass
class TipPairs:
    """
    Paired samples of a still tip: the joints, the model's tips there, the gaps.

    `joints` (N, n) m, `tips` (N, 3) m, `gaps` (N, 3) m.

    `unpaired`: tips without joint states near their stamp; `moving`: those left out as taken
    while the tip moved (module doc).
    """

    name: str
    joints: np.ndarray
    tips: np.ndarray
    gaps: np.ndarray
    unpaired: int = 0
    moving: int = 0

    def joined(self, others):
        """Return these pairs and those of the TipPairs `others` as one."""
        runs = [self, *others]
        return TipPairs(', '.join(run.name for run in runs),
                        np.concatenate([run.joints for run in runs]),
                        np.concatenate([run.tips for run in runs]),
                        np.concatenate([run.gaps for run in runs]),
                        sum(run.unpaired for run in runs), sum(run.moving for run in runs))


def _decoded(path, topics):
    """Yield ``(topic, stamp ns, frame_id, message)`` of `topics`, ConfigError if unreadable."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    for file in mcap_files(path):
        try:
            with open(file, 'rb') as handle:
                reader = make_reader(handle, decoder_factories=[DecoderFactory()])
                for _, channel, message, decoded in reader.iter_decoded_messages(topics=topics):
                    stamp = decoded.header.stamp.sec * 1000000000 + decoded.header.stamp.nanosec
                    yield (channel.topic, stamp or message.publish_time or message.log_time,
                           decoded.header.frame_id, decoded)
        except (McapError, ValueError, KeyError, EOFError, OSError) as exc:
            raise ConfigError('', f'{file}: cannot read as MCAP: {exc}') from None


def read_tip_pairs(path, model, joints, frame, base_frame, states_topic='/joint_states',
                   tip_topic=MOCAP_TOPIC):
    """
    Read a bag's joint states and captured tips; return the TipPairs of `model`'s `frame`.

    `joints`: identify.data.Joints (names to model order). One ConfigError line for a bag
    without either topic, a tip in another frame than `base_frame`, or too few pairs.
    """
    source = str(path)
    states, tips, names, columns = [], [], None, None
    for topic, stamp, frame_id, decoded in _decoded(path, [states_topic, tip_topic]):
        if topic == tip_topic:
            if frame_id != base_frame:
                raise ConfigError('', f"{source}: tips on '{tip_topic}' are in frame "
                                      f"'{frame_id}', not task.base_frame '{base_frame}' (no "
                                      'tf2: capture the tip in the base frame)')
            p = decoded.pose.position
            tips.append((stamp, (p.x, p.y, p.z)))
            continue
        if list(decoded.name) != names:
            names = list(decoded.name)
            columns = joints.position_columns(names, source, foreign=True)
        if columns is not None:
            states.append((stamp, np.asarray(decoded.position, dtype=float)[columns]))
    for topic, rows in ((states_topic, states), (tip_topic, tips)):
        if not rows:
            raise ConfigError('', f"{source}: no messages on '{topic}' (a calibration needs "
                                  f"joint states on '{states_topic}' and the captured tip on "
                                  f"'{tip_topic}')")
    pairs = _pair(source, states, tips, model, frame)
    if len(pairs.tips) < MIN_PAIRS:
        raise ConfigError('', f'{source}: {len(pairs.tips)} captured tips of a still tip paired '
                              f'with joint states, a calibration needs at least {MIN_PAIRS} '
                              '(record longer, the tip visiting the workspace and holding)')
    return pairs


def _pair(source, states, tips, model, frame):
    """Return the TipPairs: the joints interpolated at each tip's stamp (module doc)."""
    states.sort(key=lambda row: row[0])
    tips.sort(key=lambda row: row[0])
    origin = states[0][0]
    t = np.array([row[0] - origin for row in states]) * 1e-9
    q = np.array([row[1] for row in states])
    stamps = np.array([row[0] - origin for row in tips]) * 1e-9
    after = np.searchsorted(t, stamps)
    inside = (after > 0) & (after < len(t))
    after = np.clip(after, 1, len(t) - 1)
    near = np.minimum(np.abs(stamps - t[after - 1]), np.abs(t[after] - stamps))
    keep = inside & (near <= MAX_PAIR_GAP)
    captured = np.array([row[1] for row in tips])[keep]
    joints = np.column_stack([np.interp(stamps[keep], t, column) for column in q.T])
    model_tips = np.array([model.frame_pose(row, frame)[:3, 3] for row in joints]).reshape(-1, 3)
    still = _still(stamps[keep], model_tips)
    return TipPairs(source, joints[still], model_tips[still], (model_tips - captured)[still],
                    int(np.count_nonzero(~keep)), int(np.count_nonzero(~still)))


def _still(t, tips):
    """Return where the model's tip (m, (N, 3) at `t` s) has held within STILL over SETTLED s."""
    keep = np.zeros(len(t), dtype=bool)
    first = 0
    for k in range(len(t)):
        while t[first] < t[k] - SETTLED:
            first += 1
        window = tips[first:k + 1]
        keep[k] = t[k] - t[0] >= SETTLED and float(np.max(np.ptp(window, axis=0))) <= STILL
    return keep


@dataclass
class Regressors:
    """Each sample's columns of the gap: the shape's (N, 3, n + 1), the model's tips (N, 3) m."""

    frame: str
    shape: np.ndarray
    tips: np.ndarray

    @classmethod
    def of(cls, model, frame, pairs):
        """Return the regressors of `pairs` (TipPairs) for `model`'s `frame`."""
        shape = [shape_design(model, q, frame) for q in pairs.joints] if hasattr(
            model, 'backbone_frames') else np.zeros((len(pairs.tips), 3, 0))
        return cls(frame, np.asarray(shape).reshape(len(pairs.tips), 3, -1), pairs.tips)

    def forms(self):
        """Return the forms these samples can fit: FORMS, those of the shape if it has one."""
        return [form for form in FORMS if self.shape.shape[2] or not form[0]]

    def columns(self, form, keep=slice(None)):
        """Return the columns of `form` at the samples `keep`, (N, 3, count)."""
        sag, twist, degree = form
        sections = self.shape.shape[2] - 1
        parts = ([self.shape[keep][:, :, :sections]] if sag else []) + (
            [self.shape[keep][:, :, sections:]] if twist else []) + (
            [design(self.tips[keep], degree)] if degree else [])
        return np.concatenate(parts, axis=2)

    def fit(self, form, gaps, keep=slice(None)):
        """Return the coefficients of `form` fitted to `gaps` (N, 3) m at the samples `keep`."""
        columns = self.columns(form, keep)
        regressors = columns.reshape(-1, columns.shape[2])
        shape = regressors.shape[1] - (sum(sizes(form[2])) if form[2] else 0)
        ridge = len(columns) * np.diag(np.r_[np.full(shape, SHAPE_RIDGE),
                                             np.full(regressors.shape[1] - shape, RIDGE)])
        return np.linalg.solve(regressors.T @ regressors + ridge,
                               regressors.T @ gaps[keep].reshape(-1))

    def calibration(self, form, coefficients):
        """Return the KinematicCalibration of `form`'s `coefficients`."""
        sag, twist, _ = form
        sections = self.shape.shape[2] - 1 if sag else 0
        return KinematicCalibration(
            self.frame, coefficients[sections + twist:], coefficients[:sections],
            coefficients[sections] if twist else 0.0)


def form_name(form):
    """Return a form's name: 'sag', 'sag + twist + degree 2', 'degree 2'."""
    sag, twist, degree = form
    return ' + '.join((['sag'] if sag else []) + (['twist'] if twist else []) +
                      ([f'degree {degree}'] if degree else []))


def regions(tips, count=REGIONS):
    """Return the region (0 .. count-1) of each tip: sectors of its bearing, equal counts."""
    bearing = np.arctan2(tips[:, 1], tips[:, 0])
    ordered = np.sort(bearing)
    widest = np.argmax(np.diff(ordered, append=ordered[0] + 2.0 * np.pi))
    start = ordered[(widest + 1) % len(ordered)]        # after the widest empty bearing
    order = np.argsort(np.mod(bearing - start, 2.0 * np.pi), kind='stable')
    region = np.empty(len(tips), dtype=int)
    region[order] = np.arange(len(tips)) * count // len(tips)
    return region


@dataclass
class KinematicFit:
    """
    A fitted calibration and its held-out figures.

    `calibration`; `form` (sag, twist, degree); `gap_rms`, `fit_rms` m (all samples: the gap, the
    residual of the fit to all); per region `held_rms` m (its gaps, predicted by the others'
    fit) and `held_r2`; `held_out` m (the RMS over every region's held-out residual);
    `by_form` {form: held_out}.
    """

    calibration: KinematicCalibration
    form: tuple
    gap_rms: float
    fit_rms: float
    region_gap: np.ndarray
    held_rms: np.ndarray
    held_r2: np.ndarray
    held_out: float
    by_form: dict

    def refusals(self, min_r2) -> List[str]:
        """Return a line per region whose held-out R^2 is below `min_r2` (empty: accepted)."""
        return [f'region {k + 1} of {len(self.held_r2)} (bearing sector): held-out R^2 '
                f'{r2:.2f} < {min_r2:g} (residual {rms * 1e3:.2f} mm against the gap\'s '
                f'{gap * 1e3:.2f} mm): the gap there is not the one the rest predicts'
                for k, (r2, rms, gap) in enumerate(zip(self.held_r2, self.held_rms,
                                                       self.region_gap)) if not r2 >= min_r2]

    def text(self):
        """Return the fit's report lines."""
        lines = [f'gap {self.gap_rms * 1e3:.2f} mm RMS; {form_name(self.form)} (held-out '
                 'residual by form: ' + ', '.join(f'{form_name(f)} {v * 1e3:.2f} mm' for f, v
                                                  in self.by_form.items()) + ')',
                 *(['compliance by section (of the model\'s PMAs\' bending): ' + ', '.join(
                     f'{c:.3f}' for c in self.calibration.compliance) +
                    f'; twist {self.calibration.twist:.3f}'] if self.form[0] else []),
                 f'fit residual {self.fit_rms * 1e3:.3f} mm RMS; held out by bearing sector '
                 f'{self.held_out * 1e3:.3f} mm RMS']
        lines += [f'  region {k + 1}: gap {gap * 1e3:.2f} mm, held-out residual '
                  f'{rms * 1e3:.3f} mm, R^2 {r2:.3f}' for k, (gap, rms, r2) in
                  enumerate(zip(self.region_gap, self.held_rms, self.held_r2))]
        return '\n'.join(lines)


def _held_out(regressors, gaps, region, form):
    """Return per region the held-out residual's squares summed, (REGIONS,)."""
    sse = np.zeros(REGIONS)
    for k in range(REGIONS):
        out = region == k
        coefficients = regressors.fit(form, gaps, ~out)
        sse[k] = np.sum((gaps[out] - regressors.columns(form, out) @ coefficients) ** 2)
    return sse


def _rms(sse, count):
    return np.sqrt(sse / np.maximum(count, 1))


def calibrate(pairs: TipPairs, model, frame) -> KinematicFit:
    """Fit every form, keep the least held-out residual's (module doc); ConfigError if thin."""
    tips, gaps = pairs.tips, pairs.gaps
    region = regions(tips)
    counts = np.bincount(region, minlength=REGIONS)
    if counts.min() < MIN_REGION:
        raise ConfigError('', f'{pairs.name}: {counts.min()} samples in a region, a held-out '
                              f'region needs {MIN_REGION}')
    regressors = Regressors.of(model, frame, pairs)
    held = {form: _held_out(regressors, gaps, region, form) for form in regressors.forms()}
    by_form = {form: float(_rms(sse.sum(), len(tips))) for form, sse in held.items()}
    form = min(by_form, key=by_form.get)
    coefficients = regressors.fit(form, gaps)
    residual = gaps - regressors.columns(form) @ coefficients
    gap_sq = np.bincount(region, np.sum(gaps ** 2, axis=1), minlength=REGIONS)
    return KinematicFit(regressors.calibration(form, coefficients), form,
                        float(np.sqrt(np.mean(np.sum(gaps ** 2, axis=1)))),
                        float(np.sqrt(np.mean(np.sum(residual ** 2, axis=1)))),
                        _rms(gap_sq, counts), _rms(held[form], counts),
                        1.0 - held[form] / gap_sq, by_form[form], by_form)


def calibration_yaml(fit: KinematicFit, sources) -> str:
    """
    Return the controller's overlay: `task.calibration.*` in its namespace only.

    Only the parts of the form fitted: ROS cannot declare an empty list (rclpy refused the
    whole file, and the controller node did not start).
    """
    calibration = fit.calibration
    shape = [f'        compliance: {real_list(calibration.compliance, 9)}',
             f'        twist: {real_literal(calibration.twist, 9)}'] \
        if len(calibration.compliance) else []
    gap = [f'        gap: {real_list(calibration.coefficients, 9)}'] \
        if len(calibration.coefficients) else []
    return '\n'.join([
        f'# Kinematic calibration by `continuum-ctrl identify --fit kinematics` from '
        f'{", ".join(str(s) for s in sources)}:',
        f'# {form_name(fit.form)}, gap {fit.gap_rms * 1e3:.2f} mm RMS, held-out residual '
        f'{fit.held_out * 1e3:.3f} mm RMS (by bearing sector).',
        '# The controller\'s only (not /**: the simulator keeps its truth); give it as a '
        'further --params-file.',
        'continuum_controller:', '  ros__parameters:', '    task:', '      calibration:',
        *shape, *gap]) + '\n'
