'use strict';
// The Web Locks API (navigator.locks) across the processes of a user, over
// the library's lock manager (syncmem_locks_*). A Web Locks client is a
// process; a manager's scope is a region holding it.
const native = require('./native');
const region = require('./region');

const ECANCELED = -125;
const EBUSY = -16;
const EOWNERDEAD = -130;
const ECONNABORTED = -103;

const resolved = Promise.resolve();

const SHARED = 0x1;
const IF_AVAILABLE = 0x2;
const STEAL = 0x4;

// Room of a scope's manager: names and requests (held and pending) at once.
// The Python package makes its scopes' managers with the same room.
const MAX_NAMES = 512;
const MAX_REQUESTS = 2048;

function domException(name, message) {
  return new DOMException(message, name);
}

function errnoError(err, what) {
  const e = new Error(`${what}: ${native.strerror(err)}`);
  e.errno = err;
  return e;
}

/*
 * A name's bytes in the manager: its UTF-8, with a NUL in front of the
 * empty name and of names that begin with NUL (the library's names are 1
 * to 1024 bytes; Web Locks allows the empty name).
 */
function encodeName(name) {
  const b = Buffer.from(name, 'utf8');
  if (b.length === 0 || b[0] === 0)
    return Buffer.concat([Buffer.alloc(1), b]);
  return b;
}

// The bytes of the names requested lately (the native calls only read
// them): a program takes the same few names again and again, and making a
// Buffer each time cost a tenth of a request, its garbage more.
const NAME_CACHE_MAX = 256;
const nameCache = new Map();

function nameBytes(name) {
  let b = nameCache.get(name);
  if (b === undefined) {
    if (nameCache.size >= NAME_CACHE_MAX)
      nameCache.clear();
    b = encodeName(name);
    nameCache.set(name, b);
  }
  return b;
}

function decodeName(bytes) {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  return (b.length > 0 && b[0] === 0 ? b.subarray(1) : b).toString('utf8');
}

