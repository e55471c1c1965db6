"""
What the tests share: helper modules, and the scripts they run as processes.

Imported as ``support.<module>``: pytest puts ``test/`` on ``sys.path``, the directory of
test/conftest.py (rootdir-based "prepend" imports, no ``__init__.py`` in ``test/``). The
scripts (``rig_*.py``, ``exit_probe.py``, ``forked.py``'s server) are run by their path,
``test/support/<name>.py``.
"""
