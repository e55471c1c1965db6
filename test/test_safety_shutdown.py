"""
Safe shutdown of a real controller process: after SIGTERM or SIGINT the last message on
`~/commands` is the safe command (zero effort; p_min in pressure mode), and the exit is clean.
"""

import signal

import numpy as np
import pytest

from ros_nodes import params_file, running
from safety_tools import domain

#: the 2R in pressure mode: PMA-like pushers, p_min above zero so that venting is visible
PRESSURE = {'output': {'mode': 'pressure', 'area': [1e-4], 'p_min': 1e4, 'p_max': 3e5}}


@pytest.mark.parametrize('sig, mode', [(signal.SIGTERM, 'effort'), (signal.SIGINT, 'effort'),
                                       (signal.SIGTERM, 'pressure')])
def test_last_command_after_a_signal_is_the_safe_command(tmp_path, sig, mode):
    """The controller runs against the simulator, is signalled, exits 0, vents last."""
    nodes = {'all': PRESSURE} if mode == 'pressure' else {}
    path = params_file(tmp_path, 'planar_2r.yaml', **nodes)
    safe = [1e4, 1e4] if mode == 'pressure' else [0.0, 0.0]
    with domain('shutdown'), running(tmp_path, path) as (rec, processes):
        rec.run(1.0)
        sent = np.array([c for _, c in rec.commands])
        assert len(sent) > 100 and not np.all(sent == safe)          # controlling
        processes[0].send_signal(sig)
        assert processes[0].wait(timeout=30.0) == 0
        rec.run(1.0)
    assert np.array_equal(rec.commands[-1][1], safe)
