'use strict';
// Cross-process round trips, measured in one run:
//   waitAsync: two processes ping-pong through a word of a region, each
//              awaiting syncmem's Atomics.waitAsync and answering with notify;
//   wait:      the same with blocking Atomics.wait on both sides;
//   mixed:     this process awaits waitAsync, the child blocks in wait: the
//              exchange of the C library's async_pingpong benchmark, whose
//              figure (run here when SYNCMEM_C_PINGPONG names it) gives the
//              JavaScript overhead over the library's own;
//   send:      the same exchange as process.send() messages over the IPC
//              channel, the usual way between Node processes.
// Prints one line per kind in microseconds per round trip, and the ratios.
//
//   node bench/roundtrip.js [round-trips]
const { fork } = require('child_process');
const syncmem = require('..');
const { Atomics } = syncmem;

const mode = process.argv[2];

// Word 0: the ball: odd = the child's turn, even = the parent's.
async function pongAsync(i32, n) {
  for (let k = 0; k < n; k++) {
    const want = 2 * k + 1;
    while (Atomics.load(i32, 0) !== want)
      await Atomics.waitAsync(i32, 0, want - 1).value;
    Atomics.store(i32, 0, want + 1);
    Atomics.notify(i32, 0);
  }
}

async function pingAsync(i32, n) {
  for (let k = 0; k < n; k++) {
    Atomics.store(i32, 0, 2 * k + 1);
    Atomics.notify(i32, 0);
    while (Atomics.load(i32, 0) !== 2 * k + 2)
      await Atomics.waitAsync(i32, 0, 2 * k + 1).value;
  }
}

function pongSync(i32, n) {
  for (let k = 0; k < n; k++) {
    const want = 2 * k + 1;
    while (Atomics.load(i32, 0) !== want)
      Atomics.wait(i32, 0, want - 1);
    Atomics.store(i32, 0, want + 1);
    Atomics.notify(i32, 0);
  }
}

function pingSync(i32, n) {
  for (let k = 0; k < n; k++) {
    Atomics.store(i32, 0, 2 * k + 1);
    Atomics.notify(i32, 0);
    while (Atomics.load(i32, 0) !== 2 * k + 2)
      Atomics.wait(i32, 0, 2 * k + 1);
  }
}

async function child() {
  const n = Number(process.argv[3]);
  // A pending waitAsync keeps no process alive (as in Node): the IPC channel does.
  process.channel.ref();
  if (mode === '--send') {
    process.on('message', (m) => {
      process.send(m, m === n - 1 ? () => process.disconnect() : undefined);
    });
    return;
  }
  const i32 = new Int32Array(syncmem.fromFd(4).buffer);
  process.send('ready');
  if (mode === '--async')
    await pongAsync(i32, n);
  else
    pongSync(i32, n);
  process.disconnect();
}

// The child, and a promise of its exit, listened for from the start: a
// child that exits before a late once('exit') leaves nothing to keep this
// process alive, and it ends without a word.
function spawnChild(kind, n, region) {
  const stdio = ['inherit', 'inherit', 'inherit', 'ipc'];
  if (region)
    stdio.push(region.fd);
  const c = fork(__filename, [kind, String(n)], { stdio });
  return [c, once(c, 'exit')];
}

function once(emitter, ev) {
  return new Promise((resolve) => emitter.once(ev, resolve));
}

async function measure(kind, n) {
  if (kind === 'send') {
    const [c, exited] = spawnChild('--send', n);
    const t0 = process.hrtime.bigint();
    await new Promise((resolve) => {
      let k = 0;
      c.on('message', () => { if (++k === n) resolve(); else c.send(k); });
      c.send(0);
    });
    const t = process.hrtime.bigint() - t0;
    await exited;
    return Number(t) / n / 1000;
  }
  const region = syncmem.anonymous(4096);
  const i32 = new Int32Array(region.buffer);
  const [c, exited] = spawnChild(kind === 'waitAsync' ? '--async' : '--sync', n, region);
  await once(c, 'message');
  const keep = setInterval(() => {}, 1 << 30);	// a pending waitAsync keeps nothing alive
  const t0 = process.hrtime.bigint();
  if (kind === 'waitAsync' || kind === 'mixed')
    await pingAsync(i32, n);
  else
    pingSync(i32, n);
  const t = process.hrtime.bigint() - t0;
  clearInterval(keep);
  await exited;
  region.close();
  return Number(t) / n / 1000;
}

// The C library's figure: async_pingpong's round trips per second.
function cFigure(n) {
  const bin = process.env.SYNCMEM_C_PINGPONG;
  if (!bin)
    return null;
  const out = require('child_process').execFileSync(bin, [String(n)], { encoding: 'utf8' });
  const m = out.match(/async-pingpong vs sync futex\s+syncmem\s+([\d.]+)/);
  return m ? 1e6 / Number(m[1]) : null;
}

const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];

async function main() {
  const n = Number(mode || 5000);
  const kinds = ['waitAsync', 'mixed', 'wait', 'send'];
  // Warm up each kind once, then take the median of 3 runs.
  for (const kind of kinds)
    await measure(kind, Math.min(n, 1000));
  const runs = Object.fromEntries(kinds.map((k) => [k, []]));
  for (let i = 0; i < 3; i++)
    for (const kind of kinds)
      runs[kind].push(await measure(kind, n));
  const us = Object.fromEntries(kinds.map((k) => [k, median(runs[k])]));
  const f = (x) => x.toFixed(2);
  console.log(`node roundtrip: waitAsync ${f(us.waitAsync)} us, waitAsync/wait ${f(us.mixed)} us, ` +
    `Atomics.wait ${f(us.wait)} us, process.send ${f(us.send)} us per round trip ` +
    `(${n} round trips, median of 3)`);
  console.log(`node roundtrip: waitAsync is ${f(us.send / us.waitAsync)}x faster than process.send (goal: 2x)`);
  const c = cFigure(n);
  if (c !== null) {
    us.c = c;
    console.log(`node roundtrip: C async_pingpong ${f(c)} us; JavaScript overhead ${f(us.mixed / c)}x ` +
      '(goal: at most 1.5x)');
  }
  if (process.env.SYNCMEM_BENCH_JSON)
    require('fs').writeFileSync(process.env.SYNCMEM_BENCH_JSON, JSON.stringify(us));
}

if (mode && mode.startsWith('--'))
  child();
else
  main().catch((e) => { console.error(e); process.exit(1); });
