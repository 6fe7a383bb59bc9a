# SPDX-License-Identifier: LGPL-2.1-or-later
"""Web Locks across processes: LockManager and syncmem.locks.

A manager lives in a region: each name has a FIFO queue of requests; a
request is granted at the head of its queue when it is compatible with what
is held (any number of shared holders, or one exclusive). ``syncmem.locks``
is the default manager, shared by every process of the same user in the
IPC namespace; ``LockManager("scope")`` is a separate named one, and
``LockManager(region=r, offset=o)`` one in a region of your own.
"""
import collections
import errno
import os
import threading

from . import _aio, _syncmem
from ._errors import OwnerDiedError  # noqa: F401  (documented alongside)

LockInfo = collections.namedtuple("LockInfo", "name mode pid client")
LockInfo.__doc__ = """A held lock or a pending request, as query() reports it.

name: str (bytes when not UTF-8); mode: 'exclusive' or 'shared'; pid: the
client's process (0 when not visible in this PID namespace); client: the
process's owner id, which stays unique when PIDs are reused."""

# Room of a manager made by name: names and requests (held and pending) at
# once. The Node.js package makes its scopes' managers with the same room.
DEFAULT_NAMES = 512
DEFAULT_REQUESTS = 2048

_MODES = {"exclusive": 0, "shared": _syncmem.LOCKS_SHARED}


def _region_name(scope):
    """The region of a scope's manager; the Node.js package uses the same names."""
    base = f"syncmem.locks.{os.getuid()}"
    return base if scope is None else f"{base}.{scope}"


def _check_scope(scope):
    if not isinstance(scope, str):
        raise TypeError("a scope is a str")
    if not 1 <= len(scope) <= 200 or "\0" in scope or "/" in scope:
        raise ValueError("a scope is 1 to 200 characters, without NUL or /")


def _manager_at(region, size):
    """The manager at the start of @region: built here unless it exists."""
    for _ in range(4):
        try:
            return _syncmem.Manager(region, 0, size, create=True)
        except FileExistsError:
            pass  # built, or being built by another process: use it
        try:
            return _syncmem.Manager(region, 0, size, create=False)
        except ProcessLookupError:
            pass  # its builder died part-way (ESRCH): build it again
    raise ProcessLookupError(errno.ESRCH, "the lock manager's builders keep dying")


def _open_named(name, size):
    """Open the manager region @name, creating it if missing."""
    from . import open as _open

    try:
        return _open(name, size, create=True, exclusive=True)
    except FileExistsError:
        pass
    # Another process made it. CREATE without EXCL refuses (EACCES) a name
    # another user owns: nobody can hand us a manager they control.
    return _open(name, 0, create=True)


class LockManager:
    """A Web Locks manager (navigator.locks) shared between processes.

    ``LockManager()`` is the user's default (the same as ``syncmem.locks``),
    ``LockManager("scope")`` a separate set of names, both in a named region
    (mode 0600) made on first use. ``LockManager(region=r, offset=0,
    size=0, create=False)`` uses a manager in a region of your own
    (``create=True`` builds it, once; ``size`` defaults to the rest of the
    region).
    """

    def __init__(self, scope=None, *, region=None, offset=0, size=0, create=False,
                 max_names=DEFAULT_NAMES, max_requests=DEFAULT_REQUESTS):
        if region is None:
            if scope is not None:
                _check_scope(scope)
            size = _syncmem.locks_footprint(max_names, max_requests)
            if size == 0:
                raise ValueError("max_names and max_requests must be from 1 to 2**20 and 2**24")
            region = _open_named(_region_name(scope), size)
            self._m = _manager_at(region, min(size, region.size))
        else:
            self._m = _syncmem.Manager(region, offset, size, create=create)
        self.region = region

    @staticmethod
    def footprint(max_names, max_requests):
        """Bytes a manager needs for that many names and requests at once."""
        return _syncmem.locks_footprint(max_names, max_requests)

    def request(self, name, mode="exclusive", *, if_available=False, steal=False,
                timeout=None):
        """Request the lock ``name``; use the result as a context manager.

        ``async with manager.request("name") as lock:`` holds the lock for
        the block (``lock`` is a HeldLock, or None when ``if_available`` and
        it is not available now); ``with`` does the same blocking (the GIL
        released). ``mode`` 'exclusive' or 'shared'; ``steal``: take it from
        every holder now (their ``stolen`` becomes True). ``timeout`` in
        seconds: TimeoutError when it passes. Cancelling the task aborts a
        pending request. ``lock.owner_died`` is True when an exclusive holder
        died holding it. ``await manager.request(...)`` gives the HeldLock
        itself, to release() by hand.
        """
        if isinstance(name, str):
            name = name.encode("utf-8")
        elif not isinstance(name, (bytes, bytearray, memoryview)):
            raise TypeError("a lock name is a str or bytes")
        name = bytes(name)
        if mode not in _MODES:
            raise ValueError("mode must be 'exclusive' or 'shared'")
        if steal and if_available:
            raise ValueError("steal and if_available cannot be used together")
        if steal and mode != "exclusive":
            raise ValueError("steal needs mode 'exclusive'")
        if name.startswith(b"-"):
            raise ValueError("lock names starting with '-' are reserved")
        if not name:
            raise ValueError("a lock name is not empty")
        flags = (_MODES[mode] | (_syncmem.LOCKS_IF_AVAILABLE if if_available else 0) |
                 (_syncmem.LOCKS_STEAL if steal else 0))
        return _Request(self._m, name, flags, timeout)

    def query(self):
        """A snapshot: {'held': [LockInfo...], 'pending': [LockInfo...]}.

        Held locks in grant order, pending requests in queue order.
        """
        query = getattr(self._m, "query", None)
        if query is None:
            raise NotImplementedError("this libsyncmem has no syncmem_locks_query()")
        held, pending = query()
        return {"held": [_info(t) for t in held], "pending": [_info(t) for t in pending]}


