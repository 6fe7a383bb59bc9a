'use strict';
// The Web Locks API across processes, modelled on the behaviour the
// web-platform-tests web-locks suite defines, with agents as processes.
// Each test uses a scope of its own, so tests never see each other's names.
const test = require('node:test');
const assert = require('node:assert');
const { Agent, until, sleep, unlinkScopes, syncmem } = require('./helpers');

const { LockManager } = syncmem;
let serial = 0;
const scopes = [];
const scope = () => {
  const s = `t${process.pid}-${++serial}-${Date.now()}`;
  scopes.push(s);
  return s;
};

// The scopes' regions go with the tests (the default scope's stays).
test.after(() => unlinkScopes(scopes));

// An agent holding @name in @scopeName until told to release.
function holder(scopeName, name, mode = 'exclusive') {
  return new Agent(`
    const locks = new syncmem.LockManager(${JSON.stringify(scopeName)});
    const p = locks.request(${JSON.stringify(name)}, { mode: ${JSON.stringify(mode)} }, async (lock) => {
      send(['granted', lock.name, lock.mode]);
      const m = await next();
      return m;
    });
    await p.then((v) => send(['resolved', v]), (e) => send(['rejected', e.name]));`);
}

test('locks: request resolves with what the callback returns, after it ran with the lock', async () => {
  const locks = new LockManager(scope());
  let seen = null;
  const v = await locks.request('r', (lock) => {
    seen = [lock.name, lock.mode, Object.prototype.toString.call(lock)];
    return 42;
  });
  assert.strictEqual(v, 42);
  assert.deepStrictEqual(seen, ['r', 'exclusive', '[object Lock]']);
  assert.strictEqual(await locks.request('r', { mode: 'shared' }, async (l) => l.mode), 'shared');
  await assert.rejects(locks.request('r', () => { throw new SyntaxError('x'); }), SyntaxError);
  await assert.rejects(locks.request('r', async () => { throw new RangeError('y'); }), RangeError);
  // A thenable that is no promise is awaited as one, with the lock held.
  let held = null;
  assert.strictEqual(await locks.request('r', () => ({
    then(resolve) { setTimeout(() => locks.query().then((q) => { held = q.held.length; resolve(7); }), 1); },
  })), 7);
  assert.strictEqual(held, 1);
  // The lock was released each time: it can be had again at once.
  assert.strictEqual(await locks.request('r', { ifAvailable: true }, (l) => l !== null), true);
});

test('locks: argument errors are TypeError and NotSupportedError rejections', async () => {
  const locks = new LockManager(scope());
  const f = () => {};
  await assert.rejects(locks.request('a'), TypeError);
  await assert.rejects(locks.request('a', {}), TypeError);
  await assert.rejects(locks.request('a', { mode: 'bogus' }, f), TypeError);
  await assert.rejects(locks.request('a', { signal: {} }, f), TypeError);
  const notSupported = { name: 'NotSupportedError' };
  await assert.rejects(locks.request('-a', f), notSupported);
  await assert.rejects(locks.request('a', { steal: true, ifAvailable: true }, f), notSupported);
  await assert.rejects(locks.request('a', { steal: true, mode: 'shared' }, f), notSupported);
  await assert.rejects(locks.request('a', { signal: new AbortController().signal, steal: true }, f), notSupported);
  await assert.rejects(locks.request('a', { signal: new AbortController().signal, ifAvailable: true }, f),
    notSupported);
  const e = await locks.request('-x', f).catch((err) => err);
  assert.ok(e instanceof DOMException);
  // Names may be empty or any string; '-' only reserves the first character.
  assert.strictEqual(await locks.request('', (l) => l.name), '');
  assert.strictEqual(await locks.request('a-', (l) => l.name), 'a-');
  assert.strictEqual(await locks.request('\u{1F512}\0x', (l) => l.name), '\u{1F512}\0x');
});

test('locks: an exclusive lock held in another process makes requests here wait', async () => {
  const s = scope();
  const locks = new LockManager(s);
  const a = holder(s, 'x');
  assert.deepStrictEqual(await a.next(), ['granted', 'x', 'exclusive']);
  assert.strictEqual(await locks.request('x', { ifAvailable: true }, (l) => l), null);
  let granted = false;
  const p = locks.request('x', () => { granted = true; return 'mine'; });
  await sleep(100);
  assert.strictEqual(granted, false);
  a.send('done');
  assert.deepStrictEqual(await a.next(), ['resolved', 'done']);
  assert.strictEqual(await p, 'mine');
  await a.done();
});

