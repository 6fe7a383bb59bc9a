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
//
//   node bench/locks.js [N]
const fs = require('fs');
const os = require('os');
const path = require('path');
const { fork } = require('child_process');
const syncmem = require('..');

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

async function loopFile(dir, n) {
  for (let i = 0; i < n; i++) {
    await fileLock(dir);
    await fs.promises.rmdir(dir);
  }
}

async function loopLocks(locks, n) {
  for (let i = 0; i < n; i++)
    await locks.request('bench', () => {});
}

async function child() {
  const n = Number(nArg);
  process.channel.ref();
  process.send('ready');
  await new Promise((r) => process.once('message', r));
  if (modeArg === '--file')
    await loopFile(dirArg, n);
  else
    await loopLocks(new syncmem.LockManager(scopeArg), n);
  process.send('done', () => process.disconnect());
}

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1000;
}

async function contended(kind, n, scope, dir) {
  const c = fork(__filename, [kind === 'file' ? '--file' : '--locks', String(n), scope, dir]);
  await new Promise((r) => c.once('message', r));
  const done = new Promise((r) => c.once('message', r));
  const us = await timed(async () => {
    c.send('go');
    if (kind === 'file')
      await loopFile(dir, n);
    else
      await loopLocks(new syncmem.LockManager(scope), n);
    await done;
  });
  await new Promise((r) => c.once('exit', r));
  return us / (2 * n);
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
    `per take+release: ${f(u.file / u.locks)}x`);
  console.log(`node locks: two processes alternating: locks.request ${f(c.locks)} us, lock file ` +
    `${f(c.file)} us per take+release: ${f(c.file / c.locks)}x (goal: 10x)`);
  fs.rmSync(path.dirname(dir), { recursive: true, force: true });
}

if (modeArg === '--file' || modeArg === '--locks')
  child();
else
  main().catch((e) => { console.error(e); process.exit(1); });
