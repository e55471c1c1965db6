"""
When a tick of the loop is late: one definition, used by every figure that counts lateness.

The loop thread (runtime/loop_thread.py) wakes at deadlines on a fixed grid and hands each
tick its `lateness`: how long after the first deadline not yet served the tick started, s.
`split(lateness, period)` reads it as ``(skipped, late)``:
- `skipped`, ``floor(lateness / period)``: deadlines that passed with no tick (the tick
  serves the next one);
- `late`: the tick started `LATE_SHARE` periods or more after the deadline it serves.
A deadline is missed when it was skipped or its tick was late. An executor timer (simulated
time) has no deadline and passes 0: never late.

`split` is compiled so that the loop's per-tick figures (runtime/tick_record.py) call the same
definition from compiled code. `split_in_python` is that definition run by the interpreter,
for the loop thread's own clock: a compiled call there would load its kernel at the first
tick.
"""

from continuum_ctrl.numerics.jit import compiled

#: a tick starting this share of a period after its deadline, or later, is late
LATE_SHARE = 0.5
#: seen from outside (the times of the commands a subscriber receives), a gap of more than
#: this many periods after an on-time tick is a late tick
LATE_GAP = 1.0 + LATE_SHARE


@compiled()
def split(lateness, period):
    """Return ``(skipped, late)`` of a tick `lateness` s after its deadline (see the module)."""
    skipped = int(lateness // period) if lateness >= period else 0
    return skipped, lateness - skipped * period >= LATE_SHARE * period


split_in_python = split.py_func
