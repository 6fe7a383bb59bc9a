'use strict';
// Atomics whose wait, notify and waitAsync work across processes on typed
// arrays over region buffers, with ECMAScript's signatures, argument checks
// and results. Every other typed array goes to the global Atomics, and every
// other method (load, store, add, compareExchange...) is the global one:
// plain loads and stores on shared memory already work across processes.
const native = require('./native');

const G = globalThis.Atomics;
const TypedArrayPrototype = Object.getPrototypeOf(Int8Array.prototype);
const getter = (name) => Object.getOwnPropertyDescriptor(TypedArrayPrototype, name).get;
const getTag = getter(Symbol.toStringTag);
const getBuffer = getter('buffer');
const getLength = getter('length');
const getByteOffset = getter('byteOffset');
const call = Function.prototype.call.bind(Function.prototype.call);

// SharedArrayBuffer -> native region handle, or null when not a region's.
const regionOf = new WeakMap();

/*
 * The region handle behind @ta when it is an Int32Array or BigInt64Array
 * over a region buffer (made here or posted from another thread); else null.
 */
function regionFor(ta) {
  const tag = call(getTag, ta);
  if (tag !== 'Int32Array' && tag !== 'BigInt64Array')
    return null;
  const buf = call(getBuffer, ta);
  let h = regionOf.get(buf);
  if (h === undefined) {
    h = native.lookup(buf);
    regionOf.set(buf, h);
  }
  return h;
}

function toIntegerOrInfinity(v) {
  const n = +v;
  if (Number.isNaN(n) || n === 0)
    return 0;
  return Math.trunc(n);
}

// ValidateAtomicAccess: the byte offset of element @index in the region.
function byteIndex(ta, index, width) {
  const i = toIntegerOrInfinity(index);
  if (i < 0 || i > Number.MAX_SAFE_INTEGER)
    throw new RangeError('Invalid atomic access index');
  if (i >= call(getLength, ta))
    throw new RangeError('Invalid atomic access index');
  return call(getByteOffset, ta) + i * width;
}

function waitArgs(ta, index, value, timeout) {
  const is64 = call(getTag, ta) === 'BigInt64Array';
  const off = byteIndex(ta, index, is64 ? 8 : 4);
  const v = is64 ? BigInt.asIntN(64, value) : value | 0;
  const q = +timeout;
  const t = Number.isNaN(q) ? Infinity : Math.max(q, 0);
  return [off, v, is64, t];
}

function wait(typedArray, index, value, timeout) {
  const h = regionFor(typedArray);
  if (h === null)
    return G.wait(typedArray, index, value, timeout);
  const [off, v, is64, t] = waitArgs(typedArray, index, value, timeout);
  return native.wait(h, off, v, is64, t);
}

function waitAsync(typedArray, index, value, timeout) {
  const h = regionFor(typedArray);
  if (h === null)
    return G.waitAsync(typedArray, index, value, timeout);
  const [off, v, is64, t] = waitArgs(typedArray, index, value, timeout);
  const r = native.waitAsync(h, off, v, is64, t);
  if (typeof r === 'string')
    return { async: false, value: r };
  return { async: true, value: r };
}

function notify(typedArray, index, count) {
  const h = regionFor(typedArray);
  if (h === null)
    return G.notify(typedArray, index, count);
  const off = byteIndex(typedArray, index, call(getTag, typedArray) === 'BigInt64Array' ? 8 : 4);
  const c = count === undefined ? Infinity : Math.max(toIntegerOrInfinity(count), 0);
  return native.notify(h, off, c);
}

const Atomics = {};
for (const key of Reflect.ownKeys(G))
  Object.defineProperty(Atomics, key, Object.getOwnPropertyDescriptor(G, key));
for (const [name, fn] of [['wait', wait], ['notify', notify], ['waitAsync', waitAsync]])
  Object.defineProperty(Atomics, name, { value: fn, writable: true, configurable: true, enumerable: false });

/* True when @typedArray's waits and notifies go through syncmem. */
function isRegionArray(typedArray) {
  return regionFor(typedArray) !== null;
}

/*
 * Who waits on element @index of @typedArray (over a region buffer), oldest
 * first: [{ pid, tid, async, size }] (tid 0 for waitAsync).
 */
function waiters(typedArray, index) {
  const h = regionFor(typedArray);
  if (h === null)
    throw new TypeError('syncmem.waiters: an Int32Array or BigInt64Array over a region buffer is expected');
  const off = byteIndex(typedArray, index, call(getTag, typedArray) === 'BigInt64Array' ? 8 : 4);
  return native.waiters(h, off).map(([pid, tid, async, size]) => ({ pid, tid, async, size }));
}

module.exports = { Atomics, isRegionArray, waiters };
