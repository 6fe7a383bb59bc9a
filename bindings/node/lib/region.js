'use strict';
// Regions: shared memory from /dev/syncmem as a SharedArrayBuffer.
const native = require('./native');

const CREATE = 0x1;
const EXCL = 0x2;
const RDONLY = 0x4;
const NAME_MAX = 255;

function closedError() {
  const e = new Error('syncmem: the region is closed');
  e.code = 'ERR_SYNCMEM_CLOSED';
  return e;
}

function checkSize(size, what) {
  if (typeof size !== 'number')
    throw new TypeError(`syncmem: ${what} must be a number`);
  if (!Number.isSafeInteger(size) || size < 0)
    throw new RangeError(`syncmem: ${what} must be an integer from 0 to 2^53 - 1`);
}

function checkBool(v, what) {
  if (v !== undefined && typeof v !== 'boolean')
    throw new TypeError(`syncmem: option ${what} must be a boolean`);
}

const kHandle = Symbol('syncmem.handle');

class Region {
  #handle;
  #buffer;
  #name;
  #size;
  #readOnly;

  // Not for users: open(), anonymous() and fromFd() make regions.
  constructor(token, handle, name) {
    if (token !== kHandle)
      throw new TypeError('syncmem: use open(), anonymous() or fromFd() to get a Region');
    this.#handle = handle;
    this.#name = name;
    const [size, , readOnly] = native.info(handle);
    this.#size = size;
    this.#readOnly = readOnly;
    this.#buffer = native.buffer(handle);
  }

  /* A SharedArrayBuffer over the whole mapping; null once closed. */
  get buffer() {
    if (this.#handle === null)
      throw closedError();
    return this.#buffer;
  }

  get size() { return this.#size; }
  get name() { return this.#name; }
  get readOnly() { return this.#readOnly; }
  get closed() { return this.#handle === null; }

  /* The region fd, to pass to a child (stdio) or over a UNIX socket. */
  get fd() {
    if (this.#handle === null)
      throw closedError();
    return native.info(this.#handle)[1];
  }

  /*
   * Let go of the region: its fd is closed and the memory unmapped once
   * every SharedArrayBuffer over it (this.buffer and the copies posted to
   * workers) has been garbage-collected. Closing twice does nothing.
   */
  close() {
    if (this.#handle === null)
      return;
    native.close(this.#handle);
    this.#handle = null;
    this.#buffer = null;
  }

  // Internal: the native handle (Pool, LockManager).
  static handleOf(region) {
    if (!(region instanceof Region))
      throw new TypeError('syncmem: a Region is expected');
    if (region.#handle === null)
      throw closedError();
    return region.#handle;
  }

  get [Symbol.toStringTag]() { return 'Region'; }
}

/* open(name, size, { create = true, exclusive = false, mode = 0o600, readOnly = false }) */
function open(name, size = 0, options = {}) {
  if (typeof name !== 'string')
    throw new TypeError('syncmem.open: the name must be a string (anonymous() makes a nameless region)');
  checkSize(size, 'size');
  if (options === null || typeof options !== 'object')
    throw new TypeError('syncmem.open: options must be an object');
  const { create = true, exclusive = false, mode = 0o600, readOnly = false } = options;
  checkBool(create, 'create');
  checkBool(exclusive, 'exclusive');
  checkBool(readOnly, 'readOnly');
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777)
    throw new RangeError('syncmem.open: mode must be an integer from 0 to 0o777');
  let flags = 0;
  if (create)
    flags |= CREATE;
  if (exclusive)
    flags |= EXCL;
  if (readOnly)
    flags |= RDONLY;
  return new Region(kHandle, native.open(name, size, flags, mode), name);
}

/* A new region without a name: share it with children through region.fd. */
function anonymous(size) {
  checkSize(size, 'size');
  return new Region(kHandle, native.open(null, size, 0, 0o600), null);
}

/* Adopt a region fd (inherited or received); the caller keeps fd. */
function fromFd(fd) {
  if (typeof fd !== 'number')
    throw new TypeError('syncmem.fromFd: fd must be a number');
  if (!Number.isInteger(fd) || fd < 0 || fd > 0x7fffffff)
    throw new RangeError('syncmem.fromFd: fd must be a non-negative integer');
  return new Region(kHandle, native.fromFd(fd), null);
}

/* Remove a name; the memory lives on until its last user is gone. */
function unlink(name) {
  if (typeof name !== 'string')
    throw new TypeError('syncmem.unlink: the name must be a string');
  native.unlink(name);
}

module.exports = { Region, open, anonymous, fromFd, unlink, NAME_MAX };
