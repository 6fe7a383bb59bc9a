// Type-checked (make check-node runs tsc on it), never run: code written
// against index.d.ts as users write it, so that a declaration that no
// longer fits the API fails the check.
import * as syncmem from 'syncmem';
import { Atomics, LockManager, Pool, Region, open } from 'syncmem';

const r: Region = open('types', 4096, { create: true, exclusive: false, mode: 0o600 });
const i32 = new Int32Array(r.buffer);
const big = new BigInt64Array(syncmem.anonymous(4096).buffer);
const w: 'ok' | 'not-equal' | 'timed-out' = Atomics.wait(i32, 0, 0, 10);
const w64 = Atomics.wait(big, 0, 0n);
const woken: number = Atomics.notify(i32, 0, Infinity);
const a = Atomics.waitAsync(i32, 0, 0);
const settled: Promise<'ok' | 'timed-out'> | string = a.async ? a.value : a.value;
const sum: number = Atomics.add(i32, 1, 2);
const onRegion: boolean = syncmem.isRegionArray(i32);
const who: { pid: number; tid: number; async: boolean; size: 4 | 8 }[] = syncmem.waiters(i32, 0);

const pool: Pool = Pool.init(r, 0, 64, 8);
const block: number | null = pool.alloc();
if (block !== null)
  pool.free(block);
const again = Pool.attach(r, 0);
const room: number = Pool.footprint(64, 8) + again.freeCount + again.blockSize + again.blocks;

const scoped = new LockManager('types');
const scope: string | null = scoped.scope;
const n: Promise<number> = syncmem.locks.request('name', (lock) => (lock ? lock.name.length : 0));
const s: Promise<string> = scoped.request('name', { mode: 'shared', signal: new AbortController().signal },
  async (lock) => `${lock?.mode}`);
const q = scoped.query().then(({ held, pending }) =>
  held.concat(pending).map((l) => `${l.name} ${l.mode} ${l.clientId} ${l.pid}`));
const version: string = syncmem.libraryVersion;
r.close();
syncmem.unlink('types');
syncmem.fromFd(r.fd);

export { w, w64, woken, settled, sum, onRegion, who, room, scope, n, s, q, version };
