'use strict';
// What binding.gyp compiles and links, printed for its <!@(...) expansions.
// In a syncmem checkout (bindings/node inside it) the library's own sources
// are compiled into the addon, so that it needs nothing but liburing at run
// time; elsewhere (a packed copy) the installed library is found with
// pkg-config (libsyncmem-dev, or make install).
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const root = path.resolve(__dirname, '..', '..');
const inCheckout = fs.existsSync(path.join(root, 'include', 'syncmem.h')) &&
  fs.existsSync(path.join(root, 'lib', 'region.c'));

function pkgConfig(flag) {
  try {
    return execFileSync('pkg-config', [flag, 'syncmem'], { encoding: 'utf8' }).trim().split(/\s+/).filter(Boolean);
  } catch {
    throw new Error('syncmem: neither a syncmem checkout (../../lib) nor an installed libsyncmem ' +
      '(pkg-config syncmem) was found');
  }
}

// The header of the library the addon is built with: does it have the
// asynchronous Web Locks calls the LockManager needs?
function defines(includeDirs) {
  for (const d of includeDirs) {
    const h = path.resolve(__dirname, d, 'syncmem.h');
    if (fs.existsSync(h))
      return /\bsyncmem_locks_request_async\s*\(/.test(fs.readFileSync(h, 'utf8')) &&
        /\bsyncmem_locks_query\s*\(/.test(fs.readFileSync(h, 'utf8')) ? ['SM_HAVE_LOCKS_ASYNC'] : [];
  }
  return [];
}

function config() {
  if (inCheckout) {
    const lib = path.join(root, 'lib');
    return {
      sources: fs.readdirSync(lib).filter((f) => f.endsWith('.c')).sort()
        .map((f) => path.relative(__dirname, path.join(lib, f))),
      includes: [path.join(root, 'include'), path.join(root, 'include', 'uapi'), lib]
        .map((d) => path.relative(__dirname, d)),
      libs: ['-luring'],
    };
  }
  return {
    sources: [],
    includes: pkgConfig('--cflags-only-I').map((f) => f.replace(/^-I/, '')),
    libs: pkgConfig('--libs'),
  };
}

module.exports = config();
module.exports.defines = defines(module.exports.includes);
if (require.main === module) {
  const what = process.argv[2];
  process.stdout.write(module.exports[what].join('\n') + '\n');
}
