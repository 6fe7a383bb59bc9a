'use strict';
// Atomics.wait/notify/waitAsync on region buffers, modelled on the behaviour
// test262's Atomics tests define, with agents as processes.
const test = require('node:test');
const assert = require('node:assert');
const { Agent, uniqueName, queued, sleep, alive, until, syncmem } = require('./helpers');

const { Atomics: A } = syncmem;

function region(size = 4096) {
  const r = syncmem.anonymous(size);
  return { r, i32: new Int32Array(r.buffer), i64: new BigInt64Array(r.buffer) };
}

test('atomics: the object is the global Atomics but for wait, notify and waitAsync', () => {
  for (const key of Reflect.ownKeys(Atomics)) {
    if (['wait', 'notify', 'waitAsync'].includes(key))
      assert.notStrictEqual(A[key], Atomics[key]);
    else
      assert.strictEqual(A[key], Atomics[key], String(key));
  }
  assert.strictEqual(A.wait.length, 4);
  assert.strictEqual(A.notify.length, 3);
  assert.strictEqual(A.waitAsync.length, 4);
  assert.strictEqual(Object.prototype.toString.call(A), '[object Atomics]');
});

test('atomics: argument checks throw TypeError and RangeError in the order ECMAScript says', () => {
  const { r, i32, i64 } = region();
  for (const fn of [A.wait, A.waitAsync]) {
    assert.throws(() => fn(new Float64Array(r.buffer), 0, 0, 0), TypeError);
    assert.throws(() => fn(new Uint32Array(r.buffer), 0, 0, 0), TypeError);
    assert.throws(() => fn(new Int16Array(r.buffer), 0, 0, 0), TypeError);
    assert.throws(() => fn(new BigUint64Array(r.buffer), 0, 0n, 0), TypeError);
    assert.throws(() => fn({}, 0, 0, 0), TypeError);
    assert.throws(() => fn(new Int32Array(4), 0, 0, 0), TypeError);	// not shared
    assert.throws(() => fn(i32, -1, 0, 0), RangeError);
    assert.throws(() => fn(i32, 1024, 0, 0), RangeError);
    assert.throws(() => fn(i32, Infinity, 0, 0), RangeError);
    assert.throws(() => fn(i64, 512, 0n, 0), RangeError);
    assert.throws(() => fn(i32, Symbol('i'), 0, 0), TypeError);
    assert.throws(() => fn(i32, 0, 0n, 0), TypeError);		// ToInt32 of a BigInt
    assert.throws(() => fn(i64, 0, 0, 0), TypeError);		// ToBigInt of a Number
    assert.throws(() => fn(i32, 0, 0, 0n), TypeError);		// ToNumber of a BigInt
    assert.throws(() => fn(i32, 0, Symbol('v'), 0), TypeError);
    // The index is checked before the value is converted, the value before the timeout.
    const log = [];
    const poison = (tag) => ({ valueOf() { log.push(tag); return 0; } });
    assert.throws(() => fn(i32, 4096, poison('value'), poison('timeout')), RangeError);
    assert.deepStrictEqual(log, []);
    assert.throws(() => fn(i32, poison('index'), { valueOf() { log.push('value'); throw new SyntaxError('v'); } },
      poison('timeout')), SyntaxError);
    assert.deepStrictEqual(log, ['index', 'value']);
  }
  assert.throws(() => A.notify(new Float32Array(r.buffer), 0, 1), TypeError);
  assert.throws(() => A.notify(i32, 1024, 1), RangeError);
  assert.throws(() => A.notify(i32, -0.5 - 1, 1), RangeError);
  assert.throws(() => A.notify(i32, 0, 1n), TypeError);
  assert.throws(() => A.notify(i64, 0, Symbol('c')), TypeError);
  // A non-shared Int32Array: notify validates, then wakes nobody.
  assert.strictEqual(A.notify(new Int32Array(4), 0, 1), 0);
  // Fractional and string indices convert as ToIndex says.
  assert.strictEqual(A.wait(i32, '1.9', 1, 0), 'not-equal');
  assert.strictEqual(A.wait(i32, 1.9, 0, 0), 'timed-out');
  r.close();
});

