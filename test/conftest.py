"""
Test-wide settings: the `ros` and `slow` markers, and one DDS domain per ROS test module.

The folders mirror the package's layers (README.md here: which test goes where); a module is
keyed by its file name, unique across the folders, and the shared helpers are imported from
`support` (this directory is on ``sys.path``, as the conftest's).

Tests that start nodes or DDS participants carry the `ros` marker; `ros_domain` gives each
module holding such tests a DDS domain of its own for its duration, counted from the run's
ROS_DOMAIN_ID (`./run` picks one per run), with discovery kept on this machine. Run the fast
part alone with ``./run test -m "not ros and not slow"``.

A participant that exists before a node starts (a test's recorder or listener) is learnt by
the node from the participant's announcements: Fast DDS sends five at 100 ms, then one every
3 s, and here about half the node pairs started after a recorder heard it only at that next
announcement, 2-3 s late. So the participants of this process announce themselves for 5 s
(PARTICIPANT_PROFILE); the node processes keep Fast DDS's defaults.

Many tests run nodes under SCHED_FIFO. On two cores, real-time threads that stop blocking
starve every normal process, this run included, and no timeout can end them; so a real-time
thread of this process or of any it starts may run at most REALTIME_RUN_LIMIT without a
blocking call (RLIMIT_RTTIME, inherited): past it the kernel ends its process.

The package is imported first, before any test module imports NumPy, so that its one BLAS
thread (continuum_ctrl/__init__.py) holds in the tests as in the nodes and the commands.
"""

import continuum_ctrl  # noqa: F401, I100 - first: one BLAS thread, set before NumPy loads

import faulthandler
import importlib.metadata
import os
from pathlib import Path
import resource

import pytest

#: DDS domains go up to 101 (portable range); the run's modules count up from its own
DOMAIN_COUNT = 101
#: module name -> its offset from the run's domain, given at collection
ROS_MODULES = {}
#: Fast DDS's default participant profile for this process (read once, at its first participant)
PARTICIPANT_PROFILE = Path(__file__).with_name('data') / 'announce_participants.xml'
_profile_loaded = []
#: CPU time a real-time thread may use without blocking, s (SIGXCPU; SIGKILL one second later)
REALTIME_RUN_LIMIT = 5.0
#: s past pytest-timeout's limit after which the watchdog ends the run, at most
#: (`pytest_runtest_protocol`: as much again as the limit, up to this)
WATCHDOG_GRACE = 60.0
#: the run's own stderr, which the watchdog writes to while pytest captures the tests' output
_watchdog_stderr = []


def pytest_configure(config):
    """Bound every real-time thread of the run (RLIMIT_RTTIME; a lower limit is kept)."""
    soft, hard = (int(s * 1e6) for s in (REALTIME_RUN_LIMIT, REALTIME_RUN_LIMIT + 1.0))
    current = resource.getrlimit(resource.RLIMIT_RTTIME)
    if current[1] == resource.RLIM_INFINITY or current[1] > hard:
        resource.setrlimit(resource.RLIMIT_RTTIME, (soft, hard))
    capture = config.pluginmanager.getplugin('capturemanager')
    capture.suspend_global_capture()
    try:
        _watchdog_stderr.append(os.dup(2))
    finally:
        capture.resume_global_capture()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """
    End the run, with every thread's traceback, when a test outlives its timeout.

    The limit is pytest-timeout's (``--timeout`` or the ini's ``timeout``), doubled, and at most
    WATCHDOG_GRACE longer.

    pytest-timeout's thread needs the GIL, and a C call that deadlocks holding it (Fast DDS
    destroying an entity; CI stopped this way until its own limit) keeps it away for good;
    faulthandler's watchdog is a C thread that needs none.
    """
    timeout = float(item.config.getoption('timeout', None) or item.config.getini('timeout') or 0)
    if timeout > 0:
        faulthandler.dump_traceback_later(timeout + min(timeout, WATCHDOG_GRACE), exit=True,
                                          file=_watchdog_stderr[0])
    yield
    faulthandler.cancel_dump_traceback_later()


def pytest_collection_modifyitems(config, items):
    """
    Number the modules that hold `ros` tests, so that each gets a domain of its own; put the
    `build` tests first: beside the other tests (pytest-xdist) they would otherwise start
    last, and end the run alone minutes after the rest.
    """
    items.sort(key=lambda item: item.get_closest_marker('build') is None)
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
    if not _profile_loaded:
        load_participant_profile()
    try:
        yield domain
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def profiles_variable():
    """Return the variable naming Fast DDS's profiles file: Fast DDS 3 and 2 differ."""
    try:
        importlib.metadata.version('ros-fastdds')
        return 'FASTDDS_DEFAULT_PROFILES_FILE'
    except importlib.metadata.PackageNotFoundError:
        return 'FASTRTPS_DEFAULT_PROFILES_FILE'


def participant_env():
    """Return the variables that give a process of the test's own PARTICIPANT_PROFILE."""
    return {profiles_variable(): str(PARTICIPANT_PROFILE)}


def load_participant_profile():
    """
    Make PARTICIPANT_PROFILE the default of this process's participants, not of its children.

    Fast DDS reads the profiles file named in the environment when the process creates its
    first participant (rclpy: its first node), so a throw-away node is made with the variable
    set, which is then removed: node processes started later do not inherit it. Fast DDS 3
    (Kilted) reads FASTDDS_DEFAULT_PROFILES_FILE, Fast DDS 2 (Jazzy) FASTRTPS_DEFAULT_...
    (`profiles_variable`).
    """
    import rclpy
    variable = profiles_variable()
    saved = os.environ.get(variable)
    os.environ[variable] = str(PARTICIPANT_PROFILE)
    context = rclpy.Context()
    try:
        rclpy.init(context=context)
        rclpy.create_node('participant_profile', context=context).destroy_node()
    finally:
        if rclpy.ok(context=context):
            rclpy.shutdown(context=context)
        if saved is None:
            os.environ.pop(variable)
        else:
            os.environ[variable] = saved
        _profile_loaded.append(variable)
