#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Benchmarks of the syncmem Python package (make bench runs them in the VM).

1. Per-call overhead over C: the same calls in a Python loop and in a C loop
   (bench/overhead.c, path in argv[1]); the difference is what the
   extension adds.
2. Lock round trip between two processes: a fair syncmem.Lock that two
   processes take in turn (each grant is a FIFO hand-off to the other
   process; two hand-offs make a round trip), against a pair of
   multiprocessing.Lock objects used as a ping-pong (the usual way to pass
   the turn with them: each process releases the lock the other waits on).
3. The same ping-pong with syncmem.wait/notify on a word.
Medians of 5 rounds; figures in microseconds unless said.
"""
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

import syncmem

ROUNDS = 5


def per_call(fn, n):
    best = float("inf")
    for _ in range(ROUNDS):
        t = time.perf_counter()
        fn(n)
        best = min(best, (time.perf_counter() - t) * 1e9 / n)
    return best


def overhead(c_bench):
    r = syncmem.anonymous(4096)
    lock = syncmem.Lock(r, 0, init=True)
    acq, rel = lock.acquire, lock.release

    def lock_unlock(n):
        for _ in range(n):
            acq()
            rel()

    def with_lock(n):
        for _ in range(n):
            with lock:
                pass

    def trylock_unlock(n):
        for _ in range(n):
            acq(False)
            rel()

    def wait_ne(n):
        w = r.wait
        for _ in range(n):
            w(128, 1, 0)

    def notify_none(n):
        nt = r.notify
        for _ in range(n):
            nt(128, 1)

    def empty(n):
        for _ in range(n):
            pass

    loop = per_call(empty, 200000)
    py = {
        "lock_unlock": per_call(lock_unlock, 200000) - loop,
        "trylock_unlock": per_call(trylock_unlock, 200000) - loop,
        "wait_not_equal": per_call(wait_ne, 20000) - loop,
        "notify_none": per_call(notify_none, 20000) - loop,
    }
    with_ns = per_call(with_lock, 200000) - loop
    out = subprocess.run([c_bench], capture_output=True, text=True, check=True).stdout
    c = {k: float(v) for k, v in (line.split() for line in out.splitlines())}
    print("per-call overhead over C (ns per call, Python loop cost subtracted):")
    for k in py:
        calls = 2 if k.endswith("_unlock") else 1
        print(f"  {k:16s} python {py[k]:8.1f}  C {c[k]:8.1f}  overhead {(py[k] - c[k]) / calls:6.1f} per call")
    print(f"  {'with lock:':16s} python {with_ns:8.1f}")
    r.close()


def _alternate(lock, region, n, me, go):
    go.wait()
    for _ in range(n):
        lock.acquire()
        region.add(256, 1)
        lock.release()


def lock_round_trip(n=2000):
    r = syncmem.anonymous(4096)
    lock = syncmem.Lock(r, 0, init=True, fair=True)
    results = []
    for _ in range(ROUNDS):
        go = mp.Event()
        procs = [mp.Process(target=_alternate, args=(lock, r, n, i, go)) for i in range(2)]
        for p in procs:
            p.start()
        t = time.perf_counter()
        go.set()
        for p in procs:
            p.join()
        results.append((time.perf_counter() - t) / (2 * n) * 2 * 1e6)
    r.close()
    return statistics.median(results)


def _mp_pong(ping, pong, n):
    for _ in range(n):
        ping.acquire()
        pong.release()


def mp_round_trip(n=2000):
    results = []
    for _ in range(ROUNDS):
        ping, pong = mp.Lock(), mp.Lock()
        ping.acquire()
        pong.acquire()
        p = mp.Process(target=_mp_pong, args=(ping, pong, n))
        p.start()
        t = time.perf_counter()
        for _ in range(n):
            ping.release()
            pong.acquire()
        results.append((time.perf_counter() - t) / n * 1e6)
        p.join()
    return statistics.median(results)


def _wait_pong(r, n):
    for i in range(n):
        while r.load(0) != 2 * i + 1:
            r.wait(0, 2 * i)
        r.store(0, 2 * i + 2)
        r.notify(0)


def wait_round_trip(n=2000):
    results = []
    for _ in range(ROUNDS):
        r = syncmem.anonymous(4096)
        p = mp.Process(target=_wait_pong, args=(r, n))
        p.start()
        t = time.perf_counter()
        for i in range(n):
            r.store(0, 2 * i + 1)
            r.notify(0)
            while r.load(0) != 2 * i + 2:
                r.wait(0, 2 * i + 1)
        results.append((time.perf_counter() - t) / n * 1e6)
        p.join()
        r.close()
    return statistics.median(results)


def main():
    mp.set_start_method("fork")
    c_bench = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "overhead")
    print(f"syncmem {syncmem.version()} python {sys.version.split()[0]}")
    overhead(c_bench)
    s = lock_round_trip()
    m = mp_round_trip()
    print(f"lock round trip between two processes: syncmem.Lock {s:.1f} us, "
          f"multiprocessing.Lock {m:.1f} us (ratio {s / m:.2f})")
    w = wait_round_trip()
    print(f"wait/notify ping-pong round trip: syncmem {w:.1f} us "
          f"(multiprocessing.Lock ping-pong {m:.1f} us, ratio {w / m:.2f})")


if __name__ == "__main__":
    main()
