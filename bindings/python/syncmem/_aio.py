# SPDX-License-Identifier: LGPL-2.1-or-later
"""asyncio integration: one syncmem loop per asyncio event loop.

The syncmem loop's fd is readable when completions are ready;
``loop.add_reader()`` watches it from the first async call on, and the
reader runs the ready callbacks, which settle futures. No thread per wait.
"""
import asyncio
import atexit
import os
import weakref

from . import _syncmem

_bridges = weakref.WeakKeyDictionary()
_all = weakref.WeakSet()


@atexit.register
def _close_all():
    # Free every syncmem loop while the interpreter still runs: pending
    # callbacks then run (with -ECANCELED) now, not during finalization.
    for b in list(_all):
        if b.pid == os.getpid():
            b.loop.close()


class _Bridge:
    __slots__ = ("aloop", "loop", "fd", "reading", "pid", "__weakref__")

    def __init__(self, aloop):
        self.aloop = aloop
        self.loop = _syncmem.Loop()
        self.fd = self.loop.fd
        self.reading = False
        self.pid = os.getpid()

    def arm(self):
        if not self.reading:
            self.aloop.add_reader(self.fd, self._ready)
            self.reading = True

    def _ready(self):
        # The reader stays once armed: the fd is readable only when there
        # is work, and no count of pending work can then make us miss any.
        self.loop.run_once(0)


def bridge():
    """The bridge of the running asyncio loop (RuntimeError without one)."""
    aloop = asyncio.get_running_loop()
    b = _bridges.get(aloop)
    if b is None or b.pid != os.getpid():
        # A forked child cannot use its parent's syncmem loop: a new one.
        b = _Bridge(aloop)
        _bridges[aloop] = b
        _all.add(b)
    return b


def settle(fut, value=None, exc=None):
    """Settle @fut unless it is done (cancelled) or its loop is closed."""
    if fut.done():
        return
    try:
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)
    except RuntimeError:
        pass  # the event loop is closed


def cancel(fut):
    """Cancel @fut unless it is done or its loop is closed."""
    if not fut.done():
        try:
            fut.cancel()
        except RuntimeError:
            pass


def error(result):
    """The exception for a negative errno delivered to a callback."""
    import errno as _errno

    if result == -_errno.EINVAL or result == -_errno.ERANGE:
        return ValueError(_syncmem.strerror(result))
    return OSError(-result, _syncmem.strerror(result))
