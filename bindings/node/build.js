#!/usr/bin/env node
'use strict';
// Build the addon with node-gyp, offline, against the headers of the Node
// that runs this script (npm runs it as the package's install script; make
// node runs it in a checkout). Nothing is ever downloaded: node-gyp gets
// --nodedir, the prefix whose include/node holds node_api.h, v8.h, uv.h and
// common.gypi (Node's own tarballs and Debian's nodejs/libnode-dev put them
// there).
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function fail(msg) {
  process.stderr.write(`syncmem: ${msg}\n`);
  process.exit(1);
}

const major = Number(process.versions.node.split('.')[0]);
if (major < 18)
  fail(`Node.js ${process.versions.node} is too old: syncmem needs Node.js 18 or later`);

function nodedir() {
  const candidates = [];
  if (process.env.npm_config_nodedir)
    candidates.push(process.env.npm_config_nodedir);
  candidates.push(path.resolve(path.dirname(process.execPath), '..'), '/usr', '/usr/local');
  for (const dir of candidates) {
    const inc = path.join(dir, 'include', 'node');
    if (['node_api.h', 'v8.h', 'uv.h', 'common.gypi'].every((f) => fs.existsSync(path.join(inc, f))))
      return dir;
  }
  fail(`no headers of Node.js ${process.version} found (looked for include/node/node_api.h, ` +
    `v8.h, uv.h and common.gypi under ${candidates.join(', ')}): install them ` +
    '(Debian: apt-get install libnode-dev; Node.js tarballs ship them), or set npm_config_nodedir');
}

function nodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    path.resolve(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm',
      'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
    '/usr/share/nodejs/node-gyp/bin/node-gyp.js',
    '/usr/share/nodejs/npm/node_modules/node-gyp/bin/node-gyp.js',
  ];
  for (const c of candidates)
    if (c && fs.existsSync(c))
      return c;
  fail('node-gyp not found: install npm (it bundles node-gyp) or Debian\'s node-gyp');
}

const dir = nodedir();
const headerVersion = (() => {
  const h = fs.readFileSync(path.join(dir, 'include', 'node', 'node_version.h'), 'utf8');
  const v = ['MAJOR', 'MINOR', 'PATCH'].map((k) => h.match(new RegExp(`#define NODE_${k}_VERSION (\\d+)`))[1]);
  return v.join('.');
})();
if (headerVersion.split('.')[0] !== String(major))
  fail(`the headers in ${dir}/include/node are of Node.js ${headerVersion}, ` +
    `but this is Node.js ${process.versions.node}: install the matching headers`);

const args = [nodeGyp(), 'rebuild', `--nodedir=${dir}`, '--release'];
if (process.env.SYNCMEM_NODE_JOBS)
  args.push(`--jobs=${process.env.SYNCMEM_NODE_JOBS}`);
const env = { ...process.env, npm_config_offline: 'true' };
// node-gyp keeps nothing of its own outside the package with --nodedir, but
// give it a scratch devdir all the same so a read-only home cannot matter.
env.npm_config_devdir = path.join(__dirname, 'build', '.devdir');
const r = spawnSync(process.execPath, args, { cwd: __dirname, stdio: 'inherit', env });
if (r.status !== 0)
  fail(`node-gyp failed (exit ${r.status === null ? r.signal : r.status})`);
