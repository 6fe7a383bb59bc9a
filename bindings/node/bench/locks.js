'use strict';
// locks.request round trips against a lock file, measured in one run.
//
// The lock-file baseline does what proper-lockfile (the most used npm
// lock-file package) does, written here because npm packages cannot be
// installed offline: mkdir of <file>.lock to take the lock, rmdir to
// release it, and on EEXIST a retry after a delay. proper-lockfile's
// smallest retry delay is 1 ms (retries: { minTimeout: 1 }); this baseline
// retries after 1 ms too, and skips proper-lockfile's stat and mtime
// refreshes, which only make it slower.
//
//   uncontended: one process takes and releases a lock N times;
//   contended:   two processes each take and release the same lock N
//                times, alternating as fast as the lock lets them.
// The contended figures are per take+release and per handoff (a take by
// the process that did not take the lock last): locks.request is FIFO and
// hands every take to the other process, while a process that releases the
// lock file usually takes it again before the other's retry comes round.
//
//   node bench/locks.js [N]
const fs = require('fs');
const os = require('os');
const path = require('path');
const { fork } = require('child_process');
const syncmem = require('..');
const { scopeRegionName } = require('../lib/locks');

const [, , modeArg, nArg, scopeArg, dirArg] = process.argv;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function fileLock(dir) {
  for (;;) {
    try {
      await fs.promises.mkdir(dir);
      return;
    } catch (e) {
      if (e.code !== 'EEXIST')
        throw e;
      await sleep(1);
    }
  }
}

// Word 0 of @last: the id of the process that took the lock last.
function taken(last, me) {
  return last && Atomics.exchange(last, 0, me) !== me ? 1 : 0;
}

// Each loop returns its handoffs: takes after the other process's.
async function loopFile(dir, n, last, me) {
  let handoffs = 0;
  for (let i = 0; i < n; i++) {
    await fileLock(dir);
    handoffs += taken(last, me);
    await fs.promises.rmdir(dir);
  }
  return handoffs;
}

async function loopLocks(locks, n, last, me) {
  let handoffs = 0;
  for (let i = 0; i < n; i++)
    await locks.request('bench', () => { handoffs += taken(last, me); });
  return handoffs;
}

async function child() {
  const n = Number(nArg);
  const last = new Int32Array(syncmem.fromFd(4).buffer);
  process.channel.ref();
  process.send('ready');
  await new Promise((r) => process.once('message', r));
  const handoffs = modeArg === '--file' ? await loopFile(dirArg, n, last, 2) :
    await loopLocks(new syncmem.LockManager(scopeArg), n, last, 2);
  process.send(handoffs, () => process.disconnect());
}

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1000;
}

// Two processes, n takes each: [us per take+release, us per handoff].
async function contended(kind, n, scope, dir) {
  const region = syncmem.anonymous(4096);
  const last = new Int32Array(region.buffer);
  const c = fork(__filename, [kind === 'file' ? '--file' : '--locks', String(n), scope, dir],
    { stdio: ['inherit', 'inherit', 'inherit', 'ipc', region.fd] });
  // Listened for from the start: a child that exits before a late once('exit')
  // leaves nothing to keep this process alive, and it ends without a word.
  const exited = new Promise((r) => c.once('exit', r));
  await new Promise((r) => c.once('message', r));
  const done = new Promise((r) => c.once('message', r));
  let handoffs = 0;
  const us = await timed(async () => {
    c.send('go');
    if (kind === 'file')
      handoffs += await loopFile(dir, n, last, 1);
    else
      handoffs += await loopLocks(new syncmem.LockManager(scope), n, last, 1);
    handoffs += await done;
  });
  await exited;
  region.close();
  return [us / (2 * n), us / Math.max(handoffs, 1), handoffs];
}

async function main() {
  const n = Number(modeArg || 2000);
  const scope = `bench-${process.pid}`;
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'syncmem-bench-')), 'file.lock');
  const locks = new syncmem.LockManager(scope);
  await loopLocks(locks, 100);
  await loopFile(dir, 100);
  const u = {
    locks: (await timed(() => loopLocks(locks, n))) / n,
    file: (await timed(() => loopFile(dir, n))) / n,
  };
  const c = {
    locks: await contended('locks', n, scope, dir),
    file: await contended('file', n, scope, dir),
  };
  const f = (x) => x.toFixed(2);
  console.log(`node locks: uncontended locks.request ${f(u.locks)} us, lock file ${f(u.file)} us ` +
    `per take+release: ${f(u.file / u.locks)}x (goal: 10x)`);
  console.log(`node locks: two processes: locks.request ${f(c.locks[0])} us, lock file ` +
    `${f(c.file[0])} us per take+release: ${f(c.file[0] / c.locks[0])}x (goal: 10x)`);
  console.log(`node locks: two processes: locks.request ${f(c.locks[1])} us ` +
    `(${c.locks[2]} handoffs), lock file ${f(c.file[1])} us (${c.file[2]} handoffs) ` +
    `per handoff: ${f(c.file[1] / c.locks[1])}x`);
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  syncmem.unlink(scopeRegionName(scope));
}

if (modeArg === '--file' || modeArg === '--locks')
  child();
else
  main().catch((e) => { console.error(e); process.exit(1); });