/* The Lock a callback receives: its name and mode. */
class Lock {
  #name;
  #mode;
  constructor(token, name, mode) {
    if (token !== kToken)
      throw new TypeError('Illegal constructor');
    this.#name = name;
    this.#mode = mode;
  }
  get name() { return this.#name; }
  get mode() { return this.#mode; }
  get [Symbol.toStringTag]() { return 'Lock'; }
}
const kToken = Symbol('syncmem.locks');

// The region of a scope's manager; the Python package uses the same names.
function scopeRegionName(scope) {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  return scope === undefined ? `syncmem.locks.${uid}` : `syncmem.locks.${uid}.${scope}`;
}

/*
 * The locks a manager holds in this process, to tell their holders of a
 * steal: a list linked through its entries (a Set that grows and shrinks
 * by one at every request made a new table each time).
 */
class Holder {
  constructor(name, reject) {
    this.name = name;
    this.reject = reject;
    this.prev = null;
    this.next = null;
  }
}

class Holders {
  head = null;

  add(h) {
    h.next = this.head;
    if (this.head !== null)
      this.head.prev = h;
    this.head = h;
  }

  delete(h) {
    if (h.prev !== null)
      h.prev.next = h.next;
    else if (this.head === h)
      this.head = h.next;
    if (h.next !== null)
      h.next.prev = h.prev;
    h.prev = h.next = null;
  }
}

// Holders in this process learn of a steal at once (others when they release).
function stolenHere(holders, name) {
  for (let h = holders.head; h !== null; h = h.next) {
    if (h.name === name)
      h.reject(domException('AbortError', 'The lock was stolen.'));
  }
}

/*
 * Run @callback with @lock held (@held: its native handle; undefined for
 * none), release when its result settles, and settle the request with it.
 * A result that cannot be a thenable has settled already: the lock is
 * released at once, without a promise and a reaction of its own.
 */
function settle(holders, name, callback, lock, held, resolve, reject) {
  let entry = null;
  if (held !== undefined) {
    entry = new Holder(name, reject);
    holders.add(entry);
  }
  let result;
  try {
    result = callback(lock);
  } catch (e) {
    release(holders, entry, held);
    reject(e);
    return;
  }
  if (result === null || (typeof result !== 'object' && typeof result !== 'function')) {
    finish(holders, entry, held, result, resolve, reject);
    return;
  }
  Promise.resolve(result).then((v) => finish(holders, entry, held, v, resolve, reject), (e) => {
    release(holders, entry, held);
    reject(e);
  });
}

// Release @held (if any): 0, or ECONNABORTED when it had been stolen.
function release(holders, entry, held) {
  if (held === undefined)
    return 0;
  holders.delete(entry);
  return native.locksRelease(held);
}

function finish(holders, entry, held, v, resolve, reject) {
  if (release(holders, entry, held) === ECONNABORTED)
    reject(domException('AbortError', 'The lock was stolen.'));
  else
    resolve(v);
}

class LockManager {
  #scope;
  #manager = null;	// native manager handle, made on first use
  #region = null;
  #holders = new Holders();

  /*
   * new LockManager(): the scope every process of this user shares.
   * new LockManager(scope): a named scope of this user's (a separate set of names).
   */
  constructor(scope) {
    if (scope !== undefined) {
      scope = `${scope}`;
      if (scope.length === 0 || scope.length > 200 || /[\0/]/.test(scope))
        throw new RangeError('syncmem.LockManager: a scope is 1 to 200 characters, without NUL or /');
    }
    this.#scope = scope;
  }

  get scope() { return this.#scope === undefined ? null : this.#scope; }

  #open() {
    if (this.#manager !== null)
      return this.#manager;
    const name = scopeRegionName(this.#scope);
    const size = native.locksFootprint(MAX_NAMES, MAX_REQUESTS);
    let r;
    // The scope's region as it is, else a new one (and if another process
    // made it meanwhile, that one).
    for (let tries = 0; !r; tries++) {
      try {
        r = region.open(name, 0, { create: false });
      } catch (e) {
        if (e.code !== 'ENOENT' || tries > 3)
          throw e;
        try {
          r = region.open(name, size, { exclusive: true, mode: 0o600 });
        } catch (e2) {
          if (e2.code !== 'EEXIST')
            throw e2;
        }
      }
    }
    try {
      // Only this user's own region, closed to others, holds this user's locks.
      const [, , , uid, mode] = native.info(region.Region.handleOf(r));
      if (uid !== process.geteuid() || (mode & 0o077) !== 0) {
        const e = new Error(`syncmem.LockManager: the region ${name} ` +
          `belongs to uid ${uid} with mode 0${mode.toString(8)}: not this user's own`);
        e.code = 'EACCES';
        throw e;
      }
      this.#manager = native.locksOpen(region.Region.handleOf(r), Math.min(size, r.size));
    } catch (e) {
      r.close();
      throw e;
    }
    this.#region = r;
    return this.#manager;
  }

  /*
   * request(name[, options], callback): a promise of what callback returns
   * (awaited), with the lock held while it runs.
   */
  request(name, options, callback) {
    try {
      return this.#request(name, options, callback, arguments.length);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  #request(name, options, callback, argc) {
    if (argc < 2)
      throw new TypeError("Failed to execute 'request' on 'LockManager': 2 arguments required");
    if (argc === 2) {
      callback = options;
      options = undefined;
    }
    name = `${name}`;
    if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function')
      throw new TypeError("Failed to execute 'request' on 'LockManager': options is not an object");
    const o = options ?? {};
    const modeArg = o.mode;
    const mode = modeArg === undefined ? 'exclusive' : `${modeArg}`;
    if (mode !== 'exclusive' && mode !== 'shared')
      throw new TypeError(`The provided value '${mode}' is not a valid enum value of type LockMode`);
    const ifAvailable = Boolean(o.ifAvailable);
    const steal = Boolean(o.steal);
    const signal = o.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal))
      throw new TypeError("Failed to read the 'signal' property from 'LockOptions': not an AbortSignal");
    if (typeof callback !== 'function')
      throw new TypeError("Failed to execute 'request' on 'LockManager': the callback is not a function");
    if (name.startsWith('-'))
      throw domException('NotSupportedError', "Names starting with '-' are reserved");
    if (steal && ifAvailable)
      throw domException('NotSupportedError', "The 'steal' and 'ifAvailable' options cannot be used together");
    if (steal && mode !== 'exclusive')
      throw domException('NotSupportedError', "The 'steal' option may only be used with 'exclusive' locks");
    if (signal && (steal || ifAvailable))
      throw domException('NotSupportedError', "The 'signal' option may not be used with 'steal' or 'ifAvailable'");
    if (signal && signal.aborted)
      throw signal.reason;
    if (typeof native.locksRequest !== 'function')
      throw domException('NotSupportedError',
        'syncmem: this build of the library has no asynchronous Web Locks (syncmem_locks_request_async)');
    let flags = 0;
    if (mode === 'shared')
      flags |= SHARED;
    if (ifAvailable)
      flags |= IF_AVAILABLE;
    if (steal)
      flags |= STEAL;
    const m = this.#open();
    const bytes = nameBytes(name);
    const holders = this.#holders;

    // A request that needs no wait is settled without the event loop: its
    // callback runs from a microtask, as it would after a grant.
    const now = native.locksTry(m, bytes, flags);
    if (typeof now !== 'number' || (now === EBUSY && ifAvailable)) {
      if (steal)
        stolenHere(holders, name);
      // (Not queueMicrotask: Node wraps each of its callbacks in an
      // AsyncResource, which cost more than the rest of the request.)
      return new Promise((resolve, reject) => {
        resolved.then(() => {
          if (typeof now === 'number')
            settle(holders, name, callback, null, undefined, resolve, reject);
          else
            settle(holders, name, callback, new Lock(kToken, name, mode), now, resolve, reject);
        });
      });
    }

    return new Promise((resolve, reject) => {
      let onAbort = null;
      const req = native.locksRequest(m, bytes, flags, (err, held) => {
        if (onAbort)
          signal.removeEventListener('abort', onAbort);
        if (err === ECANCELED) {
          reject(signal ? signal.reason : domException('AbortError', 'The request was aborted.'));
          return;
        }
        if (err === EBUSY && ifAvailable) {
          settle(holders, name, callback, null, undefined, resolve, reject);
          return;
        }
        if (err < 0 && err !== EOWNERDEAD) {
          reject(errnoError(err, 'locks.request'));
          return;
        }
        if (steal)
          stolenHere(holders, name);
        settle(holders, name, callback, new Lock(kToken, name, mode), held, resolve, reject);
      });
      if (signal) {
        onAbort = () => native.locksAbort(req);
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  /* query(): a promise of { held, pending }, each [{ name, mode, clientId }]. */
  query() {
    try {
      const m = this.#open();
      const [held, pending] = native.locksQuery(m);
      const info = ([nameBytes, shared, pid, client]) => ({
        name: decodeName(nameBytes),
        mode: shared ? 'shared' : 'exclusive',
        clientId: `${client}`,
        pid,
      });
      return Promise.resolve({ held: held.map(info), pending: pending.map(info) });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  get [Symbol.toStringTag]() { return 'LockManager'; }
}

module.exports = { LockManager, Lock, scopeRegionName };
