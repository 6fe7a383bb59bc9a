'use strict';
// Regions: named and anonymous, fds passed to children, SharedArrayBuffers
// over the shared pages, errors.
const test = require('node:test');
const assert = require('node:assert');
const { Worker } = require('node:worker_threads');
const { Agent, uniqueName, alive, syncmem } = require('./helpers');

test('region: a named region is one memory for every process that opens it', async () => {
  const name = uniqueName('named');
  const r = syncmem.open(name, 4096, { exclusive: true });
  try {
    assert.ok(r.buffer instanceof SharedArrayBuffer);
    assert.strictEqual(r.buffer.byteLength, 4096);
    assert.strictEqual(r.size, 4096);
    assert.strictEqual(r.name, name);
    assert.strictEqual(r.readOnly, false);
    assert.strictEqual(r.buffer, r.buffer);
    const i32 = new Int32Array(r.buffer);
    i32[1] = 42;
    const n = 20000;
    const code = `
      const r = syncmem.open(${JSON.stringify(name)}, 0, { create: false });
      const i32 = new Int32Array(r.buffer);
      send(i32[1]);
      await next();
      for (let i = 0; i < ${n}; i++) Atomics.add(i32, 0, 1);
      send('done');`;
    const agents = [new Agent(code), new Agent(code)];
    for (const a of agents)
      assert.strictEqual(await a.next(), 42);
    for (const a of agents)
      a.send('go');
    for (let i = 0; i < n; i++)
      Atomics.add(i32, 0, 1);
    for (const a of agents) {
      assert.strictEqual(await a.next(), 'done');
      assert.strictEqual(await a.done(), 0);
    }
    assert.strictEqual(Atomics.load(i32, 0), 3 * n);
  } finally {
    r.close();
    syncmem.unlink(name);
  }
});

test('region: an anonymous region reaches a child through its fd', async () => {
  const r = syncmem.anonymous(8192);
  assert.strictEqual(r.name, null);
  assert.strictEqual(typeof r.fd, 'number');
  const f64 = new Float64Array(r.buffer);
  f64[3] = 2.5;
  const a = new Agent(`
    const r = syncmem.fromFd(inheritedFd);
    const f64 = new Float64Array(r.buffer);
    send([r.size, f64[3]]);
    f64[4] = -1.25;
    new DataView(r.buffer).setUint16(100, 0xbeef, true);
    send('written');`, { fd: r.fd });
  assert.deepStrictEqual(await a.next(), [8192, 2.5]);
  assert.strictEqual(await a.next(), 'written');
  assert.strictEqual(await a.done(), 0);
  assert.strictEqual(f64[4], -1.25);
  assert.strictEqual(new Uint16Array(r.buffer)[50], 0xbeef);
  r.close();
});

