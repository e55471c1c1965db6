"""
Endurance: the closed loop at 500 Hz for a long run; memory, missed ticks, rejects, compute.

    python bench/endurance.py [--duration 600] [--params-file continuum_3section.yaml]

Controller and simulator run as processes over DDS (launch description command lines). Every
`--sample` seconds it prints, from /proc and the controller's /diagnostics: resident memory
(VmRSS) of both processes, CPU seconds, ticks, late ticks (period > 1.5 x nominal), ticks
missed against the wall clock, rejected inputs (all kinds) and the worst compute time of a
tick since the warm-up (the first ticks compile the model). At the end: memory at start
(after `--warmup`) and end, its slope over the run (least squares over the samples), and a
verdict: memory must not grow.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench_node import cpu_seconds
import numpy as np

from continuum_ctrl.params.launch_description import simulation
from continuum_ctrl.apps.launch import start, stop
from continuum_ctrl.ros.recorder import Recorder

#: growth of resident memory over the run that still counts as flat (allocator noise), MB
FLAT_MB = 2.0


def rss_mb(pid):
    """Return the resident memory of a process, MB."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    return float('nan')


def sample(rec, processes, rate, t0):
    """Return one row of figures (dict) from /proc and the latest controller diagnostics."""
    values = rec.diagnostics[-1]
    elapsed = time.monotonic() - t0
    ticks = int(values['run_ticks'])
    rejected = sum(int(v) for k, v in values.items() if k.startswith('rejected_'))
    return {'t_s': elapsed, 'ctrl_rss_mb': rss_mb(processes[0].pid),
            'sim_rss_mb': rss_mb(processes[1].pid),
            'ctrl_cpu_s': cpu_seconds(processes[0].pid),
            'sim_cpu_s': cpu_seconds(processes[1].pid),
            'ticks': ticks, 'late': int(values['run_late_ticks']),
            'rejected': rejected, 'compute_max_us': float(values['run_compute_max_us']),
            'compute_p99_us': float(values['run_compute_p99_us']),
            'status': values['status'], 'rate': rate}


def main():
    """Run the closed loop for `--duration` s; print samples and the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[1])
    parser.add_argument('--duration', type=float, default=600.0, help='seconds (600)')
    parser.add_argument('--params-file', default='continuum_3section.yaml')
    parser.add_argument('--sample', type=float, default=30.0, help='seconds between rows')
    parser.add_argument('--warmup', type=float, default=20.0, help='seconds before start')
    args = parser.parse_args()
    rate = 500.0
    with tempfile.TemporaryDirectory() as tmp:
        logs = [open(Path(tmp) / f'{n}.log', 'w') for n in ('controller', 'simulator')]
        nodes = simulation(args.params_file)
        processes = start(nodes, env=dict(os.environ), outputs=logs)
        rows = []
        try:
            with Recorder() as rec:
                if not rec.wait(lambda: rec.active_since is not None and rec.diagnostics,
                                120.0, processes):
                    raise SystemExit('the nodes did not start')
                rec.run(args.warmup)
                t0 = time.monotonic()
                first_ticks = int(rec.diagnostics[-1]['run_ticks'])
                worst, seen = 0.0, len(rec.diagnostics)       # worst compute after warm-up
                print(f"{'t s':>6} {'ctrl MB':>8} {'sim MB':>7} {'ctrl cpu':>8} "
                      f"{'sim cpu':>7} {'ticks':>8} {'late':>5} {'missed':>6} "
                      f"{'rejected':>8} {'cmp max us':>10} {'status':>7}", flush=True)
                while True:
                    row = sample(rec, processes, rate, t0)
                    row['worst_us'] = worst
                    row['missed'] = max(int(round(row['t_s'] * rate))
                                        - (row['ticks'] - first_ticks), 0)
                    rows.append(row)
                    print(f"{row['t_s']:6.0f} {row['ctrl_rss_mb']:8.1f} "
                          f"{row['sim_rss_mb']:7.1f} {row['ctrl_cpu_s']:8.1f} "
                          f"{row['sim_cpu_s']:7.1f} {row['ticks']:8d} {row['late']:5d} "
                          f"{row['missed']:6d} {row['rejected']:8d} "
                          f"{row['worst_us']:10.0f} {row['status']:>7}", flush=True)
                    if row['t_s'] >= args.duration - 1e-6:
                        break
                    rec.run(min(args.sample, args.duration - row['t_s']))
                    worst = max([worst] + [float(d['compute_max_us'])
                                           for d in rec.diagnostics[seen:]])
                    seen = 1
                    rec.states.clear()            # the recorder keeps every message
                    rec.commands.clear()
                    del rec.diagnostics[:-1], rec.sim_diagnostics[:-1]
                alive = all(p.poll() is None for p in processes)
        finally:
            stop(processes)
            for log in logs:
                log.close()
    summary(rows, alive)


def summary(rows, alive):
    """Print the run's figures and the memory verdict."""
    t = np.array([r['t_s'] for r in rows])
    first, last = rows[0], rows[-1]
    print(f'\nrun: {t[-1]:.0f} s at 500 Hz, nodes alive at the end: {alive}')
    print(f"ticks {last['ticks'] - first['ticks']}, missed {last['missed']} "
          f"({100.0 * last['missed'] / max(t[-1] * 500.0, 1):.2f} %), late (> 1.5 periods) "
          f"{last['late'] - first['late']}, rejected inputs {last['rejected']}, worst compute "
          f"{last['worst_us']:.0f} us after warm-up ({last['compute_max_us']:.0f} us with "
          f"start-up; run p99 {last['compute_p99_us']:.0f} us)")
    flat = True
    for key, name in (('ctrl_rss_mb', 'controller'), ('sim_rss_mb', 'simulator')):
        mem = np.array([r[key] for r in rows])
        slope = np.polyfit(t, mem, 1)[0] * 60.0 if len(t) > 2 else float('nan')
        grew = mem[-1] - mem[0]
        flat &= grew <= FLAT_MB
        print(f'{name}: resident memory {mem[0]:.1f} MB at start, {mem[-1]:.1f} MB at the end '
              f'({grew:+.1f} MB; slope {slope:+.3f} MB/min; max {mem.max():.1f} MB)')
    print(f'memory: {"flat" if flat else "GROWS"} (limit {FLAT_MB:g} MB over the run)')


if __name__ == '__main__':
    main()
