"""Type check of the public API (the modules listed under [mypy] in setup.cfg)."""

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.linter
def test_mypy(monkeypatch):
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = api.run(['--config-file', str(ROOT / 'setup.cfg')])
    assert status == 0, stdout + stderr
