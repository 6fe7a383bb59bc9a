'use strict';
// The examples run across processes and check their own results.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const path = require('node:path');

// Run an example in a process group of its own. On a timeout the whole
// group is killed; an example that leaves a process behind fails.
function run(file, args = [], env = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'examples', file), ...args],
      { env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      stderr += '\n(timed out after 120 s)';
      killGroup(child.pid);
    }, 120000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let err = code === 0 ? null : new Error(`${file} exited ${code ?? signal}`);
      if (killGroup(child.pid))
        err = new Error(`${file} left processes behind`);
      resolve({ err, stdout, stderr });
    });
  });
}

// SIGKILL every process of the group; true if there was one.
function killGroup(pgid) {
  try {
    process.kill(-pgid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

test('examples: mutex.js: lock() and executeLocked() of 4 processes lose no increment', async () => {
  const { err, stdout, stderr } = await run('mutex.js', ['4', '500']);
  assert.strictEqual(err, null, `${err}\n${stdout}${stderr}`);
  assert.match(stdout, /counter 2000, expected 2000/);
});

test('examples: allocator.js: no block is handed out twice, all come back', async () => {
  const { err, stdout, stderr } = await run('allocator.js', ['3', '500']);
  assert.strictEqual(err, null, `${err}\n${stdout}${stderr}`);
  assert.match(stdout, /1500 blocks passed through a pool of 64; 64 free at the end/);
});

test('examples: triplets.js: readers see every triplet whole, exactly once', async () => {
  const { err, stdout, stderr } = await run('triplets.js', ['2', '3', '1000']);
  assert.strictEqual(err, null, `${err}\n${stdout}${stderr}`);
  assert.match(stdout, /2000 triplets read, checksum matches/);
});

test('examples: cluster-server.js: workers share the counter and the rate limit', async () => {
  const { err, stdout, stderr } = await run('cluster-server.js', ['--selftest', '3'], { RATE_LIMIT: '20' });
  assert.strictEqual(err, null, `${err}\n${stdout}${stderr}`);
  assert.match(stdout, /100 requests in \d+ s: \d+ served by [1-3] workers/);
});
