"""A file this process may not read, for the bad-input tests."""

import pytest


def unreadable(path, text):
    """Write `text` to `path` without read permission; skip where that binds nobody (root)."""
    path.write_text(text)
    path.chmod(0)
    try:
        path.open().close()
    except PermissionError:
        return path
    pytest.skip('a file without read permission is readable here (running as root)')