test('locks: shared locks are held together, across processes; exclusive waits for all', async () => {
  const s = scope();
  const locks = new LockManager(s);
  const agents = [holder(s, 'sh', 'shared'), holder(s, 'sh', 'shared')];
  for (const a of agents)
    assert.deepStrictEqual(await a.next(), ['granted', 'sh', 'shared']);
  assert.strictEqual(await locks.request('sh', { mode: 'shared', ifAvailable: true }, (l) => l.mode), 'shared');
  const order = [];
  const ex = locks.request('sh', () => order.push('exclusive'));
  await until(async () => false, 'x', 1).catch(() => {});
  const q = await locks.query();
  assert.strictEqual(q.held.filter((h) => h.name === 'sh').length, 2);
  assert.deepStrictEqual(q.pending.map((p) => [p.name, p.mode]), [['sh', 'exclusive']]);
  agents[0].send(1);
  await agents[0].next();
  await sleep(50);
  assert.deepStrictEqual(order, []);
  agents[1].send(2);
  await agents[1].next();
  await ex;
  assert.deepStrictEqual(order, ['exclusive']);
  for (const a of agents)
    await a.done();
});

test('locks: requests of several processes are granted in FIFO order', async () => {
  const s = scope();
  const locks = new LockManager(s);
  const order = [];
  let release;
  const first = locks.request('fifo', () => new Promise((r) => { release = r; }));
  await until(() => release, 'the first grant');
  const agents = [];
  for (let k = 0; k < 3; k++) {
    agents.push(new Agent(`
      const locks = new syncmem.LockManager(${JSON.stringify(s)});
      send('queued-soon');
      await locks.request('fifo', async () => { send('granted'); await next(); });
      send('released');`));
    await agents[k].next();
    await until(async () => false, '', 1).catch(() => {});
    // Wait until this agent's request is in the queue before the next one starts.
    for (;;) {
      const q = await locks.query();
      if (q.pending.length === k + 1)
        break;
      await sleep(5);
    }
  }
  const q = await locks.query();
  assert.deepStrictEqual(q.pending.map((p) => p.pid), agents.map((a) => a.pid));
  assert.strictEqual(q.held[0].pid, process.pid);
  release();
  await first;
  for (const a of agents) {
    assert.strictEqual(await a.next(), 'granted');
    order.push(a.pid);
    a.send('release');
    assert.strictEqual(await a.next(), 'released');
  }
  assert.deepStrictEqual(order, agents.map((a) => a.pid));
  for (const a of agents)
    await a.done();
});

test('locks: a signal withdraws a pending request; an aborted signal rejects at once', async () => {
  const s = scope();
  const locks = new LockManager(s);
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(locks.request('sig', { signal: ac.signal }, () => {}), { name: 'AbortError' });
  const reason = new Error('custom reason');
  const ac2 = new AbortController();
  ac2.abort(reason);
  await assert.rejects(locks.request('sig', { signal: ac2.signal }, () => {}), (e) => e === reason);
  let release;
  const held = locks.request('sig', () => new Promise((r) => { release = r; }));
  await until(() => release, 'the grant');
  const ac3 = new AbortController();
  let ran = false;
  const pending = locks.request('sig', { signal: ac3.signal }, () => { ran = true; });
  const after = locks.request('sig', () => 'after');
  ac3.abort();
  await assert.rejects(pending, { name: 'AbortError' });
  assert.deepStrictEqual((await locks.query()).pending.length, 1);
  release();
  await held;
  assert.strictEqual(await after, 'after');
  assert.strictEqual(ran, false);
  // Aborting once granted changes nothing.
  const ac4 = new AbortController();
  assert.strictEqual(await locks.request('sig', { signal: ac4.signal }, () => { ac4.abort(); return 7; }), 7);
});

