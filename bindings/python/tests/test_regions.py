# SPDX-License-Identifier: LGPL-2.1-or-later
"""Regions: names, fds, the buffer protocol, atomics, errors."""
import ctypes
import errno
import os

import numpy as np
import pytest

import syncmem
from conftest import fork, join


def test_anonymous_memoryview(region):
    assert region.size == 1 << 16 and region.name is None and not region.readonly
    m = memoryview(region)
    assert m.nbytes == region.size and not m.readonly
    m[0:5] = b"hello"
    assert bytes(m[0:5]) == b"hello"
    assert region.load(0) == int.from_bytes(b"hell", "little")
    # Shared with a forked child: its writes are ours.
    assert join(fork(lambda: memoryview(region).__setitem__(slice(8, 13), b"child"))) == 0
    assert bytes(m[8:13]) == b"child"
    m.release()


def test_close_refused_while_exported(region):
    m = memoryview(region)
    with pytest.raises(BufferError):
        region.close()
    m.release()
    region.close()
    assert region.closed
    with pytest.raises(ValueError, match="closed"):
        region.load(0)
    with pytest.raises(BufferError):
        memoryview(region)
    region.close()  # twice: nothing


def test_named_create_open_unlink():
    name = f"pytest.named.{os.getpid()}"
    with syncmem.open(name, 8192, create=True, exclusive=True) as r:
        assert r.name == name and r.size == 8192
        with pytest.raises(FileExistsError):
            syncmem.open(name, 8192, create=True, exclusive=True)
        with pytest.raises(ValueError):
            syncmem.open(name, 4096)  # another size

        def child():
            with syncmem.open(name) as c:
                c.store(16, 0xdeadbeef)

        assert join(fork(child)) == 0
        assert r.load(16) == 0xdeadbeef
        with syncmem.open(name, readonly=True) as ro:
            assert ro.readonly and memoryview(ro).readonly
            assert ro.load(16) == 0xdeadbeef
            with pytest.raises(OSError) as e:
                ro.store(16, 1)
            assert e.value.errno == errno.EBADF
    syncmem.unlink(name)
    with pytest.raises(FileNotFoundError):
        syncmem.open(name)
    with pytest.raises(FileNotFoundError):
        syncmem.unlink(name)


def test_permission_error_for_other_user():
    name = f"pytest.perm.{os.getpid()}"
    with syncmem.open(name, 4096, create=True, mode=0o600):
        def child():
            os.setgid(65534)
            os.setuid(65534)
            with pytest.raises(PermissionError):
                syncmem.open(name)
        assert join(fork(child)) == 0
    syncmem.unlink(name)


def test_from_fd_shares_memory(region):
    other = syncmem.from_fd(region.fd)
    try:
        assert other.size == region.size and other.fd != region.fd
        other.store(0, 42)
        assert region.load(0) == 42
    finally:
        other.close()
    region.load(0)  # our fd is still ours
    with pytest.raises(ValueError):
        syncmem.from_fd(os.open("/", os.O_RDONLY))


def test_numpy_without_copies(region):
    a = np.frombuffer(region, dtype=np.int64)
    assert a.ctypes.data == region.address  # the region's pages, not a copy
    a[3] = 123456789012
    assert region.load(24, size=8) == 123456789012

    def child():
        b = np.frombuffer(region, dtype=np.int64)
        b[4] = -7
    assert join(fork(child)) == 0
    assert a[4] == -7
    with pytest.raises(BufferError):
        region.close()
    del a


def test_atomics(region):
    assert region.store(0, 5) == 5
    assert region.add(0, 3) == 5 and region.load(0) == 8
    assert region.sub(0, 10) == 8 and region.load(0) == 0xfffffffe
    assert region.compare_exchange(0, 1, 7) == 0xfffffffe  # failed: old value
    assert region.compare_exchange(0, 0xfffffffe, 7) == 0xfffffffe and region.load(0) == 7
    assert region.exchange(0, 9) == 7
    assert region.or_(0, 0x10) == 9 and region.and_(0, 0x18) == 0x19 and region.xor(0, 1) == 0x18
    region.store(8, 2**64 - 1, size=8)
    assert region.add(8, 1, size=8) == 2**64 - 1 and region.load(8, size=8) == 0
    with pytest.raises(ValueError):
        region.load(2)
    with pytest.raises(ValueError):
        region.load(4, size=8)
    with pytest.raises(ValueError):
        region.load(region.size)
    with pytest.raises(ValueError):
        region.load(0, size=2)
    with pytest.raises(OverflowError):
        region.store(0, 2**32)


def test_atomic_add_across_processes(region):
    n = 20000

    def child():
        for _ in range(n):
            region.add(64, 1)
            region.add(128, 1, size=8)

    pids = [fork(child) for _ in range(3)]
    assert [join(p) for p in pids] == [0, 0, 0]
    assert region.load(64) == 3 * n and region.load(128, size=8) == 3 * n


def test_module_not_loaded():
    # A child that cannot see /dev/syncmem (a tmpfs over /dev in its own
    # mount namespace) gets ModuleNotLoadedError, an OSError with ENODEV.
    def child():
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.unshare(0x00020000) == 0  # CLONE_NEWNS
        assert libc.mount(b"none", b"/", None, 0x4000 | 0x40000, None) == 0  # MS_REC|MS_PRIVATE
        assert libc.mount(b"tmpfs", b"/dev", b"tmpfs", 0, None) == 0
        with pytest.raises(syncmem.ModuleNotLoadedError) as e:
            syncmem.anonymous(4096)
        assert isinstance(e.value, OSError) and e.value.errno == errno.ENODEV
        assert "module is not loaded" in str(e.value)
    assert join(fork(child)) == 0


def test_bad_arguments():
    with pytest.raises(ValueError):
        syncmem.anonymous(-1)
    with pytest.raises(ValueError):
        syncmem.anonymous(0)
    with pytest.raises(TypeError):
        syncmem.open(b"bytes")
    with pytest.raises(OSError) as e:
        syncmem.open("x" * 300, 4096, create=True)
    assert e.value.errno == errno.ENAMETOOLONG
