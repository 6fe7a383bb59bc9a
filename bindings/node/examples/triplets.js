'use strict';
// Readers and writers passing triplets through a bounded queue in a shared
// buffer (a ring of slots with sequence numbers), as worker threads would,
// but across processes: writers block in Atomics.wait when the ring is
// full, readers await Atomics.waitAsync when it is empty. Each triplet is
// (x, x ^ 0x5a5a5a5a, -x): a reader that saw a torn one would say so.
//
//   node examples/triplets.js [writers] [readers] [triplets-per-writer]
const { fork } = require('child_process');
const syncmem = require('..');
const { Atomics } = syncmem;

const SLOTS = 8;
// Int32 layout: [0] enqueue ticket, [1] dequeue ticket, [2] total,
// [16 + s] sequence of slot s, [64 + 4 s ..] the triplet of slot s.
const SEQ = 16;
const DATA = 64;

function writer(index, count) {
  const i32 = new Int32Array(syncmem.fromFd(4).buffer);
  for (let k = 0; k < count; k++) {
    const pos = Atomics.add(i32, 0, 1);
    const s = SEQ + (pos % SLOTS);
    for (let v; (v = Atomics.load(i32, s)) !== pos;)
      Atomics.wait(i32, s, v);			// the ring is full: block
    const x = index * 1000000 + k;
    const d = DATA + 4 * (pos % SLOTS);
    i32[d] = x;
    i32[d + 1] = x ^ 0x5a5a5a5a;
    i32[d + 2] = -x;
    Atomics.store(i32, s, pos + 1);
    Atomics.notify(i32, s);
  }
  process.exit(0);
}

async function reader() {
  // A pending waitAsync keeps no process alive (as in Node): the IPC channel does.
  process.channel.ref();
  const i32 = new Int32Array(syncmem.fromFd(4).buffer);
  const total = Atomics.load(i32, 2);
  let got = 0;
  let sum = 0;
  for (;;) {
    const pos = Atomics.add(i32, 1, 1);
    if (pos >= total)
      break;
    const s = SEQ + (pos % SLOTS);
    for (let v; (v = Atomics.load(i32, s)) !== pos + 1;)
      await Atomics.waitAsync(i32, s, v).value;	// the ring is empty: await
    const d = DATA + 4 * (pos % SLOTS);
    const [x, y, z] = [i32[d], i32[d + 1], i32[d + 2]];
    if (y !== (x ^ 0x5a5a5a5a) || z !== -x)
      throw new Error(`torn triplet ${x} ${y} ${z}`);
    got++;
    sum += x;
    Atomics.store(i32, s, pos + SLOTS);
    Atomics.notify(i32, s);
  }
  process.send([got, sum], () => process.disconnect());
}

async function main() {
  const writers = Number(process.argv[2] || 2);
  const readers = Number(process.argv[3] || 3);
  const count = Number(process.argv[4] || 3000);
  const region = syncmem.anonymous(4096);
  const i32 = new Int32Array(region.buffer);
  for (let s = 0; s < SLOTS; s++)
    i32[SEQ + s] = s;
  i32[2] = writers * count;
  const stdio = ['inherit', 'inherit', 'inherit', 'ipc', region.fd];
  // A child's end: its exit, and its message when one is expected (which
  // may arrive after the exit).
  const run = (args, onMessage) => new Promise((resolve, reject) => {
    const c = fork(__filename, args, { stdio });
    let exited = false;
    let messaged = !onMessage;
    const check = () => exited && messaged && resolve();
    if (onMessage)
      c.once('message', (m) => { onMessage(m); messaged = true; check(); });
    c.on('exit', (code) => {
      if (code !== 0)
        return reject(new Error(`${args[0]} exited ${code}`));
      exited = true;
      check();
    });
  });
  let got = 0;
  let sum = 0;
  await Promise.all([
    ...Array.from({ length: readers }, () => run(['--reader'], ([g, s]) => { got += g; sum += s; })),
    ...Array.from({ length: writers }, (_, w) => run(['--writer', String(w), String(count)])),
  ]);
  let expected = 0;
  for (let w = 0; w < writers; w++)
    for (let k = 0; k < count; k++)
      expected += w * 1000000 + k;
  console.log(`triplets: ${writers} writers, ${readers} readers: ${got} triplets read, ` +
    `checksum ${sum === expected ? 'matches' : 'DIFFERS'}`);
  if (got !== writers * count || sum !== expected)
    process.exit(1);
}

if (process.argv[2] === '--writer')
  writer(Number(process.argv[3]), Number(process.argv[4]));
else if (process.argv[2] === '--reader')
  reader().catch((e) => { console.error(e); process.exit(1); });
else
  main().catch((e) => { console.error(e); process.exit(1); });
