#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Worker processes sharing a numpy array, guarded by a shared/exclusive lock.

One region holds a Web Locks manager and, after it, a numpy array that every
worker sees without copies. Writers take the lock "table" exclusively and
rewrite the whole array with one value; readers take it shared (several at
once) and check that they never see a half-written array. Any worker may be
killed at any moment: the lock is released by its death, and the next
holder is told (HeldLock.owner_died) when a writer died mid-write.

    PYTHONPATH=build/python/lib python3 bindings/python/examples/numpy_workers.py
"""
import os
import sys
import time

import numpy as np

import syncmem

N = 1 << 16          # float64 elements
WRITERS, READERS = 2, 4
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0


def main():
    mgr_size = syncmem.LockManager.footprint(4, 16)
    mgr_size = (mgr_size + 63) & ~63
    region = syncmem.anonymous(mgr_size + N * 8 + 64)
    locks = syncmem.LockManager(region=region, offset=0, size=mgr_size, create=True)
    table = np.frombuffer(region, dtype=np.float64, count=N, offset=mgr_size)
    stats = mgr_size + N * 8  # two counters after the array: reads, writes

    def writer(k):
        value = float(k)
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            with locks.request("table") as held:
                if held.owner_died:
                    print("writer: a writer died mid-write; rewriting the table")
                value += WRITERS
                table[:] = value  # the whole array, under the exclusive lock
                region.add(stats + 4, 1)

    def reader():
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            with locks.request("table", mode="shared"):
                first = table[0]
                assert (table == first).all(), "a half-written table"
                region.add(stats, 1)

    pids = []
    for k in range(WRITERS):
        pids.append(spawn(writer, k))
    for _ in range(READERS):
        pids.append(spawn(reader))
    failed = sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) != 0 for p in pids)
    print(f"{region.load(stats + 4)} writes and {region.load(stats)} consistent reads "
          f"of {N} float64s by {WRITERS + READERS} processes; {failed} failed")
    del table
    return 1 if failed else 0


def spawn(fn, *args):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn(*args)
        except BaseException as e:
            print(f"worker {os.getpid()}: {e!r}")
            code = 1
        os._exit(code)
    return pid


if __name__ == "__main__":
    sys.exit(main())
