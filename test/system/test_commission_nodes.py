"""
`continuum-ctrl commission` end to end against the simulator node, the truth hidden from it.

The simulator node alone (the nominal file plus its own mismatch: stiffness x 1.2, damping
x 1.25, area x 1.1, a 15 kPa dead zone, 60 ms + 10 ms valves, lengths only), then
`commission` from the nominal file through the controller node's topics, a short
excitation: the fitted stiffness and area within 10 %, the valves' latency (lag plus dead
time: the excitation's content up to 1 Hz pins their sum, not their split) within 10 %, gains
tuned for the fitted plant, and the written file loads and ran the verification (its table
printed).
"""

from pathlib import Path

import pytest
import yaml

from continuum_ctrl.apps import cli
from continuum_ctrl.apps.node_pair import controller_runtime
from continuum_ctrl.params.launch_description import NodeDescription, PACKAGE, SIMULATOR
from continuum_ctrl.apps.launch import start, stop

pytestmark = [pytest.mark.ros, pytest.mark.slow]

PARAMS = 'config/continuum_3section.yaml'
TRUTH = {'stiffness': 1.2 * 2200.0, 'area': 1.1 * 1.33e-4, 'latency': 0.06 + 0.01}
PLANT = {'mismatch': {'stiffness_scale': 1.2, 'damping_scale': 1.25, 'area_scale': 1.1,
                      'deadzone': 15e3},
         'actuator': {'time_constant': 0.06, 'delay': 0.01},
         'sensor': {'velocity': False, 'delay': 0.002}, 'noise': {'position': 2e-5},
         'initial': {'position': [0.013]}}


def test_commission_fits_tunes_and_writes_a_file_that_runs(tmp_path, capsys):
    plant = tmp_path / 'plant.yaml'
    plant.write_text(yaml.safe_dump({SIMULATOR: {'ros__parameters': PLANT}}))
    simulator = NodeDescription(PACKAGE, 'simulator_node', SIMULATOR, (PARAMS, str(plant)),
                                (('commands', '/continuum_controller/commands'),))
    out = tmp_path / 'tuned.yaml'
    with open(tmp_path / 'simulator.log', 'w') as log:
        processes = start([simulator], outputs=[log])
        try:
            for attempt in range(2):
                status = cli.main(['commission', PARAMS, '--out', str(out), '--safe', '6',
                                   '--excite', '25', '--verify', '6'])
                printed = capsys.readouterr()
                # a recording taken while the machine was starved (commands and states heard
                # out of step) is refused, rightly: measured once more, as other node tests do
                if status == 0 or "step 'identify' failed" not in printed.err or attempt:
                    break
                print(f'identify refused the recording, once more:\n{printed.err}')
        finally:
            stop(processes)
    assert status == 0, printed.err
    assert (tmp_path / 'tuned.mcap').is_file()
    assert (tmp_path / 'tuned_report' / 'identify' / 'held_out.png').is_file()
    fitted = yaml.safe_load((tmp_path / 'tuned_report' / 'fitted.yaml').read_text())
    values = fitted['/**']['ros__parameters']
    for stiffness in values['model']['sections']['stiffness']:
        assert stiffness == pytest.approx(TRUTH['stiffness'], rel=0.1)
    assert values['output']['area'][0] == pytest.approx(TRUTH['area'], rel=0.1)
    latency = values['output']['time_constant'] + values['output']['delay']
    assert latency == pytest.approx(TRUTH['latency'], rel=0.1)
    assert 'before (safe loop)' in printed.out and 'after (tuned file)' in printed.out
    assert (tmp_path / 'tuned_report' / 'summary.txt').read_text().splitlines()[0].strip()
    settings = controller_runtime(out).loop.settings
    assert settings.compensation[0] == pytest.approx(values['output']['time_constant'])
    tuned = yaml.safe_load((tmp_path / 'tuned_report' / 'gains.yaml').read_text())
    assert settings.kp[0] == pytest.approx(
        tuned['continuum_controller']['ros__parameters']['gains']['kp'][0])
    # the shipped gains lose this arm behind 60 ms valves; the tuner's are lower
    assert settings.kp[0] < 500.0
    assert Path(out).read_text().startswith('# continuum-ctrl commission')
