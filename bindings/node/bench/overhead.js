'use strict';
// Where a round trip's time goes, in one process: the package's Atomics
// and locks.request against the native calls under them, and a wait
// settled by a notify of the same process (the whole async path without a
// second process). Prints microseconds per call.
//
//   node bench/overhead.js [calls]
const syncmem = require('..');
const native = require('../lib/native');
const { Region } = require('../lib/region');
const { Atomics } = syncmem;

const n = Number(process.argv[2] || 20000);
const r = syncmem.anonymous(4096);
const i32 = new Int32Array(r.buffer);
const h = Region.handleOf(r);

function time(what, fn) {
  fn(Math.min(n, 1000));
  const t0 = process.hrtime.bigint();
  fn(n);
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(`node overhead: ${what} ${us.toFixed(2)} us`);
  return us;
}

async function timeAsync(what, fn) {
  await fn(Math.min(n, 1000));
  const t0 = process.hrtime.bigint();
  await fn(n);
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(`node overhead: ${what} ${us.toFixed(2)} us`);
  return us;
}

async function main() {
  time('Atomics.notify, nobody waiting', (k) => {
    for (let i = 0; i < k; i++)
      Atomics.notify(i32, 0, 1);
  });
  time('native notify, nobody waiting', (k) => {
    for (let i = 0; i < k; i++)
      native.notify(h, 0, 1);
  });
  time('Atomics.waitAsync, not-equal', (k) => {
    for (let i = 0; i < k; i++)
      Atomics.waitAsync(i32, 0, 1);
  });
  time('native waitAsync, not-equal', (k) => {
    for (let i = 0; i < k; i++)
      native.waitAsync(h, 0, 1, false, Infinity);
  });
  const keep = setInterval(() => {}, 1 << 30);
  await timeAsync('waitAsync + notify + await, one process', async (k) => {
    for (let i = 0; i < k; i++) {
      const p = Atomics.waitAsync(i32, 0, 0).value;
      Atomics.notify(i32, 0, 1);
      await p;
    }
  });
  const lr = syncmem.anonymous(native.locksFootprint(4, 16));
  const m = native.locksOpen(Region.handleOf(lr), lr.size);
  const name = Buffer.from('x');
  time('native locksTry + locksRelease, free name', (k) => {
    for (let i = 0; i < k; i++)
      native.locksRelease(native.locksTry(m, name, 0));
  });
  const locks = new syncmem.LockManager(`overhead-${process.pid}`);
  await timeAsync('await locks.request, free name', async (k) => {
    for (let i = 0; i < k; i++)
      await locks.request('x', () => {});
  });
  syncmem.unlink(require('../lib/locks').scopeRegionName(`overhead-${process.pid}`));
  await timeAsync('await of a resolved promise', async (k) => {
    for (let i = 0; i < k; i++)
      await Promise.resolve(i);
  });
  clearInterval(keep);
  r.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
