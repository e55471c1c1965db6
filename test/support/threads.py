"""Threads run side by side, the GIL handed over as often as it allows (races show sooner)."""

import sys
import threading


def run_interleaved(target, args):
    """Run ``target(arg)`` for each of `args`, each in a thread of its own; wait for all."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)             # switch threads as often as the GIL allows
    try:
        threads = [threading.Thread(target=target, args=(arg,)) for arg in args]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
