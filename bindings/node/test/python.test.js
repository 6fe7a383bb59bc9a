'use strict';
// Node and Python processes of one user share the default lock manager and
// the named scopes: a Python holder blocks a Node request of the same name
// and a Node holder a Python one. Needs python3 and the Python package built
// at ../../../build/python/lib (make python; check-node copies both into the
// VM).
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('child_process');
const path = require('path');
const readline = require('readline');
const { until, unlinkScopes, syncmem } = require('./helpers');

const { LockManager } = syncmem;
const pythonPath = path.resolve(__dirname, '..', '..', '..', 'build', 'python', 'lib');

/*
 * A python3 running @code with `import syncmem` done, `say(line)` writing a
 * line to the test and `hear()` reading the test's next line.
 */
class Py {
  constructor(code) {
    const prelude = 'import sys, syncmem\n' +
      'def say(s):\n    print(s, flush=True)\n' +
      'def hear():\n    return sys.stdin.readline().strip()\n';
    this.child = spawn('python3', ['-c', prelude + code], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' },
    });
    this.lines = [];
    this.waiters = [];
    readline.createInterface({ input: this.child.stdout }).on('line', (l) => {
      const w = this.waiters.shift();
      if (w)
        w(l);
      else
        this.lines.push(l);
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  next() {
    if (this.lines.length)
      return Promise.resolve(this.lines.shift());
    return new Promise((resolve, reject) => {
      this.waiters.push(resolve);
      this.exited.then((code) => reject(new Error(`python3 exited ${code} before a line`)));
    });
  }

  say(line) { this.child.stdin.write(`${line}\n`); }
}

/* Resolve once process @pid has a request of @name queued in @locks. */
async function queuedBy(locks, name, pid) {
  const end = Date.now() + 30000;
  for (;;) {
    const { pending } = await locks.query();
    if (pending.some((q) => q.name === name && q.pid === pid))
      return;
    assert.ok(Date.now() < end, `a request of ${name} by ${pid} queues`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const scopes = [];
test.after(() => unlinkScopes(scopes));

// In the default manager and in a named scope, one Python process holds a
// name a Node request then waits for, and waits for a name Node holds.
for (const scope of [undefined, `py-${process.pid}`]) {
  const where = scope === undefined ? 'the default manager' : 'a named scope';
  const pyManager = scope === undefined ? 'syncmem.locks' : `syncmem.LockManager(${JSON.stringify(scope)})`;
  if (scope !== undefined)
    scopes.push(scope);

  test(`python: Python and Node holders block each other in ${where}`, async () => {
    const locks = scope === undefined ? syncmem.locks : new LockManager(scope);
    const byPython = `cross-py-${process.pid}-${scope ?? ''}`;
    const byNode = `cross-node-${process.pid}-${scope ?? ''}`;
    let release;
    const nodeHolds = locks.request(byNode, () => new Promise((r) => { release = r; }));
    await until(() => release, 'the grant');
    const py = new Py(`
m = ${pyManager}
with m.request(${JSON.stringify(byPython)}):
    say('held')
    hear()
with m.request(${JSON.stringify(byNode)}, if_available=True) as l:
    say('busy' if l is None else 'free')
with m.request(${JSON.stringify(byNode)}, timeout=60) as l:
    say('granted')
`);
    // A Python holder blocks Node.
    assert.strictEqual(await py.next(), 'held');
    assert.strictEqual(await locks.request(byPython, { ifAvailable: true }, (l) => l), null);
    const { held } = await locks.query();
    assert.ok(held.some((h) => h.name === byPython && h.pid === py.child.pid),
      'Node sees the Python holder');
    let granted = false;
    const nodeWaits = locks.request(byPython, () => { granted = true; });
    await queuedBy(locks, byPython, process.pid);
    assert.strictEqual(granted, false);
    py.say('release');
    await nodeWaits;
    assert.strictEqual(granted, true);
    // A Node holder blocks Python.
    assert.strictEqual(await py.next(), 'busy');
    await queuedBy(locks, byNode, py.child.pid);
    release();
    await nodeHolds;
    assert.strictEqual(await py.next(), 'granted');
    assert.strictEqual(await py.exited, 0);
  });
}
