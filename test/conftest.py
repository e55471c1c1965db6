"""
Test-wide settings: the `ros` and `slow` markers, and one DDS domain per ROS test module.

Tests that start nodes or DDS participants carry the `ros` marker; `ros_domain` gives each
module holding such tests a DDS domain of its own for its duration, counted from the run's
ROS_DOMAIN_ID (`./run` picks one per run), with discovery kept on this machine. Run the fast
part alone with ``./run test -m "not ros and not slow"``.
"""

import os

import pytest

#: DDS domains go up to 101 (portable range); the run's modules count up from its own
DOMAIN_COUNT = 101
#: module name -> its offset from the run's domain, given at collection
ROS_MODULES = {}


def pytest_collection_modifyitems(config, items):
    """Number the modules that hold `ros` tests, so that each gets a domain of its own."""
    for item in items:
        if item.get_closest_marker('ros') is not None:
            ROS_MODULES.setdefault(item.module.__name__, len(ROS_MODULES) + 1)


@pytest.fixture(scope='module', autouse=True)
def ros_domain(request):
    """Set ROS_DOMAIN_ID (and LOCALHOST discovery) for a module of `ros` tests; restore it."""
    offset = ROS_MODULES.get(request.module.__name__)
    if offset is None:
        yield None
        return
    saved = {k: os.environ.get(k) for k in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE')}
    base = int(saved['ROS_DOMAIN_ID'] or 5 + os.getpid() % 90)
    domain = (base + offset) % DOMAIN_COUNT
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    try:
        yield domain
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
