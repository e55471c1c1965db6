"""Docstring style (pep257 with the ament configuration), as `colcon test` runs it."""

import pytest
from ament_pep257.main import main


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    rc = main(argv=['continuum_ctrl', 'launch', 'bench'])
    assert rc == 0, 'Found code style errors / warnings'
