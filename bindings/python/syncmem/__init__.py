# SPDX-License-Identifier: LGPL-2.1-or-later
"""syncmem: shared memory, wait/notify and locks across processes.

Regions are memory from the syncmem kernel module (/dev/syncmem) that any
number of processes map: ``memoryview(region)`` and numpy arrays over it
share its pages without copies. Words in a region can be waited on and
notified across processes (Atomics.wait/notify), blocking with the GIL
released or from asyncio (``wait_async``). ``Lock`` is a robust mutex in a
region; ``locks`` is a Web Locks manager shared by the processes of a user;
``Pool`` is the lock-free block allocator. See
Documentation/syncmem/python.rst.
"""
import asyncio as _asyncio
import errno as _errno
import os as _os

from ._errors import ModuleNotLoadedError, OwnerDiedError
from . import _syncmem
from . import _aio

__all__ = [
    "Region", "open", "anonymous", "from_fd", "unlink", "wait", "notify", "wait_async",
    "Lock", "Pool", "LockManager", "HeldLock", "locks", "OwnerDiedError",
    "ModuleNotLoadedError", "strerror", "LOCK_SIZE", "version",
]

Region = _syncmem.Region
HeldLock = _syncmem.Held
strerror = _syncmem.strerror
unlink = _syncmem.unlink
LOCK_SIZE = _syncmem.LOCK_SIZE
__version__ = _syncmem.version()


def version():
    """The version of libsyncmem inside this package ("MAJOR.MINOR.PATCH")."""
    return _syncmem.version()


def open(name, size=0, *, create=False, exclusive=False, mode=0o600, readonly=False):
    """Open the region called ``name`` (a str), or create it.

    ``size``: bytes, needed to create; 0 or the exact size to open.
    ``create``: create it if it does not exist; ``exclusive`` (with create):
    FileExistsError if it exists. ``mode``: permission bits of a region this
    call creates (after the umask). ``readonly``: map it read-only (waits
    allowed, writes refused). FileNotFoundError when missing,
    PermissionError when the mode forbids, ModuleNotLoadedError when the
    kernel module is not loaded.
    """
    if not isinstance(name, str):
        raise TypeError("name must be a str (use anonymous() for a region without a name)")
    flags = ((_syncmem.CREATE if create else 0) | (_syncmem.EXCL if exclusive else 0) |
             (_syncmem.RDONLY if readonly else 0))
    return _syncmem.open(name, size, flags, mode)


def anonymous(size):
    """A new region without a name, of ``size`` bytes (share it by fork or by its fd)."""
    return _syncmem.open(None, size, 0, 0o600)


def from_fd(fd):
    """A region over the region fd ``fd`` (received from another process).

    The region uses a duplicate: the caller still owns (and closes) ``fd``.
    """
    return _syncmem.from_fd(fd)


def wait(region, offset, expected, timeout=None, *, size=4):
    """Sleep while the word at ``offset`` holds ``expected``: Atomics.wait.

    Returns "ok" (a notify woke it), "not-equal" (the word differed: it did
    not sleep) or "timed-out". ``timeout`` in seconds (None: none); ``size``
    4 or 8 bytes. The GIL is released while it sleeps; a signal whose
    handler raises ends the wait with that exception.
    """
    return region.wait(offset, expected, timeout, size=size)


def notify(region, offset, count=None):
    """Wake up to ``count`` waiters of the word (None: all), oldest first; returns how many."""
    return region.notify(offset, count)


_RESULTS = {_syncmem.OK: "ok", _syncmem.NOT_EQUAL: "not-equal",
            _syncmem.TIMED_OUT: "timed-out"}


def wait_async(region, offset, expected, timeout=None, *, size=4):
    """Atomics.waitAsync for asyncio: returns a future of wait()'s result.

    The waiter is in the word's FIFO queue (with blocking waiters) when this
    call returns, so a notify made right after it counts it. Call it from a
    coroutine (it needs the running loop). When the word differs, or the
    timeout is 0, the future is done already. Cancelling the future (or the
    task awaiting it) takes the waiter out of the queue.
    """
    bridge = _aio.bridge()
    fut = bridge.aloop.create_future()

    def done(result):
        if result >= 0:
            _aio.settle(fut, _RESULTS.get(result, result))
        elif result != -_errno.ECANCELED:
            _aio.settle(fut, exc=_aio.error(result))
        else:
            _aio.cancel(fut)

    status, wid = bridge.loop.wait(region, offset, expected, timeout, size, done)
    if status != _syncmem.PENDING:
        fut.set_result(_RESULTS[status])
        return fut
    bridge.arm()

    def cancelled(f, loop=bridge.loop, wid=wid):
        if f.cancelled() and not loop.closed:
            try:
                loop.cancel(wid)
            except (RuntimeError, ValueError):
                pass

    fut.add_done_callback(cancelled)
    return fut


