"""Code style (flake8 with the ament configuration), as `colcon test` runs it."""

import pytest
from ament_flake8.main import main_with_errors


@pytest.mark.flake8
@pytest.mark.linter
@pytest.mark.slow
def test_flake8():
    rc, errors = main_with_errors(argv=['continuum_ctrl', 'test', 'launch', 'bench', 'setup.py'])
    assert rc == 0, 'Found %d code style errors / warnings:\n' % len(errors) + '\n'.join(errors)