def _info(t):
    name, shared, pid, client = t
    try:
        name = name.decode("utf-8")
    except UnicodeDecodeError:
        pass
    return LockInfo(name, "shared" if shared else "exclusive", pid, client)


class _Request:
    """What LockManager.request() returns: a (sync or async) context manager, or awaitable."""

    __slots__ = ("_m", "_name", "_flags", "_timeout", "_held")

    def __init__(self, m, name, flags, timeout):
        self._m = m
        self._name = name
        self._flags = flags
        self._timeout = timeout
        self._held = None

    # -- blocking ------------------------------------------------------------
    def acquire(self):
        """Block until granted (GIL released): the HeldLock, or None (if_available)."""
        held, rc = self._m.request(self._name, self._flags, self._timeout)
        if rc == -errno.ETIMEDOUT:
            raise TimeoutError(errno.ETIMEDOUT, "the lock request timed out")
        return held

    def __enter__(self):
        self._held = self.acquire()
        return self._held

    def __exit__(self, *exc):
        held, self._held = self._held, None
        if held is not None:
            held.release()

    # -- asyncio -------------------------------------------------------------
    def _future(self):
        bridge = _aio.bridge()
        fut = bridge.aloop.create_future()
        if self._flags & (_syncmem.LOCKS_IF_AVAILABLE | _syncmem.LOCKS_STEAL) and \
                not _syncmem.HAVE_LOCKS_ASYNC:
            # Never waits: granted or refused at once.
            fut.set_result(self.acquire())
            return fut
        if not _syncmem.HAVE_LOCKS_ASYNC:
            raise NotImplementedError(
                "this libsyncmem has no syncmem_locks_request_async(): use 'with'")

        def done(result, held):
            if held is not None and fut.done():
                held.release()  # cancelled before the grant reached us
                return
            if held is not None:
                _aio.settle(fut, held)
            elif result == -errno.EBUSY:
                _aio.settle(fut, None)
            elif result == -errno.ECANCELED:
                _aio.cancel(fut)
            else:
                _aio.settle(fut, exc=_aio.error(result))

        rid = bridge.loop.locks_request(self._m, self._name, self._flags, done)
        bridge.arm()

        def cancelled(f, loop=bridge.loop, rid=rid):
            if f.cancelled() and not loop.closed:
                try:
                    loop.locks_abort(rid)
                except (RuntimeError, ValueError):
                    pass

        fut.add_done_callback(cancelled)
        return fut

    async def _acquire(self):
        import asyncio

        fut = self._future()
        if self._timeout is None or self._timeout < 0:
            return await fut
        try:
            return await asyncio.wait_for(fut, self._timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(errno.ETIMEDOUT, "the lock request timed out") from None

    def __await__(self):
        return self._acquire().__await__()

    async def __aenter__(self):
        self._held = await self._acquire()
        return self._held

    async def __aexit__(self, *exc):
        held, self._held = self._held, None
        if held is not None:
            held.release()


_default = None
_default_lock = threading.Lock()


def default_manager():
    """syncmem.locks: the user's default manager, made on first use (per process)."""
    global _default
    with _default_lock:
        if _default is None or _default._pid != os.getpid():
            _default = LockManager()
            _default._pid = os.getpid()
        return _default
