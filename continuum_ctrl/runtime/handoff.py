"""
The latest validated state, from the thread that reads input to the loop thread, lock-free.

    handoff.post(q, qd, t, measured_at)     # input thread: a valid state (copied; qd None:
                                            # positions only)
    handoff.post_rejection()                # input thread: a rejected one
    handoff.take(loop)                      # loop thread, once per tick: apply what arrived
"""


class StateHandoff:
    """
    The latest validated state, from the executor thread (one writer) to the loop thread.

    The writer publishes an immutable tuple ``(q, qd, t, measured_at, rejections,
    rejected_last)`` by one attribute assignment; the reader takes `latest` once per tick
    (`measured_at`: when the state held, its header stamp; None: at `t`). This needs no lock:
    under CPython's GIL (and with the per-object locks of free-threaded builds) storing and
    loading one attribute is atomic, so the reader sees either the old tuple or the new one,
    never a mix. The arrays in it are fresh copies that nobody writes after publication
    (`post` copies them), so a reader holding an old tuple keeps consistent values.
    `rejections` counts the rejected messages so far and `rejected_last` says whether the
    latest message was one: the reader (`take`) replays both orders of at most one
    valid/rejected change between two ticks exactly; only the newest valid state of a burst
    reaches the loop.
    """

    def __init__(self):
        self.latest = None
        self._rejections = 0
        self._state = (None, None, None, None)
        self._seen = None

    def post(self, q, qd, t, measured_at=None):
        """Writer: publish a valid state (arrays copied), received at `t`, measured then (s)."""
        self._state = (q.copy(), None if qd is None else qd.copy(), t, measured_at)
        self.latest = self._state + (self._rejections, False)

    def post_rejection(self):
        """Writer: publish that a message was rejected (the last valid state is kept)."""
        self._rejections += 1
        self.latest = self._state + (self._rejections, True)

    def take(self, loop):
        """
        Reader: apply what arrived since the last call to `loop` (a ControlLoop).

        Calls ``loop.set_state(q, qd, t, measured_at)`` for a new valid state and
        ``loop.reject_state()`` for rejections, in the order they arrived; return True when
        anything was new.
        """
        latest = self.latest
        seen = self._seen
        if latest is None or latest is seen:
            return False
        self._seen = latest
        q, qd, t, measured_at, rejections, rejected_last = latest
        rejected = seen is None and rejections > 0 or seen is not None and rejections != seen[4]
        new_state = q is not None and (seen is None or q is not seen[0])
        if rejected and not rejected_last:
            loop.reject_state()
        if new_state:
            loop.set_state(q, qd, t, measured_at)
        if rejected_last:
            loop.reject_state()
        return True
