"""
The executor on every supported rclpy: the events executor where it exists, else the
single-threaded one with one info line (Humble's rclpy has no `rclpy.experimental`).
"""

import ast
from pathlib import Path
import sys

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor

from continuum_ctrl.ros.plumbing import find_events_executor, single_threaded_executor

PACKAGE = Path(__file__).resolve().parents[2] / 'continuum_ctrl'


@pytest.fixture
def context():
    """Yield an initialised rclpy context of this test's own."""
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.shutdown(context=context)


def test_events_executor_where_rclpy_has_it(context):
    events_executor = find_events_executor()
    assert events_executor is not None      # Jazzy and Kilted, the distributions tested here
    executor = single_threaded_executor(context=context)
    assert not isinstance(executor, SingleThreadedExecutor)
    executor.shutdown()
    plain = single_threaded_executor(events=False, context=context)
    assert isinstance(plain, SingleThreadedExecutor)
    plain.shutdown()


def test_without_the_events_executor_falls_back_with_one_info_line(context, monkeypatch, capfd):
    # what `from rclpy.experimental import ...` meets on Humble: no such module
    monkeypatch.setitem(sys.modules, 'rclpy.experimental', None)
    assert find_events_executor() is None
    logger = rclpy.logging.get_logger('continuum_ctrl_test_executors')
    logger.set_level(rclpy.logging.LoggingSeverity.INFO)
    executor = single_threaded_executor(context=context, logger=logger)
    assert isinstance(executor, SingleThreadedExecutor)
    assert executor.context is context
    executor.shutdown()
    lines = [line for line in capfd.readouterr().err.splitlines()
             if 'continuum_ctrl_test_executors' in line]
    assert len(lines) == 1 and 'INFO' in lines[0] and 'SingleThreadedExecutor' in lines[0], lines


def test_no_module_imports_the_events_executor_at_import_time():
    """Every module must import on Humble: rclpy.experimental only inside functions."""
    offenders = []
    for path in sorted(PACKAGE.rglob('*.py')):
        for node in ast.parse(path.read_text()).body:
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
            if any(name.startswith('rclpy.experimental') for name in names):
                offenders.append(f'{path.relative_to(PACKAGE.parent)}:{node.lineno}')
    assert not offenders
