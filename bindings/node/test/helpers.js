'use strict';
// Agents for the tests: child Node processes running a snippet with
// `syncmem`, `Atomics` (syncmem's), `send(msg)` and `next()` (the next
// message from the test) in scope, as test262's $262.agent does with
// threads. Messages go over the IPC channel; a region fd may be passed as
// the child's fd 4 (`inheritedFd` in scope). Once the snippet's promise
// settles, the agent disconnects: then it exits when nothing else is pending.
const { spawn } = require('child_process');
const path = require('path');
const syncmem = require('..');

const pkg = path.resolve(__dirname, '..');
let serial = 0;

/* A region name no other test (or earlier run) uses. */
function uniqueName(tag) {
  return `node-test-${tag}-${process.pid}-${++serial}-${Date.now()}`;
}

const prelude = `
'use strict';
const syncmem = require(${JSON.stringify(pkg)});
const { Atomics } = syncmem;
const inheritedFd = 4;
const unsent = new Set();
const send = (m) => {
  const p = new Promise((resolve) => process.send(m, resolve));
  unsent.add(p);
  p.then(() => unsent.delete(p));
};
const inbox = [];
let waiting = null;
process.on('message', (m) => {
  if (waiting) { const w = waiting; waiting = null; w(m); } else inbox.push(m);
});
const next = () => inbox.length ? Promise.resolve(inbox.shift()) : new Promise((r) => { waiting = r; });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
process.on('unhandledRejection', (e) => { console.error(e); process.exit(70); });
`;

class Agent {
  constructor(code, { fd, args = [] } = {}) {
    const stdio = ['ignore', 'inherit', 'inherit', 'ipc'];
    if (fd !== undefined)
      stdio.push(fd);
    this.child = spawn(process.execPath, ['-e', `${prelude}\n(async () => {\n${code}\n})().then(() => Promise.all(unsent)).then(() => { if (process.connected) process.disconnect(); }, (e) => { console.error(e); process.exit(71); });`, ...args], { stdio });
    this.pid = this.child.pid;
    this.inbox = [];
    this.waiters = [];
    this.child.on('message', (m) => {
      const w = this.waiters.shift();
      if (w)
        w.resolve(m);
      else
        this.inbox.push(m);
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        for (const w of this.waiters.splice(0))
          w.reject(new Error(`agent ${this.pid} exited (${code ?? signal}) before sending a message`));
        resolve({ code, signal });
      });
    });
  }

  /* The agent's next message. */
  next() {
    if (this.inbox.length)
      return Promise.resolve(this.inbox.shift());
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  send(m) { this.child.send(m); }

  kill(signal = 'SIGKILL') { this.child.kill(signal); return this.exited; }

  /* Resolves with the exit code; rejects on a signal. */
  async done() {
    const { code, signal } = await this.exited;
    if (signal)
      throw new Error(`agent ${this.pid} killed by ${signal}`);
    return code;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Resolve once @cond() is true, checking every few ms (test code only). */
async function until(cond, what = 'condition', ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    if (cond())
      return;
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/* Resolve once @n waiters are queued on element @index of @ta. */
function queued(ta, index, n) {
  return until(() => syncmem.waiters(ta, index).length >= n, `${n} waiters`);
}

/*
 * @p, keeping the process alive until it settles: a pending waitAsync does
 * not (as with Node's own Atomics.waitAsync), and a test awaiting one with
 * nothing else pending would end with the event loop.
 */
function alive(p) {
  const t = setInterval(() => {}, 1 << 30);
  return Promise.resolve(p).finally(() => clearInterval(t));
}

/* Unlink the regions of the lock scopes @scopes (they outlive the processes). */
function unlinkScopes(scopes) {
  const { scopeRegionName } = require('../lib/locks');
  for (const s of scopes) {
    try {
      syncmem.unlink(scopeRegionName(s));
    } catch (e) {
      if (e.code !== 'ENOENT')
        throw e;
    }
  }
}

module.exports = { Agent, uniqueName, sleep, until, queued, alive, unlinkScopes, syncmem };
