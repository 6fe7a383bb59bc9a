#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An asyncio server whose processes take a cross-process lock per request.

Several server processes (forked, one asyncio loop each) accept connections
on one listening UNIX socket. Each request moves money between two accounts
kept in a shared region: a read-modify-write that awaits in the middle, so
it is only correct because the handler holds the Web Lock "ledger" across
processes. Waiting for the lock never blocks a loop: other connections are
served meanwhile, and a client that goes away cancels its pending request.
The total stays the same at the end.

    PYTHONPATH=build/python/lib python3 bindings/python/examples/async_server.py
"""
import asyncio
import os
import socket
import sys
import tempfile

import syncmem

SERVERS, CLIENTS, REQUESTS = 3, 6, 20
START = 1000


def serve(sock, region, locks):
    async def handle(reader, writer):
        while await reader.readline():
            async with locks.request("ledger"):
                a, b = region.load(64), region.load(68)
                await asyncio.sleep(0)  # other requests of this loop run here
                region.store(64, a - 1)
                region.store(68, b + 1)
            writer.write(b"ok\n")
            await writer.drain()
        writer.close()

    async def main():
        server = await asyncio.start_unix_server(handle, sock=sock)
        async with server:
            await server.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass


async def clients(path):
    async def client():
        reader, writer = await asyncio.open_unix_connection(path)
        for _ in range(REQUESTS):
            writer.write(b"move\n")
            await writer.drain()
            assert await reader.readline() == b"ok\n"
        writer.close()

    await asyncio.gather(*(client() for _ in range(CLIENTS)))


def main():
    size = syncmem.LockManager.footprint(4, 64)
    region = syncmem.anonymous(4096 + size)
    locks = syncmem.LockManager(region=region, offset=4096, size=size, create=True)
    region.store(64, START)
    path = os.path.join(tempfile.mkdtemp(), "server.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(path)
    sock.listen(64)
    pids = []
    for _ in range(SERVERS):
        pid = os.fork()
        if pid == 0:
            serve(sock, region, locks)
            os._exit(0)
        pids.append(pid)
    sock.close()
    try:
        asyncio.run(asyncio.wait_for(clients(path), 60))
    except (asyncio.TimeoutError, OSError) as e:
        print(f"clients failed ({e!r}); locks: {locks.query()}")
    finally:
        for pid in pids:
            os.kill(pid, 2)
            os.waitpid(pid, 0)
        os.unlink(path)
    a, b = region.load(64), region.load(68)
    moved = CLIENTS * REQUESTS
    print(f"{SERVERS} server processes, {moved} requests: accounts {a} + {b} = {a + b}")
    return 0 if (a, b) == (START - moved, moved) else 1


if __name__ == "__main__":
    sys.exit(main())
