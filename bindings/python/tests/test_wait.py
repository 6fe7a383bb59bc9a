# SPDX-License-Identifier: LGPL-2.1-or-later
"""wait/notify across processes, the GIL, signals, and wait_async from asyncio."""
import asyncio
import signal
import threading
import time

import pytest

import syncmem
from conftest import fork, join, until


def test_not_equal_and_timeout(region):
    region.store(0, 1)
    assert syncmem.wait(region, 0, 0) == "not-equal"
    t = time.monotonic()
    assert syncmem.wait(region, 0, 1, 0.05) == "timed-out"
    assert time.monotonic() - t >= 0.05
    region.store(8, 2**40, size=8)
    assert region.wait(8, 2**40, 0, size=8) == "timed-out"
    assert region.wait(8, 2**40 + 1, size=8) == "not-equal"
    assert region.notify(0) == 0 and region.notify(0, 0) == 0
    with pytest.raises(ValueError):
        region.wait(2, 0)
    with pytest.raises(ValueError):
        region.notify(0, -1)


def test_notify_wakes_another_process(region):
    def child():
        assert region.wait(0, 0, 30) == "ok"
        region.store(4, 1)

    pid = fork(child)
    until(lambda: region.waiters(0) == 1, what="the child's wait")
    assert syncmem.notify(region, 0, 1) == 1
    assert join(pid) == 0 and region.load(4) == 1


def test_fifo_order_across_processes(region):
    n = 4

    def child(i):
        assert region.wait(0, 0, 30) == "ok"
        slot = region.add(4, 1)
        region.store(8 + 4 * slot, i)

    pids = []
    for i in range(n):
        pids.append(fork(child, i))
        until(lambda: region.waiters(0) == i + 1, what=f"waiter {i}")
    for i in range(n):
        assert region.notify(0, 1) == 1
        until(lambda: region.load(4) == i + 1, what=f"wake {i}")
    assert [join(p) for p in pids] == [0] * n
    assert [region.load(8 + 4 * i) for i in range(n)] == list(range(n))


def test_gil_released_while_waiting(region):
    result = []
    t = threading.Thread(target=lambda: result.append(region.wait(0, 0, 20)))
    t.start()
    until(lambda: region.waiters(0) == 1, what="the thread's wait")
    # This thread runs Python while the other one sleeps in the kernel.
    count, end = 0, time.monotonic() + 0.2
    while time.monotonic() < end:
        count += 1
    assert count > 1000
    assert region.notify(0) == 1
    t.join(20)
    assert result == ["ok"]


def test_signal_handler_raising_ends_wait(region):
    class Alarm(Exception):
        pass

    def handler(signum, frame):
        raise Alarm()

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(Alarm):
            region.wait(0, 0, 20)
        assert region.waiters(0) == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_signal_handler_returning_keeps_waiting(region):
    hits = []
    old = signal.signal(signal.SIGALRM, lambda s, f: hits.append(s))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        t = time.monotonic()
        assert region.wait(0, 0, 0.3) == "timed-out"
        assert time.monotonic() - t >= 0.3 and hits == [signal.SIGALRM]
    finally:
        signal.signal(signal.SIGALRM, old)


def test_wait_async_woken_by_another_process(region):
    async def main():
        fut = syncmem.wait_async(region, 0, 0, 30)
        assert not fut.done()
        assert region.waiters(0) == 1  # queued when the call returned
        pid = fork(lambda: region.notify(0, 1) == 1 or exit(1))
        assert await fut == "ok"
        assert join(pid) == 0

    asyncio.run(main())


def test_wait_async_immediate_results(region):
    async def main():
        region.store(0, 5)
        f = syncmem.wait_async(region, 0, 4)
        assert f.done() and f.result() == "not-equal"
        f = syncmem.wait_async(region, 0, 5, 0)
        assert f.done() and f.result() == "timed-out"
        assert await syncmem.wait_async(region, 0, 5, 0.05) == "timed-out"
        assert await syncmem.wait_async(region, 8, 0, 0.05, size=8) == "timed-out"

    asyncio.run(main())
    with pytest.raises(RuntimeError):
        syncmem.wait_async(region, 0, 5)  # no running loop


def test_wait_async_cancel_leaves_the_queue(region):
    async def main():
        async def waiter():
            return await syncmem.wait_async(region, 0, 0, 30)

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0)
        assert region.waiters(0) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert region.waiters(0) == 0
        assert region.notify(0) == 0
        # The loop goes on: another wait after the cancel works.
        fut = syncmem.wait_async(region, 0, 0, 30)
        assert region.notify(0) == 1
        assert await fut == "ok"

    asyncio.run(main())


def test_wait_for_timeout_cancels(region):
    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(syncmem.wait_async(region, 0, 0), 0.05)
        assert region.waiters(0) == 0

    asyncio.run(main())


def test_async_and_blocking_waiters_share_one_fifo(region):
    async def main():
        fut = syncmem.wait_async(region, 0, 0, 30)  # first in the queue

        def child():
            assert region.wait(0, 0, 30) == "ok"
            region.store(4, 1)
        pid = fork(child)
        until(lambda: region.waiters(0) == 2, what="the child's wait")
        assert region.notify(0, 1) == 1
        assert await fut == "ok"
        assert region.load(4) == 0 and region.waiters(0) == 1
        assert region.notify(0, 1) == 1
        assert join(pid) == 0 and region.load(4) == 1

    asyncio.run(main())


def test_many_async_waits_one_thread(region):
    async def main():
        threads = threading.active_count()
        futs = [syncmem.wait_async(region, 4 * i, 0, 30) for i in range(200)]
        assert threading.active_count() == threads
        pid = fork(lambda: [region.notify(4 * i) for i in range(200)])
        assert await asyncio.gather(*futs) == ["ok"] * 200
        assert join(pid) == 0

    asyncio.run(main())
