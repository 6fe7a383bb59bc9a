# SPDX-License-Identifier: LGPL-2.1-or-later
"""Web Locks across processes: modes, if_available, steal, killed holders."""
import os
import signal
import threading
import time

import pytest

import syncmem
from conftest import fork, join, until


@pytest.fixture
def locks(region):
    size = syncmem.LockManager.footprint(8, 32)
    return syncmem.LockManager(region=region, offset=4096, size=size, create=True)


def hold_in_child(region, locks, name, mode="exclusive", die=False):
    """A child that holds name until word 0 becomes 1 (or dies holding it)."""
    def child():
        with locks.request(name, mode) as held:
            assert held is not None
            region.add(8, 1)
            if die:
                os.kill(os.getpid(), signal.SIGKILL)
            assert region.wait(0, 0, 30) == "ok"
    return fork(child)


def test_exclusive_blocks_others(region, locks):
    pid = hold_in_child(region, locks, "a")
    until(lambda: region.load(8) == 1, what="the child's lock")
    assert locks.request("a", if_available=True).acquire() is None
    with pytest.raises(TimeoutError):
        locks.request("a", timeout=0.05).acquire()
    with locks.request("b", if_available=True) as other:  # names are independent
        assert other is not None and other.name == "b" and other.mode == "exclusive"
    region.store(0, 1)
    region.notify(0)
    with locks.request("a", timeout=30) as held:
        assert held is not None and not held.owner_died
    assert held.released
    assert join(pid) == 0


def test_shared_holders_together(region, locks):
    pids = [hold_in_child(region, locks, "s", "shared") for _ in range(3)]
    until(lambda: region.load(8) == 3, what="three shared holders")
    with locks.request("s", "shared", if_available=True) as held:
        assert held is not None and held.mode == "shared"
    assert locks.request("s", if_available=True).acquire() is None  # exclusive: no
    region.store(0, 1)
    region.notify(0)
    assert [join(p) for p in pids] == [0, 0, 0]
    with locks.request("s", if_available=True) as held:
        assert held is not None


def test_steal(region, locks):
    held = locks.request("x").acquire()
    stealer = locks.request("x", steal=True).acquire()
    assert held.stolen and not stealer.stolen
    assert held.release() is False  # stolen: nothing to release
    assert stealer.release() is True


def test_killed_exclusive_holder(region, locks):
    pid = hold_in_child(region, locks, "k", die=True)
    assert join(pid) == -signal.SIGKILL
    with locks.request("k", timeout=30) as held:
        assert held.owner_died
    with locks.request("k", timeout=30) as held:
        assert not held.owner_died  # reported once


def test_waiter_gets_lock_of_killed_holder_gil_free(region, locks):
    pid = hold_in_child(region, locks, "w")
    until(lambda: region.load(8) == 1, what="the child's lock")
    got = []

    def waiter():
        with locks.request("w", timeout=30) as held:
            got.append(held.owner_died)

    t = threading.Thread(target=waiter)
    t.start()
    count, end = 0, time.monotonic() + 0.2
    while time.monotonic() < end:
        count += 1
    assert count > 1000 and got == []  # this thread ran while the other waits
    os.kill(pid, signal.SIGKILL)
    t.join(30)
    assert got == [True]
    join(pid)


def test_bad_requests(locks):
    with pytest.raises(ValueError):
        locks.request("-reserved")
    with pytest.raises(ValueError):
        locks.request("")
    with pytest.raises(ValueError):
        locks.request("a", "other")
    with pytest.raises(ValueError):
        locks.request("a", steal=True, if_available=True)
    with pytest.raises(ValueError):
        locks.request("a", "shared", steal=True)
    with pytest.raises(ValueError):
        locks.request("n" * 1025).acquire()
    with pytest.raises(TypeError):
        locks.request(5)
    with locks.request(b"\0binary\xff") as held:
        assert held.name == b"\0binary\xff"


def test_default_manager_shared_by_processes():
    name = f"pytest-default-{os.getpid()}"
    assert syncmem.locks is syncmem.locks
    assert syncmem.locks.region.name == f"syncmem.locks.{os.getuid()}"
    with syncmem.locks.request(name):
        def child():
            assert syncmem.locks.request(name, if_available=True).acquire() is None
            other = syncmem.LockManager("other-scope")
            assert other.region.name == f"syncmem.locks.{os.getuid()}.other-scope"
            with other.request(name, if_available=True) as h:
                assert h is not None  # another scope, another name space
        assert join(fork(child)) == 0
    # Leave no names behind (they outlive the processes).
    syncmem.unlink(syncmem.locks.region.name)
    syncmem.unlink(f"syncmem.locks.{os.getuid()}.other-scope")
    # Scopes are named as the Node.js package names them.
    for bad in ("", "a/b", "nul\0", "x" * 201):
        with pytest.raises(ValueError):
            syncmem.LockManager(bad)
    with pytest.raises(TypeError):
        syncmem.LockManager(5)


def test_query_holders_in_grant_order(region, locks):
    pids = [hold_in_child(region, locks, "q", "shared") for _ in range(2)]
    until(lambda: region.load(8) == 2, what="two shared holders")
    with locks.request("other"):
        state = locks.query()
        held = sorted((i.name, i.mode, i.pid) for i in state["held"])
        assert held == sorted([("q", "shared", pids[0]), ("q", "shared", pids[1]),
                               ("other", "exclusive", os.getpid())])
        assert state["pending"] == []
        assert all(i.client for i in state["held"])
    region.store(0, 1)
    region.notify(0)
    assert [join(p) for p in pids] == [0, 0]
    assert locks.query() == {"held": [], "pending": []}


def test_region_pinned_while_a_lock_in_it_is_held():
    r = syncmem.anonymous(1 << 16)
    m = syncmem.LockManager(region=r, create=True)
    held = m.request("p").acquire()
    with pytest.raises(BufferError):
        r.close()  # the release would write a mapping that is gone
    assert held.release() is True
    r.close()
    with pytest.raises(ValueError):
        m.request("p").acquire()