test('region: the buffer works in worker threads, and waits there wake from notifies here', async () => {
  const r = syncmem.anonymous(4096);
  const i32 = new Int32Array(r.buffer);
  const w = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    const { Atomics } = require(${JSON.stringify(require.resolve('..'))});
    const i32 = new Int32Array(workerData);
    i32[2] = 7;
    parentPort.postMessage(Atomics.wait(i32, 0, 0, 60000));`, { eval: true, workerData: r.buffer });
  const result = new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
  await require('./helpers').queued(i32, 0, 1);
  assert.strictEqual(i32[2], 7);
  assert.strictEqual(syncmem.Atomics.notify(i32, 0, 1), 1);
  assert.strictEqual(await result, 'ok');
  await new Promise((resolve) => w.once('exit', resolve));
  r.close();
});

test('region: open errors are Errors with the errno code', () => {
  const name = uniqueName('errors');
  const r = syncmem.open(name, 4096);
  try {
    assert.throws(() => syncmem.open(name, 4096, { exclusive: true }), { code: 'EEXIST' });
    assert.throws(() => syncmem.open(name, 8192), { code: 'EINVAL' });
    assert.throws(() => syncmem.open(uniqueName('missing'), 0, { create: false }), { code: 'ENOENT' });
    assert.throws(() => syncmem.open('x'.repeat(256), 4096), { code: 'ENAMETOOLONG' });
    assert.throws(() => syncmem.open('', 4096), { code: 'EINVAL' });
    const again = syncmem.open(name, 0, { create: false });
    assert.strictEqual(again.size, 4096);
    again.close();
  } finally {
    r.close();
    syncmem.unlink(name);
  }
  assert.throws(() => syncmem.unlink(name), { code: 'ENOENT' });
  const e = (() => { try { syncmem.unlink(name); } catch (err) { return err; } })();
  assert.ok(e instanceof Error);
  assert.strictEqual(e.errno, -2);
});

test('region: bad arguments are TypeErrors and RangeErrors', () => {
  assert.throws(() => syncmem.open(1, 4096), TypeError);
  assert.throws(() => syncmem.open(null, 4096), TypeError);
  assert.throws(() => syncmem.open('n', '4096'), TypeError);
  assert.throws(() => syncmem.open('n', -1), RangeError);
  assert.throws(() => syncmem.open('n', 1.5), RangeError);
  assert.throws(() => syncmem.open('n', 4096, { readOnly: 1 }), TypeError);
  assert.throws(() => syncmem.open('n', 4096, { mode: 0o1777 }), RangeError);
  assert.throws(() => syncmem.open('n', 4096, null), TypeError);
  assert.throws(() => syncmem.anonymous(), TypeError);
  assert.throws(() => syncmem.fromFd(-1), RangeError);
  assert.throws(() => syncmem.fromFd('3'), TypeError);
  assert.throws(() => syncmem.fromFd(0), { code: 'EINVAL' });
  assert.throws(() => syncmem.fromFd(99999), { code: 'EBADF' });
  assert.throws(() => new syncmem.Region(), TypeError);
});

test('region: close lets go; buffers already taken stay usable', () => {
  const r = syncmem.anonymous(4096);
  const buf = r.buffer;
  const i32 = new Int32Array(buf);
  r.close();
  r.close();
  assert.strictEqual(r.closed, true);
  assert.throws(() => r.buffer, { code: 'ERR_SYNCMEM_CLOSED' });
  assert.throws(() => r.fd, { code: 'ERR_SYNCMEM_CLOSED' });
  i32[0] = 5;
  assert.strictEqual(syncmem.Atomics.wait(i32, 0, 4), 'not-equal');
  assert.strictEqual(syncmem.Atomics.wait(i32, 0, 5, 1), 'timed-out');
  assert.strictEqual(syncmem.Atomics.notify(i32, 0), 0);
});

test('region: a read-only view waits but cannot notify', async () => {
  const name = uniqueName('ro');
  const r = syncmem.open(name, 4096);
  const ro = syncmem.open(name, 0, { create: false, readOnly: true });
  try {
    assert.strictEqual(ro.readOnly, true);
    const i32 = new Int32Array(r.buffer);
    const roi = new Int32Array(ro.buffer);
    i32[0] = 9;
    assert.strictEqual(roi[0], 9);
    assert.throws(() => syncmem.Atomics.notify(roi, 0), { code: 'EBADF' });
    const w = syncmem.Atomics.waitAsync(roi, 0, 9);
    assert.strictEqual(w.async, true);
    assert.strictEqual(syncmem.Atomics.notify(i32, 0), 1);
    assert.strictEqual(await alive(w.value), 'ok');
  } finally {
    ro.close();
    r.close();
    syncmem.unlink(name);
  }
});

test('region: the ESM entry point exports the same objects', async () => {
  const esm = await import('../lib/index.mjs');
  assert.strictEqual(esm.open, syncmem.open);
  assert.strictEqual(esm.Atomics, syncmem.Atomics);
  assert.strictEqual(esm.default, syncmem);
});
