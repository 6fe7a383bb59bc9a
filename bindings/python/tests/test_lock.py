# SPDX-License-Identifier: LGPL-2.1-or-later
"""Lock: mutual exclusion across processes, timeouts, killed holders, asyncio."""
import asyncio
import errno
import os
import signal
import threading
import time

import pytest

import syncmem
from conftest import fork, join, until

OFF = 64  # the lock; the data it guards follows at OFF + 64


def hold_then_die(region):
    lock = syncmem.Lock(region, OFF)
    assert lock.acquire()
    region.store(0, 1)
    os.kill(os.getpid(), signal.SIGKILL)


def test_acquire_release_with(region):
    lock = syncmem.Lock(region, OFF, init=True)
    assert syncmem.LOCK_SIZE == 64
    assert not lock.locked()
    with lock:
        assert lock.locked()
        assert lock.acquire(blocking=False) is False  # EDEADLK is not reported: trylock
    assert not lock.locked()
    assert lock.acquire(timeout=1) is True
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
    with pytest.raises(ValueError):
        syncmem.Lock(region, 4)  # not 8-byte aligned
    with pytest.raises(ValueError):
        syncmem.Lock(region, region.size - 32)
    with pytest.raises(ValueError):
        lock.acquire(blocking=False, timeout=1)


def test_held_by_another_process(region):
    lock = syncmem.Lock(region, OFF, init=True)

    def child():
        with lock:
            region.store(0, 1)
            assert region.wait(4, 0, 30) == "ok"

    pid = fork(child)
    until(lambda: region.load(0) == 1, what="the child's lock")
    assert lock.acquire(blocking=False) is False
    t = time.monotonic()
    assert lock.acquire(timeout=0.1) is False
    assert time.monotonic() - t >= 0.1
    region.store(4, 1)
    region.notify(4)
    assert lock.acquire(timeout=30) is True
    lock.release()
    assert join(pid) == 0


def test_mutual_exclusion_across_processes(region):
    lock = syncmem.Lock(region, OFF, init=True, fair=True)
    n = 2000
    data = OFF + 64

    def child():
        m = memoryview(region)
        for _ in range(n):
            with lock:
                # A non-atomic read-modify-write: only the lock makes it exact.
                v = int.from_bytes(m[data:data + 8], "little")
                m[data:data + 8] = (v + 1).to_bytes(8, "little")
        m.release()

    pids = [fork(child) for _ in range(3)]
    assert [join(p) for p in pids] == [0, 0, 0]
    assert region.load(data, size=8) == 3 * n


def test_killed_holder_owner_died(region):
    lock = syncmem.Lock(region, OFF, init=True)
    assert join(fork(hold_then_die, region)) == -signal.SIGKILL
    with pytest.raises(syncmem.OwnerDiedError) as e:
        lock.acquire()
    died = e.value
    assert isinstance(died, OSError) and died.errno == errno.EOWNERDEAD
    assert died.lock is lock and lock.locked()  # held by us now
    died.consistent()
    died.release()
    assert not lock.locked()
    with lock:
        pass


def test_unrepaired_lock_is_not_recoverable(region):
    lock = syncmem.Lock(region, OFF, init=True)
    assert join(fork(hold_then_die, region)) == -signal.SIGKILL
    try:
        with lock:
            pytest.fail("acquired without OwnerDiedError")
    except syncmem.OwnerDiedError as died:
        died.release()  # without consistent()
    with pytest.raises(OSError) as e:
        lock.acquire()
    assert e.value.errno == errno.ENOTRECOVERABLE


def test_waiter_wakes_when_holder_is_killed(region):
    lock = syncmem.Lock(region, OFF, init=True)

    def child():
        with lock:
            region.store(0, 1)
            time.sleep(60)

    pid = fork(child)
    until(lambda: region.load(0) == 1, what="the child's lock")
    outcome = []

    def waiter():
        try:
            lock.acquire(timeout=30)
            outcome.append("acquired")
        except syncmem.OwnerDiedError as e:
            outcome.append("owner died")
            e.consistent()
            e.release()

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    assert outcome == []  # it waits, and this thread runs: the GIL is free
    os.kill(pid, signal.SIGKILL)
    t.join(30)
    assert outcome == ["owner died"]
    assert join(pid) == -signal.SIGKILL


def test_gil_released_while_blocked_in_acquire(region):
    lock = syncmem.Lock(region, OFF, init=True)
    lock.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=20)))
    t.start()
    count, end = 0, time.monotonic() + 0.2
    while time.monotonic() < end:
        count += 1
    assert count > 1000 and got == []
    # A thread's lock is released by that thread: hand over through the word.
    lock.release()
    t.join(20)
    assert got == [True]


def test_blocked_acquire_ends_on_ctrl_c(region):
    """SIGINT raises KeyboardInterrupt in a blocked acquire()."""
    lock = syncmem.Lock(region, OFF, init=True)
    held, done = threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            done.wait(30)

    h = threading.Thread(target=holder)
    h.start()
    held.wait(30)
    sent = []

    def interrupt():
        time.sleep(0.3)  # the main thread blocks in acquire meanwhile
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            lock.acquire(timeout=20)
        took = time.monotonic() - sent[0]
    finally:
        t.join()
        done.set()
        h.join(30)
    assert took < 0.5, f"the blocked acquire ended {took:.3f} s after SIGINT"
    assert lock.acquire(timeout=20) is True
    lock.release()


def test_async_with_lock(region):
    lock = syncmem.Lock(region, OFF, init=True)

    def child():
        with lock:
            region.store(0, 1)
            assert region.wait(4, 0, 30) == "ok"

    async def main():
        pid = fork(child)
        until(lambda: region.load(0) == 1, what="the child's lock")
        task = asyncio.ensure_future(lock.acquire_async())
        await asyncio.sleep(0.05)
        assert not task.done()
        region.store(4, 1)
        region.notify(4)
        assert await task is True
        lock.release()
        async with lock:
            assert lock.locked()
        assert not lock.locked()
        assert join(pid) == 0

    asyncio.run(main())


def test_async_acquire_cancelled(region):
    lock = syncmem.Lock(region, OFF, init=True)

    async def main():
        lock.acquire()

        async def take():
            async with lock:
                pytest.fail("granted after cancel")

        task = asyncio.create_task(take())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        lock.release()
        # The grant that reaches the cancelled request gives the lock back.
        for _ in range(200):
            if not lock.locked():
                break
            await asyncio.sleep(0.01)
        assert not lock.locked()

    asyncio.run(main())


def test_async_owner_died(region):
    lock = syncmem.Lock(region, OFF, init=True)
    assert join(fork(hold_then_die, region)) == -signal.SIGKILL

    async def main():
        with pytest.raises(syncmem.OwnerDiedError) as e:
            await lock.acquire_async()
        e.value.consistent()
        e.value.release()
        async with lock:
            pass

    asyncio.run(main())