test('locks: steal takes the lock from a holder in another process and from one here', async () => {
  const s = scope();
  const locks = new LockManager(s);
  const a = holder(s, 'st');
  assert.deepStrictEqual(await a.next(), ['granted', 'st', 'exclusive']);
  const waiting = locks.request('st', () => 'queued');
  assert.strictEqual(await locks.request('st', { steal: true }, (l) => l.name), 'st');
  a.send('late');
  // The holder in another process learns of it when its callback settles.
  assert.deepStrictEqual(await a.next(), ['rejected', 'AbortError']);
  await a.done();
  assert.strictEqual(await waiting, 'queued');
  // Here: the holder's promise rejects at once; holders of other names here
  // (taken before and after it) keep theirs.
  const releases = {};
  const hold = (name) => locks.request(name, () => new Promise((r) => { releases[name] = r; }));
  const before = hold('st-before');
  const mine = hold('st');
  const after = hold('st-after');
  await until(() => releases['st-before'] && releases.st && releases['st-after'], 'the grants');
  const stolen = assert.rejects(mine, { name: 'AbortError' });
  await locks.request('st', { steal: true }, () => {});
  await stolen;
  releases.st();
  releases['st-after']('a');
  releases['st-before']('b');
  assert.deepStrictEqual(await Promise.all([before, after]), ['b', 'a']);
  assert.deepStrictEqual((await locks.query()).held, []);
});

test('locks: a holder killed with SIGKILL releases the lock; its queued requests vanish', async () => {
  const s = scope();
  const locks = new LockManager(s);
  const a = holder(s, 'k');
  assert.deepStrictEqual(await a.next(), ['granted', 'k', 'exclusive']);
  const b = new Agent(`
    const locks = new syncmem.LockManager(${JSON.stringify(s)});
    locks.request('k2', () => new Promise(() => {}));
    locks.request('k', () => {});
    send('queued');`);
  assert.strictEqual(await b.next(), 'queued');
  await until(() => true);
  const t0 = Date.now();
  const p = locks.request('k', () => 'after the kill');
  await a.kill();
  await b.kill();
  assert.strictEqual(await p, 'after the kill');
  assert.ok(Date.now() - t0 < 10000);
  const q = await locks.query();
  assert.deepStrictEqual(q.held.concat(q.pending).filter((h) => h.pid === a.pid || h.pid === b.pid), []);
});

test('locks: query lists held locks and pending requests with their clients', async () => {
  const s = scope();
  const locks = new LockManager(s);
  assert.deepStrictEqual(await locks.query(), { held: [], pending: [] });
  let release;
  const p = locks.request('q1', { mode: 'shared' }, () => new Promise((r) => { release = r; }));
  await until(() => release, 'the grant');
  const w = locks.request('q1', () => {});
  const q = await locks.query();
  assert.deepStrictEqual(q.held.map((h) => [h.name, h.mode, h.pid]), [['q1', 'shared', process.pid]]);
  assert.deepStrictEqual(q.pending.map((h) => [h.name, h.mode]), [['q1', 'exclusive']]);
  assert.strictEqual(q.held[0].clientId, q.pending[0].clientId);
  assert.strictEqual(typeof q.held[0].clientId, 'string');
  release();
  await p;
  await w;
});

test('locks: a pending request keeps the process alive until it is granted', async () => {
  const s = scope();
  const locks = new LockManager(s);
  let release;
  const held = locks.request('alive', () => new Promise((r) => { release = r; }));
  await until(() => release, 'the grant');
  const a = new Agent(`
    const locks = new syncmem.LockManager(${JSON.stringify(s)});
    locks.request('alive', () => console.log('agent: granted'));
    send('queued');`);
  assert.strictEqual(await a.next(), 'queued');
  await sleep(300);
  assert.strictEqual(a.child.exitCode, null, 'the agent waits for its lock');
  release();
  await held;
  assert.strictEqual(await a.done(), 0);
});

test('locks: scopes are separate sets of names; the default scope is shared', async () => {
  const a = new LockManager(scope());
  const b = new LockManager(scope());
  let release;
  const p = a.request('same', () => new Promise((r) => { release = r; }));
  await until(() => release, 'the grant');
  assert.notStrictEqual(await b.request('same', { ifAvailable: true }, (l) => l), null);
  assert.strictEqual(await a.request('same', { ifAvailable: true }, (l) => l), null);
  release();
  await p;
  const name = `default-${process.pid}`;
  const agent = new Agent(`
    await syncmem.locks.request(${JSON.stringify(name)}, async () => { send('held'); await next(); });
    send('released');`);
  assert.strictEqual(await agent.next(), 'held');
  assert.strictEqual(await syncmem.locks.request(name, { ifAvailable: true }, (l) => l), null);
  agent.send('go');
  assert.strictEqual(await agent.next(), 'released');
  await agent.done();
  assert.throws(() => new LockManager(''), RangeError);
});
