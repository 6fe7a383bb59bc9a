'use strict';
// Where a cross-process round trip's time goes (not part of make bench).
// This process (awaiting waitAsync, or blocking in wait with 'sync') and a
// child blocking in Atomics.wait ping-pong through word 0 of a region, as
// roundtrip.js's mixed kind does. Both write CLOCK_MONOTONIC stamps into a
// second region (PROBE_NOTS=1 leaves them out: each costs a clock read);
// it prints the CPU time (process.cpuUsage) of each side per round trip
// and the median time between the stamps.
//
//   node bench/probe.js async|sync [round-trips]
const { fork } = require('child_process');
const syncmem = require('..');
const { Atomics } = syncmem;
const [, , mode, nArg] = process.argv;
const NOTS = !!process.env.PROBE_NOTS;
const now = NOTS ? () => 0n : () => process.hrtime.bigint();

if (mode === '--child') {
  const n = Number(nArg);
  process.channel.ref();
  const i32 = new Int32Array(syncmem.fromFd(4).buffer);
  const ts = new BigInt64Array(syncmem.fromFd(5).buffer);
  process.send('ready');
  const cpu0 = process.cpuUsage();
  for (let k = 0; k < n; k++) {
    const want = 2 * k + 1;
    while (Atomics.load(i32, 0) !== want)
      Atomics.wait(i32, 0, want - 1);
    ts[k * 8 + 4] = now();	// e: child woke
    Atomics.store(i32, 0, want + 1);
    Atomics.notify(i32, 0);
    ts[k * 8 + 5] = now();	// f: child notified
  }
  process.send(process.cpuUsage(cpu0), () => process.disconnect());
} else {
  const n = Number(nArg || 2000);
  const r = syncmem.anonymous(4096);
  const tr = syncmem.anonymous(n * 64 + 4096);
  const i32 = new Int32Array(r.buffer);
  const ts = new BigInt64Array(tr.buffer);
  const c = fork(__filename, ['--child', String(n)],
    { stdio: ['inherit', 'inherit', 'inherit', 'ipc', r.fd, tr.fd] });
  c.once('message', async () => {
    const keep = setInterval(() => {}, 1 << 30);
    const childCpu = new Promise((res) => c.once('message', res));
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < n; k++) {
      ts[k * 8] = now();	// a: before notify
      Atomics.store(i32, 0, 2 * k + 1);
      Atomics.notify(i32, 0);
      ts[k * 8 + 1] = now();	// b: notified
      if (mode === 'sync') {
        while (Atomics.load(i32, 0) !== 2 * k + 2)
          Atomics.wait(i32, 0, 2 * k + 1);
      } else {
        while (Atomics.load(i32, 0) !== 2 * k + 2) {
          const p = Atomics.waitAsync(i32, 0, 2 * k + 1).value;
          ts[k * 8 + 2] = now();	// c: waitAsync returned
          await p;
        }
      }
      ts[k * 8 + 3] = now();	// d: parent resumed
    }
    const total = Number(process.hrtime.bigint() - t0) / 1000 / n;
    const pc = process.cpuUsage(cpu0), cc = await childCpu;
    const per = (x) => (x / n).toFixed(1);
    console.log(`probe ${mode}: cpu per rt: parent user ${per(pc.user)} sys ${per(pc.system)}, ` +
      `child user ${per(cc.user)} sys ${per(cc.system)} us`);
    clearInterval(keep);
    const med = (f) => {
      const a = [];
      for (let k = n >> 2; k < n; k++) {
        const v = f(k);
        if (v !== null)
          a.push(v);
      }
      a.sort((x, y) => x - y);
      return a.length ? (a[a.length >> 1]).toFixed(1) : '-';
    };
    const d = (i, j) => (k) => (ts[k * 8 + i] && ts[k * 8 + j] ? Number(ts[k * 8 + j] - ts[k * 8 + i]) / 1000 : null);
    console.log(`probe ${mode}: ${total.toFixed(1)} us/rt; medians: notify call ${med(d(0, 1))}, ` +
      `a->child woke ${med(d(0, 4))}, child store+notify ${med(d(4, 5))}, ` +
      `waitAsync call ${med(d(1, 2))}, child notified->parent resumed ${med(d(5, 3))}, ` +
      `child woke->parent resumed ${med(d(4, 3))}, parent resumed->next a ${med((k) => (k + 1 < n ? Number(ts[(k + 1) * 8] - ts[k * 8 + 3]) / 1000 : null))}`);
    c.once('exit', () => { r.close(); tr.close(); });
  });
}
