# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pool: the block allocator across processes."""
import errno
import os
import signal

import pytest

import syncmem
from conftest import fork, join


def test_pool_alloc_free(region):
    fp = syncmem.Pool.footprint(100, 8)
    assert 0 < fp <= region.size
    pool = syncmem.Pool(region, 0, 100, 8, create=True)
    assert pool.block_size == 100 and pool.free_count == 8
    blocks = [pool.alloc() for _ in range(8)]
    assert len(set(blocks)) == 8 and pool.free_count == 0
    with pytest.raises(MemoryError):
        pool.alloc()
    v = pool.view(blocks[0])
    assert len(v) == 100
    v[:5] = b"block"
    v.release()
    pool.free(blocks[0])
    with pytest.raises(OSError) as e:
        pool.free(blocks[0])
    assert e.value.errno == errno.EALREADY
    with pytest.raises(ValueError):
        pool.free(blocks[1] + 1)
    with pytest.raises(ValueError):
        pool.free(-1)
    assert pool.free_count == 1


def test_pool_shared_with_child_and_reclaimed(region):
    pool = syncmem.Pool(region, 0, 64, 16, create=True)

    def child():
        p = syncmem.Pool(region, 0)  # attach
        for _ in range(5):
            off = p.alloc()
            p.view(off)[:4] = b"kid!"
        os.kill(os.getpid(), signal.SIGKILL)  # dies holding 5 blocks

    assert join(fork(child)) == -signal.SIGKILL
    assert pool.free_count == 11
    assert pool.reclaim() == 5
    assert pool.free_count == 16


def test_pool_attach_to_foreign_memory(region):
    with pytest.raises(OSError) as e:
        syncmem.Pool(region, 4096)
    assert e.value.errno == errno.EPROTO
    with pytest.raises(ValueError):
        syncmem.Pool(region, 32, 64, 4, create=True)  # misaligned