class Lock(_syncmem.Lock):
    """A robust mutex (64 bytes) at ``offset`` in ``region``.

    ``Lock(region, offset, init=True, fair=False)`` resets the memory to an
    unlocked lock (once, by its creator; all-zero bytes are an unlocked lock
    too); other processes use ``Lock(region, offset)``.

    ``acquire(blocking=True, timeout=None)`` returns True, or False when not
    blocking or the timeout passed; the GIL is released while it waits.
    ``release()``; ``with lock:``; ``async with lock:`` and
    ``await lock.acquire_async()`` from asyncio. When the previous holder
    died holding it, acquire raises OwnerDiedError with the lock held: see
    there for the recovery. A lock taken by a thread is released by that
    thread; one taken with acquire_async belongs to the process.
    """

    __slots__ = ()

    def acquire_async(self, timeout=None):
        """A future that is done when this process holds the lock.

        Its result is True; OwnerDiedError (lock held) after a dead holder;
        TimeoutError when ``timeout`` seconds pass first (None: no limit).
        Cancelling it before the grant takes the request out of the queue
        (a libsyncmem without syncmem_lock_async_timed() cannot: the lock is
        then given back as soon as it is granted, without consistent()
        after a dead holder).
        """
        bridge = _aio.bridge()
        fut = bridge.aloop.create_future()

        def done(result, lock=self):
            if result in (0, -_errno.EOWNERDEAD) and fut.done():
                lock.release()  # cancelled before the grant reached us
                return
            if result == 0:
                _aio.settle(fut, True)
            elif result == -_errno.EOWNERDEAD:
                exc = OwnerDiedError(_errno.EOWNERDEAD, strerror(result))
                exc.lock = lock
                _aio.settle(fut, exc=exc)
            elif result == -_errno.ECANCELED:
                _aio.cancel(fut)
            elif result == -_errno.ETIMEDOUT:
                _aio.settle(fut, exc=TimeoutError(_errno.ETIMEDOUT, strerror(result)))
            else:
                _aio.settle(fut, exc=_aio.error(result))

        try:
            aid = bridge.loop.lock(self, done, timeout)
        except TimeoutError as e:  # a timeout of 0 and the lock is held
            fut.set_exception(e)
            return fut
        bridge.arm()
        if aid is not None:
            def cancelled(f, loop=bridge.loop, aid=aid):
                if f.cancelled() and not loop.closed:
                    try:
                        loop.abort(aid)
                    except (RuntimeError, ValueError, OSError):
                        pass

            fut.add_done_callback(cancelled)
        return fut

    async def __aenter__(self):
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc):
        self.release()


class Pool(_syncmem.Pool):
    """The lock-free fixed-size block allocator at ``offset`` in ``region``.

    ``Pool(region, offset, block_size, nblocks, create=True)`` builds it
    (once); ``Pool(region, offset)`` attaches to it. ``alloc()`` returns a
    block's offset from the pool start (MemoryError when exhausted),
    ``free(off)`` gives it back, ``view(off)`` is a memoryview of the block.
    ``Pool.footprint(block_size, nblocks)`` is the bytes it needs.
    """

    __slots__ = ()

    def view(self, off):
        """A writable memoryview of block ``off`` (release it before closing the region)."""
        start = self.region_offset(off)
        return memoryview(self.region)[start:start + self.block_size]


from ._locks import LockManager  # noqa: E402  (needs the names above)


def __getattr__(name):
    # syncmem.locks: the default manager, made on first use.
    if name == "locks":
        return _locks.default_manager()
    raise AttributeError(f"module 'syncmem' has no attribute {name!r}")


from . import _locks  # noqa: E402
