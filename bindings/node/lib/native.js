'use strict';
// The native addon (src/), built by `make node` or by npm's install script
// (build.js). A missing build is an Error with code ERR_SYNCMEM_NOT_BUILT.
const path = require('path');

const file = path.join(__dirname, '..', 'build', 'Release', 'syncmem.node');
let native;
try {
  native = require(file);
} catch (e) {
  if (e && e.code === 'MODULE_NOT_FOUND') {
    const err = new Error(`syncmem: the native addon ${file} is not built: run 'make node' in ` +
      'the syncmem checkout, or npm install this package (it builds the addon)');
    err.code = 'ERR_SYNCMEM_NOT_BUILT';
    throw err;
  }
  throw e;
}
module.exports = native;
