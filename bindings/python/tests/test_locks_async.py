# SPDX-License-Identifier: LGPL-2.1-or-later
"""Web Locks and Lock from asyncio: async with, cancellation aborts, timeouts.

Also the blocking request, which waits through a loop of its own so that
Ctrl-C withdraws it.

Collected only with a libsyncmem that has syncmem_locks_request_async()
and syncmem_lock_async_timed() (see conftest.py).
"""
import asyncio
import os
import signal
import threading
import time

import pytest

import syncmem
from conftest import fork, join, until
from test_locks import hold_in_child


@pytest.fixture
def locks(region):
    size = syncmem.LockManager.footprint(8, 32)
    return syncmem.LockManager(region=region, offset=4096, size=size, create=True)


def test_blocking_request_ends_on_ctrl_c(region, locks):
    """SIGINT raises KeyboardInterrupt in a blocked request, which leaves the queue."""
    pid = hold_in_child(region, locks, "i")
    until(lambda: region.load(8) == 1, what="the child's lock")
    me = os.getpid()
    sent = []

    def mine():
        return [p for p in locks.query()["pending"] if p.pid == me]

    def interrupt():
        until(mine, what="the blocked request in the queue")
        sent.append(time.monotonic())
        os.kill(me, signal.SIGINT)

    t = threading.Thread(target=interrupt)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with locks.request("i", timeout=20):
                pass
        took = time.monotonic() - sent[0]
    finally:
        t.join()
    print(f"# KeyboardInterrupt {took * 1000:.1f} ms after SIGINT")
    assert took < 0.5, f"the blocked request ended {took:.3f} s after SIGINT"
    assert mine() == []
    region.store(0, 1)
    region.notify(0)
    assert join(pid) == 0
    with locks.request("i", timeout=30) as held:  # nothing of ours left queued
        assert held is not None


def test_async_with_waits_for_another_process(region, locks):
    pid = hold_in_child(region, locks, "a")
    until(lambda: region.load(8) == 1, what="the child's lock")

    async def main():
        order = []

        async def take():
            async with locks.request("a") as held:
                order.append(("granted", held.owner_died))

        task = asyncio.create_task(take())
        await asyncio.sleep(0.05)
        assert not task.done()
        order.append("released")
        region.store(0, 1)
        region.notify(0)
        await asyncio.wait_for(task, 30)
        assert order == ["released", ("granted", False)]
        async with locks.request("a", if_available=True) as held:
            assert held is not None

    asyncio.run(main())
    assert join(pid) == 0


def test_cancel_aborts_pending_request(region, locks):
    pid = hold_in_child(region, locks, "c")
    until(lambda: region.load(8) == 1, what="the child's lock")

    async def main():
        async def take():
            async with locks.request("c"):
                pytest.fail("granted after cancel")

        task = asyncio.create_task(take())
        await asyncio.sleep(0.05)
        assert len(locks.query()["pending"]) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert locks.query()["pending"] == []  # left the queue
        with pytest.raises(TimeoutError):
            await locks.request("c", timeout=0.05)
        assert locks.query()["pending"] == []
        region.store(0, 1)
        region.notify(0)
        async with locks.request("c", timeout=30) as held:
            assert held is not None

    asyncio.run(main())
    assert join(pid) == 0


def test_async_killed_holder(region, locks):
    pid = hold_in_child(region, locks, "k")
    until(lambda: region.load(8) == 1, what="the child's lock")

    async def main():
        fut = asyncio.ensure_future(locks.request("k"))
        await asyncio.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        held = await asyncio.wait_for(fut, 30)
        assert held.owner_died
        held.release()

    asyncio.run(main())
    assert join(pid) == -signal.SIGKILL


def test_query_reports_holders_and_queue(region, locks):
    pids = [hold_in_child(region, locks, "q", "shared") for _ in range(2)]
    until(lambda: region.load(8) == 2, what="two shared holders")

    async def main():
        fut = asyncio.ensure_future(locks.request("q"))
        await asyncio.sleep(0.05)
        state = locks.query()
        assert [(i.name, i.mode) for i in state["held"]] == [("q", "shared")] * 2
        assert sorted(i.pid for i in state["held"]) == sorted(pids)
        assert [(i.name, i.mode, i.pid) for i in state["pending"]] == \
            [("q", "exclusive", os.getpid())]
        region.store(0, 1)
        region.notify(0)
        held = await asyncio.wait_for(fut, 30)
        assert [join(p) for p in pids] == [0, 0]
        assert [(i.name, i.pid) for i in locks.query()["held"]] == [("q", os.getpid())]
        held.release()

    asyncio.run(main())


def test_if_available_and_steal_async(region, locks):
    async def main():
        async with locks.request("s") as first:
            assert await locks.request("s", if_available=True) is None
            async with locks.request("s", steal=True) as thief:
                assert first.stolen and not thief.stolen

    asyncio.run(main())


def test_async_server_example():
    from test_examples import run
    assert "requests: accounts 880 + 120 = 1000" in run("async_server.py")


def test_lock_acquire_async_timeout_and_abort(region):
    lock = syncmem.Lock(region, 64, init=True)

    async def main():
        lock.acquire()  # this thread holds it
        with pytest.raises(TimeoutError):
            await lock.acquire_async(timeout=0.05)
        with pytest.raises(TimeoutError):
            await lock.acquire_async(timeout=0)
        fut = lock.acquire_async()
        await asyncio.sleep(0.05)
        assert region.waiters(64) == 1
        fut.cancel()
        for _ in range(200):  # aborted: out of the queue
            if region.waiters(64) == 0:
                break
            await asyncio.sleep(0.01)
        assert region.waiters(64) == 0
        lock.release()
        for _ in range(200):  # nobody keeps it
            if not lock.locked():
                break
            await asyncio.sleep(0.01)
        assert not lock.locked() and fut.cancelled()
        assert await lock.acquire_async(timeout=1) is True
        lock.release()

    asyncio.run(main())
