'use strict';
// syncmem for Node.js: SharedArrayBuffers over shared memory regions,
// Atomics.wait/notify/waitAsync across processes, and the Web Locks API
// across the processes of a user. Documentation/syncmem/node.rst.
const native = require('./native');
const { Region, open, anonymous, fromFd, unlink } = require('./region');
const { Atomics, isRegionArray, waiters } = require('./atomics');
const { Pool } = require('./pool');
const { LockManager, Lock } = require('./locks');

module.exports = {
  open,
  anonymous,
  fromFd,
  unlink,
  Region,
  Atomics,
  isRegionArray,
  waiters,
  Pool,
  LockManager,
  Lock,
  /* The LockManager every process of this user shares. */
  locks: new LockManager(),
  libraryVersion: native.libraryVersion,
};