test('atomics: wait returns "not-equal" and "timed-out" without a notify', () => {
  const { r, i32, i64 } = region();
  i32[3] = 5;
  assert.strictEqual(A.wait(i32, 3, 4), 'not-equal');
  assert.strictEqual(A.wait(i32, 3, 4, 0), 'not-equal');
  assert.strictEqual(A.wait(i32, 3, 5, 0), 'timed-out');
  assert.strictEqual(A.wait(i32, 3, -1, -5), 'not-equal');
  assert.strictEqual(A.wait(i32, 3, 5, -5), 'timed-out');		// negative: 0
  assert.strictEqual(A.wait(i32, 3, { valueOf: () => 5 }, '0'), 'timed-out');
  const t0 = process.hrtime.bigint();
  assert.strictEqual(A.wait(i32, 3, 5, 50), 'timed-out');
  assert.ok(process.hrtime.bigint() - t0 >= 50_000_000n, 'waited at least the timeout');
  i64[4] = -(2n ** 63n);
  assert.strictEqual(A.wait(i64, 4, 2n ** 63n, 0), 'timed-out');	// ToBigInt64 wraps
  assert.strictEqual(A.wait(i64, 4, 0n, 0), 'not-equal');
  i32[0] = -1;
  assert.strictEqual(A.wait(i32, 0, 0xffffffff, 0), 'timed-out');	// ToInt32 wraps
  r.close();
});

test('atomics: waitAsync results: {async: false} at once, else a promise', async () => {
  const { r, i32, i64 } = region();
  assert.deepStrictEqual(A.waitAsync(i32, 0, 1), { async: false, value: 'not-equal' });
  assert.deepStrictEqual(A.waitAsync(i32, 0, 0, 0), { async: false, value: 'timed-out' });
  const res = A.waitAsync(i32, 0, 0, 30);
  assert.strictEqual(res.async, true);
  assert.ok(res.value instanceof Promise);
  assert.strictEqual(Object.getPrototypeOf(res), Object.prototype);
  assert.deepStrictEqual(Object.keys(res), ['async', 'value']);
  assert.strictEqual(await alive(res.value), 'timed-out');
  const ok = A.waitAsync(i64, 1, 0n);
  assert.strictEqual(A.notify(i64, 1), 1);
  assert.strictEqual(await alive(ok.value), 'ok');
  // NaN and undefined timeouts are +Infinity.
  const nan = A.waitAsync(i32, 2, 0, NaN);
  const und = A.waitAsync(i32, 2, 0);
  await sleep(20);
  assert.strictEqual(A.notify(i32, 2, 5), 2);
  assert.deepStrictEqual(await alive(Promise.all([nan.value, und.value])), ['ok', 'ok']);
  r.close();
});

test('atomics: waitAsync settles from libuv; the promise reaction runs before other I/O', async () => {
  const { r, i32 } = region();
  const p = A.waitAsync(i32, 0, 0).value;
  let settled = false;
  p.then(() => { settled = true; });
  setImmediate(() => A.notify(i32, 0));
  assert.strictEqual(await alive(p), 'ok');
  assert.strictEqual(settled, true);
  r.close();
});

test('atomics: notify counts: undefined and Infinity wake all, 0 and negative none', async () => {
  const { r, i32 } = region();
  const ps = [];
  for (let i = 0; i < 5; i++)
    ps.push(A.waitAsync(i32, 0, 0).value);
  assert.strictEqual(A.notify(i32, 0, 0), 0);
  assert.strictEqual(A.notify(i32, 0, -3), 0);
  assert.strictEqual(A.notify(i32, 0, NaN), 0);
  assert.strictEqual(A.notify(i32, 1), 0);				// another word
  assert.strictEqual(A.notify(i32, 0, 1.7), 1);
  assert.strictEqual(A.notify(i32, 0, '2'), 2);
  assert.strictEqual(A.notify(i32, 0, undefined), 2);
  assert.deepStrictEqual(await alive(Promise.all(ps)), ['ok', 'ok', 'ok', 'ok', 'ok']);
  const more = [A.waitAsync(i32, 0, 0).value, A.waitAsync(i32, 0, 0).value];
  assert.strictEqual(A.notify(i32, 0, Infinity), 2);
  await alive(Promise.all(more));
  r.close();
});

