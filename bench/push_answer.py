"""
Issue 49's push: the loop's answer to 20 N on the MuJoCo arm's last tip for 0.2 s, in process.

    python bench/push_answer.py [--hold] [--start 5.0 5.3] [--size 20] [--set KEY=VALUE ...]

The shipped file's controller against its MuJoCo arm (4 discs, no mismatch, its valves,
exact states: sim/closed_loop.py), holding test/sim/test_push.py's bent pose (`--hold`) or
tracking the file's sinusoid, pushed horizontally on the last section's tip from each
`--start` (s) for 0.2 s; `--set` overrides controller keys (YAML values). Per push: the
PMAs whose pressure touches both bounds within 0.5 s of the start (and when each bound
first), the time from the start until every PMA error is back under 0.1 mm for good, the
largest error, the command's largest rate (MPa/s) and the true (MuJoCo's) tip's distance
from the reference's tip (the controller's kinematics of the reference lengths) just before
the push and 2 s after its start, and how far it moved in between (holding: the push's
mark): the lengths back are not the tip back.
"""

import argparse

import numpy as np
import yaml

from continuum_ctrl.apps.node_pair import node_pair
from continuum_ctrl.params.launch_description import config_path
from continuum_ctrl.sim.closed_loop import simulate_nodes
from continuum_ctrl.sim.report import tip_frame

FILE = 'continuum_3section.yaml'
#: test/sim/test_push.py's bent pose: each section towards another PMA, m
HOLD = {'reference.amplitude': [0.0],
        'reference.center': [0.020, 0.008, 0.011, 0.011, 0.020, 0.008, 0.008, 0.011, 0.020]}
BACK = 1e-4         # m, "back": every PMA error under this
WINDOW = 0.5        # s after the start in which no PMA may touch both bounds


def pushed(controller, start, size=20.0, after=2.8):
    """Run one push; return the loop and the log (with the true tip at each tick)."""
    plant_options = {'engine': 'mujoco', 'push.size': [size], 'push.direction': [1.0, 0.0, 0.0],
                     'push.start': [start], 'push.duration': [0.2], 'mocap.rate_hz': 1000.0}
    runtime, plant = node_pair(config_path(FILE), controller, plant_options)
    log = simulate_nodes(runtime, plant, start + after)
    runtime.close()
    return runtime.loop, log


def figures(loop, log, start):
    """Return what the module doc lists of one push, as a dict."""
    t, error = log.t, np.abs(log.q - log.q_des)
    actuation = loop.settings.actuation
    window = (t >= start) & (t < start + WINDOW)
    at_low = log.command <= actuation.p_min + 1.0
    at_high = log.command >= actuation.p_max - 1.0
    both = np.flatnonzero(np.any(at_low & window[:, None], axis=0)
                          & np.any(at_high & window[:, None], axis=0))
    out = np.flatnonzero((t >= start) & np.any(error > BACK, axis=1))
    before, later = int(np.searchsorted(t, start)) - 1, int(np.searchsorted(t, start + 2.0))
    model, frame = loop.model, tip_frame(loop.model)

    def tip_off(k):
        """Return the true tip's distance from the reference's at tick `k`, m."""
        return float(np.linalg.norm(log.tip[k] - model.frame_pose(log.q_des[k], frame)[:3, 3]))
    return {
        'both': [(int(k), round(float(t[np.argmax(at_low[:, k] & window)] - start), 3),
                  round(float(t[np.argmax(at_high[:, k] & window)] - start), 3)) for k in both],
        'back': float(t[out[-1]] + loop.period - start) if out.size else 0.0,
        'largest': float(np.max(error[t >= start])),
        'rate': float(np.max(np.abs(np.diff(log.command, axis=0)))) / loop.period / 1e6,
        'tip': (tip_off(before), tip_off(later)),
        'moved': float(np.linalg.norm(log.tip[later] - log.tip[before])),
    }


def main():
    """Print one line per push."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--hold', action='store_true', help="hold test_push's bent pose")
    parser.add_argument('--start', type=float, nargs='+', default=[5.0], help='push starts, s')
    parser.add_argument('--size', type=float, default=20.0, help='push, N')
    parser.add_argument('--set', nargs='*', default=[], metavar='KEY=VALUE',
                        help='controller overrides')
    args = parser.parse_args()
    controller = dict(HOLD if args.hold else {})
    for item in args.set:
        key, value = item.split('=', 1)
        controller[key] = yaml.safe_load(value)
    for start in args.start:
        loop, log = pushed(controller, start, args.size)
        f = figures(loop, log, start)
        print(f"start {start:.2f} s: back under 0.1 mm after {f['back']:.2f} s, largest "
              f"{1e3 * f['largest']:.1f} mm, {f['rate']:.1f} MPa/s, true tip off the reference's "
              f"{1e3 * f['tip'][0]:.1f} mm before, {1e3 * f['tip'][1]:.1f} mm at +2 s (moved "
              f"{1e3 * f['moved']:.1f} mm); both bounds within {WINDOW} s: {len(f['both'])} "
              f"(PMA, low at, high at: {f['both']})", flush=True)


if __name__ == '__main__':
    main()
