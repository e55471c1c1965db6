"""A log line at most once per interval: for input rejected at a high rate."""

import time

#: shortest interval between two log lines about rejected input, s
LOG_THROTTLE = 2.0


class Throttle:
    """Let a log line through at most once per `interval` seconds (monotonic clock)."""

    def __init__(self, interval: float = LOG_THROTTLE) -> None:
        self.interval = interval
        self.last = -float('inf')

    def ready(self) -> bool:
        """Whether a line may be logged now (and if so, start a new interval)."""
        now = time.monotonic()
        if now - self.last > self.interval:
            self.last = now
            return True
        return False
