'use strict';
// A cluster HTTP server whose workers share a hit counter and a rate
// limiter in one region: every worker counts into the same word, and the
// limit (LIMIT requests per second, all workers together) holds whichever
// worker a request reaches. The primary hands the region to its workers as
// an extra stdio fd.
//
//   node examples/cluster-server.js [port] [workers]   serve until ^C
//   node examples/cluster-server.js --selftest [workers] serve, load it, check, exit
//     (on a UNIX socket, which needs no TCP/IP in the kernel)
//   (RATE_LIMIT=N sets the limit, default 200)
const cluster = require('cluster');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const syncmem = require('..');
const { Atomics } = syncmem;

const LIMIT = Number(process.env.RATE_LIMIT || 200);	// requests per second, all workers together
// Layout: BigInt64 [0] hits; [1] rate window: (second << 32) | count.

// Take one request from this second's budget: false when it is spent.
function admit(i64) {
  const second = BigInt(Math.floor(Date.now() / 1000));
  for (;;) {
    const old = Atomics.load(i64, 1);
    const fresh = (old >> 32n) !== second;
    const count = fresh ? 0n : old & 0xffffffffn;
    if (count >= BigInt(LIMIT))
      return false;
    if (Atomics.compareExchange(i64, 1, old, (second << 32n) | (count + 1n)) === old)
      return true;
  }
}

function worker() {
  const region = syncmem.fromFd(4);
  const i64 = new BigInt64Array(region.buffer);
  http.createServer((req, res) => {
    if (!admit(i64)) {
      res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '1' });
      res.end('too many requests\n');
      return;
    }
    const hits = Atomics.add(i64, 0, 1n) + 1n;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ hits: Number(hits), worker: cluster.worker.id }) + '\n');
  }).listen(...(process.env.SOCKET ? [process.env.SOCKET] : [Number(process.env.PORT), '127.0.0.1']));
}

function get(socketPath, agent) {
  return new Promise((resolve, reject) => {
    http.get({ socketPath, path: '/', agent }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve([res.statusCode, body]));
    }).on('error', reject);
  });
}

async function selftest(socketPath, region) {
  const i64 = new BigInt64Array(region.buffer);
  const agent = new http.Agent({ keepAlive: false, maxSockets: 16 });
  const n = 5 * LIMIT;
  const first = Math.floor(Date.now() / 1000);
  const results = await Promise.all(Array.from({ length: n }, () => get(socketPath, agent)));
  const seconds = Math.floor(Date.now() / 1000) - first + 1;
  const ok = results.filter(([s]) => s === 200);
  const limited = results.filter(([s]) => s === 429).length;
  const workers = new Set(ok.map(([, b]) => JSON.parse(b).worker));
  const hits = Number(Atomics.load(i64, 0));
  console.log(`cluster-server: ${n} requests in ${seconds} s: ${ok.length} served by ${workers.size} ` +
    `workers, ${limited} refused (limit ${LIMIT}/s); shared counter ${hits}`);
  // Every served request counted once; at most LIMIT served in each second
  // the requests spanned, and at least the first second's LIMIT.
  return hits === ok.length && ok.length + limited === n &&
    ok.length <= LIMIT * seconds && ok.length >= Math.min(n, LIMIT);
}

async function primary() {
  const test = process.argv[2] === '--selftest';
  const port = Number(process.argv[2] || 8080);
  const socket = path.join(os.tmpdir(), `cluster-server-${process.pid}.sock`);
  const n = Number(process.argv[3] || 3);
  const region = syncmem.anonymous(4096);
  cluster.setupPrimary({ stdio: ['inherit', 'inherit', 'inherit', 'ipc', region.fd] });
  let listening = 0;
  const ready = new Promise((resolve, reject) => {
    cluster.on('listening', () => { if (++listening === n) resolve(); });
    cluster.on('exit', (w, code, signal) => {
      if (listening < n)
        reject(new Error(`worker ${w.id} exited (${code ?? signal}) before listening`));
    });
  });
  for (let k = 0; k < n; k++)
    cluster.fork(test ? { SOCKET: socket } : { PORT: String(port) });
  await ready;
  if (!test) {
    console.log(`listening on http://127.0.0.1:${port}/ with ${n} workers`);
    return;
  }
  const good = await selftest(socket, region);
  for (const w of Object.values(cluster.workers))
    w.kill();
  fs.rmSync(socket, { force: true });
  process.exitCode = good ? 0 : 1;
}

if (cluster.isPrimary)
  primary().catch((e) => { console.error(e); process.exit(1); });
else
  worker();
