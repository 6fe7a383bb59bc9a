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
// Typed array -> what its waits need (a View), or null when they are not
// syncmem's. A typed array's buffer, offset and length never change (a
// SharedArrayBuffer neither shrinks nor detaches): each call after the first
// costs one lookup.
const views = new WeakMap();

class View {
  constructor(h, byteOffset, length, is64) {
    this.h = h;
    this.byteOffset = byteOffset;
    this.length = length;
    this.is64 = is64;
    this.width = is64 ? 8 : 4;
  }
}

/*
 * The View of @ta when it is an Int32Array or BigInt64Array over a region
 * buffer (made here or posted from another thread); else null.
 */
function viewOf(ta) {
  let v = views.get(ta);
  if (v !== undefined)
    return v;
  const tag = call(getTag, ta);
  if (tag !== 'Int32Array' && tag !== 'BigInt64Array')
    return null;
  const buf = call(getBuffer, ta);
  let h = regionOf.get(buf);
  if (h === undefined) {
    h = native.lookup(buf);
    regionOf.set(buf, h);
  }
  v = h === null ? null :
    new View(h, call(getByteOffset, ta), call(getLength, ta), tag === 'BigInt64Array');
  views.set(ta, v);
  return v;
}

function toIntegerOrInfinity(v) {
  const n = +v;
  if (Number.isNaN(n) || n === 0)
    return 0;
  return Math.trunc(n);
}

// ValidateAtomicAccess: the byte offset of element @index in the region.
function byteIndex(v, index) {
  const i = typeof index === 'number' && index >= 0 && index === Math.floor(index) ? index :
    toIntegerOrInfinity(index);
  if (i < 0 || i > Number.MAX_SAFE_INTEGER || i >= v.length)
    throw new RangeError('Invalid atomic access index');
  return v.byteOffset + i * v.width;
}

// The timeout in milliseconds: NaN and undefined mean none, negative 0.
function timeoutOf(timeout) {
  const q = +timeout;
  return Number.isNaN(q) ? Infinity : Math.max(q, 0);
}

function wait(typedArray, index, value, timeout) {
  const w = viewOf(typedArray);
  if (w === null)
    return G.wait(typedArray, index, value, timeout);
  const off = byteIndex(w, index);
  const v = w.is64 ? BigInt.asIntN(64, value) : value | 0;
  return native.wait(w.h, off, v, w.is64, timeoutOf(timeout));
}

function waitAsync(typedArray, index, value, timeout) {
  const w = viewOf(typedArray);
  if (w === null)
    return G.waitAsync(typedArray, index, value, timeout);
  const off = byteIndex(w, index);
  const v = w.is64 ? BigInt.asIntN(64, value) : value | 0;
  const r = native.waitAsync(w.h, off, v, w.is64, timeoutOf(timeout));
  return { async: typeof r !== 'string', value: r };
}

function notify(typedArray, index, count) {
  const w = viewOf(typedArray);
  if (w === null)
    return G.notify(typedArray, index, count);
  const off = byteIndex(w, index);
  const c = count === undefined ? Infinity : Math.max(toIntegerOrInfinity(count), 0);
  return native.notify(w.h, off, c);
}

const Atomics = {};
for (const key of Reflect.ownKeys(G))
  Object.defineProperty(Atomics, key, Object.getOwnPropertyDescriptor(G, key));
for (const [name, fn] of [['wait', wait], ['notify', notify], ['waitAsync', waitAsync]])
  Object.defineProperty(Atomics, name, { value: fn, writable: true, configurable: true, enumerable: false });

/* True when @typedArray's waits and notifies go through syncmem. */
function isRegionArray(typedArray) {
  return viewOf(typedArray) !== null;
}

/*
 * Who waits on element @index of @typedArray (over a region buffer), oldest
 * first: [{ pid, tid, async, size }] (tid 0 for waitAsync).
 */
function waiters(typedArray, index) {
  const w = viewOf(typedArray);
  if (w === null)
    throw new TypeError('syncmem.waiters: an Int32Array or BigInt64Array over a region buffer is expected');
  return native.waiters(w.h, byteIndex(w, index)).map(([pid, tid, async, size]) => ({ pid, tid, async, size }));
}

module.exports = { Atomics, isRegionArray, waiters };
