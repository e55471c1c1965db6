"""One set of arm names: `demo --arm` and `simulate --arm` resolve the same spellings."""

import pytest

from continuum_ctrl.apps import cli
from continuum_ctrl.params import ConfigError
from continuum_ctrl.params.launch_description import arm_config, ARMS, config_path


@pytest.mark.parametrize('short', sorted(ARMS))
def test_short_name_file_stem_file_name_and_path_name_the_same_file(short):
    expected = config_path(f'{ARMS[short]}.yaml').resolve()
    for spelling in (short, ARMS[short], f'{ARMS[short]}.yaml', str(expected)):
        assert arm_config(spelling).resolve() == expected


def test_an_unknown_arm_is_one_error_naming_the_option_and_the_choices():
    with pytest.raises(ConfigError, match=r"'--arm'.*'planar_3r'.*2r \(planar_2r.yaml\)"):
        arm_config('planar_3r')


@pytest.mark.parametrize('command', ['simulate', 'demo'])
def test_both_commands_reject_an_unknown_arm_the_same_way(command, capsys):
    """Through the command-line entry point, in process (the bad-input corpus runs processes)."""
    assert cli.main([command, '--arm', 'planar_3r']) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f'continuum-ctrl {command}: error: ')
    assert "'--arm'" in captured.err and "'planar_3r'" in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and not captured.out


def test_simulate_takes_the_short_name(tmp_path):
    from continuum_ctrl.apps.simulate import main

    assert main(['--arm', '2r', '--duration', '0.2', '--out', str(tmp_path)]) == 0
    assert (tmp_path / 'planar_2r_tracking.png').is_file()