test('atomics: a wait in another process wakes on a notify here, and vice versa', async () => {
  const name = uniqueName('xproc');
  const r = syncmem.open(name, 4096, { exclusive: true });
  const i32 = new Int32Array(r.buffer);
  try {
    const a = new Agent(`
      const r = syncmem.open(${JSON.stringify(name)}, 0, { create: false });
      const i32 = new Int32Array(r.buffer);
      send(Atomics.wait(i32, 0, 0));
      send(await Atomics.waitAsync(i32, 1, 0).value);
      await next();
      Atomics.store(i32, 2, 1);
      send(Atomics.notify(i32, 2));`);
    await queued(i32, 0, 1);
    const [w] = syncmem.waiters(i32, 0);
    assert.strictEqual(w.pid, a.pid);
    assert.strictEqual(w.async, false);
    assert.strictEqual(A.notify(i32, 0), 1);
    assert.strictEqual(await a.next(), 'ok');
    await queued(i32, 1, 1);
    assert.strictEqual(syncmem.waiters(i32, 1)[0].async, true);
    assert.strictEqual(A.notify(i32, 1), 1);
    assert.strictEqual(await a.next(), 'ok');
    const mine = A.waitAsync(i32, 2, 0);
    a.send('go');
    assert.strictEqual(await alive(mine.value), 'ok');
    assert.strictEqual(await a.next(), 1);
    assert.strictEqual(await a.done(), 0);
  } finally {
    r.close();
    syncmem.unlink(name);
  }
});

test('atomics: sync and async waiters of several processes wake in arrival order', async () => {
  const r = syncmem.anonymous(4096);
  const i32 = new Int32Array(r.buffer);
  const agents = [];
  // Agents 0, 2, 4 block in wait; 1, 3, 5 await waitAsync; this process queues last.
  for (let k = 0; k < 6; k++) {
    const how = k % 2 ? 'await Atomics.waitAsync(i32, 0, 0).value' : 'Atomics.wait(i32, 0, 0)';
    agents.push(new Agent(`
      const i32 = new Int32Array(syncmem.fromFd(inheritedFd).buffer);
      const res = ${how};
      Atomics.add(i32, 1, 1);
      send([res, Atomics.load(i32, 1)]);`, { fd: r.fd }));
    await queued(i32, 0, k + 1);
  }
  const mine = A.waitAsync(i32, 0, 0);
  const q = syncmem.waiters(i32, 0);
  assert.deepStrictEqual(q.map((w) => w.pid), [...agents.map((a) => a.pid), process.pid]);
  assert.deepStrictEqual(q.map((w) => w.async), [false, true, false, true, false, true, true]);
  for (let k = 0; k < 6; k++) {
    assert.strictEqual(A.notify(i32, 0, 1), 1);
    assert.deepStrictEqual(await agents[k].next(), ['ok', k + 1], `agent ${k} woke ${k + 1}th`);
  }
  assert.strictEqual(A.notify(i32, 0, 1), 1);
  assert.strictEqual(await alive(mine.value), 'ok');
  for (const a of agents)
    assert.strictEqual(await a.done(), 0);
  r.close();
});

test('atomics: a waiter that times out leaves the queue; the next notify wakes the next one', async () => {
  const r = syncmem.anonymous(4096);
  const i32 = new Int32Array(r.buffer);
  const a = new Agent(`
    const i32 = new Int32Array(syncmem.fromFd(inheritedFd).buffer);
    const t0 = Date.now();
    const res = Atomics.wait(i32, 0, 0, 200);
    send([res, Date.now() - t0]);`, { fd: r.fd });
  await queued(i32, 0, 1);
  const late = A.waitAsync(i32, 0, 0);
  const [res, ms] = await a.next();
  assert.strictEqual(res, 'timed-out');
  assert.ok(ms >= 199, `timed out after ${ms} ms`);
  assert.strictEqual(A.notify(i32, 0, 1), 1);
  assert.strictEqual(await alive(late.value), 'ok');
  await a.done();
  r.close();
});

