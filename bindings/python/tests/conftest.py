# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers of the syncmem Python tests, and TAP output for make check.

The tests need /dev/syncmem: make check runs them in the VM
(tools/vm/run --python). With SYNCMEM_TAP=1 every test result is also
printed as a TAP line ("ok - python: test_x.py::test_y"), which
tools/tap-summary counts with the kselftests.
"""
import os
import signal
import sys
import time
import traceback

import pytest

import syncmem._syncmem as _c

# The async Web Locks requests and the abortable Lock acquisitions came to
# the library after the rest: their tests run when setup.py found them in
# include/syncmem.h (a build without them has no such calls to test).
collect_ignore = []
if not (_c.HAVE_LOCKS_ASYNC and _c.HAVE_LOCK_ASYNC_TIMED):
    collect_ignore.append("test_locks_async.py")


def fork(fn, *args):
    """Run fn(*args) in a child process; its exit status is 0 when fn returns."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn(*args)
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    return pid


def join(pid, timeout=60):
    """The exit status of child pid (the signal number, negated, if killed)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"child {pid} did not exit in {timeout} s")
        time.sleep(0.005)


def until(cond, timeout=30, what="condition"):
    """Poll cond() until it is true; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


@pytest.fixture
def region():
    import syncmem

    r = syncmem.anonymous(1 << 16)
    yield r
    r.close()


_tap = os.environ.get("SYNCMEM_TAP") == "1"


def pytest_runtest_logreport(report):
    if not _tap:
        return
    name = "python: " + report.nodeid.split("/")[-1]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.skipped:
            line = f"ok - {name} # SKIP"
        elif report.passed:
            line = f"ok - {name}"
        else:
            line = f"not ok - {name}"
        sys.stdout.write("\n" + line + "\n")
        sys.stdout.flush()
