'use strict';
// The Atomics-based mutex of V8's blog post on Atomics.waitAsync
// (v8.dev/features/atomics), with lock() and executeLocked(), running across
// processes. The class is the post's, unchanged but for which Atomics it
// uses: syncmem's, whose wait and waitAsync a notify in another process wakes.
//
//   node examples/mutex.js [processes] [rounds]
const { fork } = require('child_process');
const syncmem = require('..');
const { Atomics } = syncmem;

class AsyncLock {
  static INDEX = 0;
  static UNLOCKED = 0;
  static LOCKED = 1;

  constructor(sab) {
    this.sab = sab;
    this.i32a = new Int32Array(sab);
  }

  lock() {
    while (true) {
      const oldValue = Atomics.compareExchange(
        this.i32a, AsyncLock.INDEX, AsyncLock.UNLOCKED, AsyncLock.LOCKED);
      if (oldValue === AsyncLock.UNLOCKED)
        return;
      Atomics.wait(this.i32a, AsyncLock.INDEX, AsyncLock.LOCKED); // <<< blocks
    }
  }

  unlock() {
    const oldValue = Atomics.compareExchange(
      this.i32a, AsyncLock.INDEX, AsyncLock.LOCKED, AsyncLock.UNLOCKED);
    if (oldValue !== AsyncLock.LOCKED)
      throw new Error('Tried to unlock while not holding the mutex');
    Atomics.notify(this.i32a, AsyncLock.INDEX, 1);
  }

  executeLocked(f) {
    const self = this;
    async function tryGetLock() {
      while (true) {
        const oldValue = Atomics.compareExchange(
          self.i32a, AsyncLock.INDEX, AsyncLock.UNLOCKED, AsyncLock.LOCKED);
        if (oldValue === AsyncLock.UNLOCKED) {
          f();
          self.unlock();
          return;
        }
        const result = Atomics.waitAsync(self.i32a, AsyncLock.INDEX, AsyncLock.LOCKED);
        await result.value; // <<< does not block the event loop
      }
    }
    return tryGetLock();
  }
}

// A counter the lock guards, updated non-atomically on purpose (read,
// yield to nobody, write): without the lock, increments would be lost.
function bump(i32) {
  const v = i32[16];
  i32[16] = v + 1;
}

async function child(rounds) {
  // A pending waitAsync keeps no process alive (as in Node): the IPC channel does.
  process.channel.ref();
  const region = syncmem.fromFd(4);
  const mutex = new AsyncLock(region.buffer);
  const i32 = new Int32Array(region.buffer);
  const pending = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2) {
      mutex.lock();
      bump(i32);
      mutex.unlock();
    } else {
      pending.push(mutex.executeLocked(() => bump(i32)));
    }
  }
  await Promise.all(pending);
  process.disconnect();
}

async function main() {
  const n = Number(process.argv[2] || 4);
  const rounds = Number(process.argv[3] || 2000);
  const region = syncmem.anonymous(4096);
  const i32 = new Int32Array(region.buffer);
  const children = [];
  for (let k = 0; k < n; k++) {
    children.push(new Promise((resolve, reject) => {
      const c = fork(__filename, ['--child', String(rounds)],
        { stdio: ['inherit', 'inherit', 'inherit', 'ipc', region.fd] });
      c.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}`))));
    }));
  }
  await Promise.all(children);
  const expected = n * rounds;
  console.log(`mutex: ${n} processes x ${rounds} locked increments: counter ${i32[16]}, expected ${expected}`);
  if (i32[16] !== expected)
    process.exit(1);
}

if (process.argv[2] === '--child')
  child(Number(process.argv[3]));
else
  main().catch((e) => { console.error(e); process.exit(1); });