test('atomics: BigInt64Array words are 64-bit across processes; 32-bit waiters at the same offset share the queue', async () => {
  const r = syncmem.anonymous(4096);
  const i64 = new BigInt64Array(r.buffer);
  const i32 = new Int32Array(r.buffer);
  i64[2] = 0x1_0000_0000n;
  const a = new Agent(`
    const i64 = new BigInt64Array(syncmem.fromFd(inheritedFd).buffer);
    send(Atomics.wait(i64, 2, 0n, 0));
    send(Atomics.wait(i64, 2, 0x1_0000_0000n));`, { fd: r.fd });
  assert.strictEqual(await a.next(), 'not-equal');	// low halves equal, high halves not
  await queued(i32, 4, 1);
  assert.strictEqual(syncmem.waiters(i32, 4)[0].size, 8);
  assert.strictEqual(A.notify(i32, 5), 0);		// the upper half is another word
  assert.strictEqual(A.notify(i32, 4), 1);		// a notify on the Int32Array at the same byte
  assert.strictEqual(await a.next(), 'ok');
  assert.strictEqual(await a.done(), 0);
  r.close();
});

test('atomics: a process killed while waiting leaves no waiter behind', async () => {
  const r = syncmem.anonymous(4096);
  const i32 = new Int32Array(r.buffer);
  const a = new Agent(`
    const i32 = new Int32Array(syncmem.fromFd(inheritedFd).buffer);
    Atomics.waitAsync(i32, 0, 0);
    Atomics.waitAsync(i32, 0, 0);
    send('queued');
    setInterval(() => {}, 1000);`, { fd: r.fd });
  assert.strictEqual(await a.next(), 'queued');
  assert.strictEqual(syncmem.waiters(i32, 0).length, 2);
  await a.kill();
  await queued(i32, 0, 0);
  await until(() => syncmem.waiters(i32, 0).length === 0, 'the dead waiters to go');
  assert.strictEqual(A.notify(i32, 0), 0);
  r.close();
});

test('atomics: a pending waitAsync does not keep the process alive, as on worker buffers', async () => {
  const r = syncmem.anonymous(4096);
  const a = new Agent(`
    const i32 = new Int32Array(syncmem.fromFd(inheritedFd).buffer);
    const w = Atomics.waitAsync(i32, 0, 0, 60000);
    w.value.then(() => process.exit(3));
    send(w.async);`, { fd: r.fd });
  assert.strictEqual(await a.next(), true);
  const t0 = Date.now();
  assert.strictEqual(await a.done(), 0);
  assert.ok(Date.now() - t0 < 30000);
  r.close();
});

test('atomics: other typed arrays and buffers go to the global Atomics', async () => {
  const sab = new SharedArrayBuffer(16);
  const i32 = new Int32Array(sab);
  assert.strictEqual(syncmem.isRegionArray(i32), false);
  assert.strictEqual(A.wait(i32, 0, 1), 'not-equal');
  assert.strictEqual(A.wait(i32, 0, 0, 1), 'timed-out');
  const w = A.waitAsync(i32, 0, 0);
  assert.strictEqual(A.notify(i32, 0), 1);
  assert.strictEqual(await alive(w.value), 'ok');
  const { r } = region();
  assert.strictEqual(syncmem.isRegionArray(new Int32Array(r.buffer, 8, 2)), true);
  assert.strictEqual(syncmem.isRegionArray(new Uint8Array(r.buffer)), false);
  // A view at a byte offset waits on the right word.
  const view = new Int32Array(r.buffer, 64, 4);
  const p = A.waitAsync(view, 1, 0);
  assert.strictEqual(A.notify(new Int32Array(r.buffer), 17), 1);
  assert.strictEqual(await alive(p.value), 'ok');
  r.close();
});
