'use strict';
// A lock-free fixed-size block allocator on a shared buffer, written for
// worker threads (a Treiber stack whose head is {block index + 1, tag} in one
// 64-bit word, updated by compareExchange), running across processes. Only
// the buffer (a region's) and the Atomics (syncmem's) differ from the
// threads version; a producer waits with Atomics.waitAsync when the pool is
// empty and a consumer's free() wakes it.
//
//   node examples/allocator.js [producers] [blocks-each]
const { fork } = require('child_process');
const syncmem = require('..');
const { Atomics } = syncmem;

const BLOCKS = 64;
const BLOCK_BYTES = 64;
// Layout: [0] head (BigInt64), [8] free count (Int32), [12] wake word,
// [64..] next links (Int32 per block), [1024..] blocks.
const LINKS = 64;
const DATA = 1024;

class FixedAllocator {
  constructor(sab) {
    this.head = new BigInt64Array(sab, 0, 1);
    this.i32 = new Int32Array(sab);
    this.next = new Int32Array(sab, LINKS, BLOCKS);
  }

  static init(sab) {
    const a = new FixedAllocator(sab);
    for (let i = 0; i < BLOCKS; i++)
      a.next[i] = i + 1 < BLOCKS ? i + 2 : 0;	// index + 1 of the next, 0 ends
    Atomics.store(a.head, 0, 1n << 32n);	// block 0 first, tag 0
    Atomics.store(a.i32, 2, BLOCKS);
    return a;
  }

  // A block's byte offset, or -1 when none is free.
  alloc() {
    for (;;) {
      const old = Atomics.load(this.head, 0);
      const top = Number(old >> 32n);
      if (top === 0)
        return -1;
      const next = Atomics.load(this.next, top - 1);
      const tag = (old + 1n) & 0xffffffffn;
      if (Atomics.compareExchange(this.head, 0, old, (BigInt(next) << 32n) | tag) === old) {
        Atomics.sub(this.i32, 2, 1);
        return DATA + (top - 1) * BLOCK_BYTES;
      }
    }
  }

  free(offset) {
    const idx = (offset - DATA) / BLOCK_BYTES;
    for (;;) {
      const old = Atomics.load(this.head, 0);
      Atomics.store(this.next, idx, Number(old >> 32n));
      const tag = (old + 1n) & 0xffffffffn;
      if (Atomics.compareExchange(this.head, 0, old, (BigInt(idx + 1) << 32n) | tag) === old)
        break;
    }
    Atomics.add(this.i32, 2, 1);
    Atomics.add(this.i32, 3, 1);
    Atomics.notify(this.i32, 3, 1);
  }

  // alloc(), waiting (without blocking the event loop) for a free() when the pool is empty.
  async allocAsync() {
    for (;;) {
      const seen = Atomics.load(this.i32, 3);
      const off = this.alloc();
      if (off >= 0)
        return off;
      await Atomics.waitAsync(this.i32, 3, seen).value;
    }
  }
}

// A producer: fills blocks with its pid and a sequence number, hands their
// offsets to the consumer (the parent), which checks and frees them.
async function producer(count) {
  // A pending waitAsync keeps no process alive (as in Node): the IPC channel does.
  process.channel.ref();
  const region = syncmem.fromFd(4);
  const a = new FixedAllocator(region.buffer);
  const i32 = new Int32Array(region.buffer);
  for (let i = 0; i < count; i++) {
    const off = await a.allocAsync();
    i32[off / 4] = process.pid;
    i32[off / 4 + 1] = i;
    process.send(off);
  }
  process.send('done', () => process.disconnect());
}

async function main() {
  const n = Number(process.argv[2] || 3);
  const count = Number(process.argv[3] || 2000);
  const region = syncmem.anonymous(DATA + BLOCKS * BLOCK_BYTES);
  const a = FixedAllocator.init(region.buffer);
  const i32 = new Int32Array(region.buffer);
  let received = 0;
  const owners = new Map();
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const c = fork(__filename, ['--producer', String(count)],
      { stdio: ['inherit', 'inherit', 'inherit', 'ipc', region.fd] });
    const seq = [];
    let done = false;
    c.on('message', (off) => {
      if (off === 'done') {
        done = true;
        return;
      }
      if (owners.has(off))
        reject(new Error(`block ${off} handed out twice`));
      if (i32[off / 4] !== c.pid || i32[off / 4 + 1] !== seq.length)
        reject(new Error(`block ${off} holds ${i32[off / 4]}/${i32[off / 4 + 1]}`));
      seq.push(off);
      owners.set(off, c.pid);
      received++;
      // Give it back a little later, so producers meet an empty pool.
      setImmediate(() => { owners.delete(off); a.free(off); });
    });
    // Its messages may still be arriving when it exits: wait for the last one.
    c.on('exit', (code) => {
      if (code !== 0)
        reject(new Error(`producer exited ${code}`));
      else if (done)
        resolve();
      else
        c.on('message', (m) => m === 'done' && resolve());
    });
  })));
  await new Promise((r) => setImmediate(r));
  console.log(`allocator: ${n} producers, ${received} blocks passed through a pool of ${BLOCKS}; ` +
    `${Atomics.load(i32, 2)} free at the end`);
  if (received !== n * count || Atomics.load(i32, 2) !== BLOCKS) {
    console.error(`allocator: expected ${n * count} blocks and ${BLOCKS} free`);
    process.exit(1);
  }
}

if (process.argv[2] === '--producer')
  producer(Number(process.argv[3]));
else
  main().catch((e) => { console.error(e); process.exit(1); });
