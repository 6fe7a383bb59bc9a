// Type declarations of the syncmem package (Documentation/syncmem/node.rst).

/** A shared memory region from /dev/syncmem. */
export declare class Region {
  private constructor();
  /** A SharedArrayBuffer over the whole mapping, shared with every process that opens the region. */
  readonly buffer: SharedArrayBuffer;
  readonly size: number;
  /** The name, or null for an anonymous region (or one adopted with fromFd()). */
  readonly name: string | null;
  readonly readOnly: boolean;
  readonly closed: boolean;
  /** The region fd, to pass to a child (stdio) or over a UNIX socket. */
  readonly fd: number;
  /** Let go of the region; buffers already taken keep the memory mapped until collected. */
  close(): void;
}

export interface OpenOptions {
  /** Create the region if it does not exist (default true). */
  create?: boolean;
  /** With create: fail with EEXIST if it exists (default false). */
  exclusive?: boolean;
  /** Permission bits of a region this call creates (default 0o600), after the umask. */
  mode?: number;
  /** Map it read-only: waits work, writes crash the process (SIGSEGV), notify fails (EBADF). */
  readOnly?: boolean;
}

/** Create or open the named region; size 0 opens an existing one whatever its size. */
export declare function open(name: string, size?: number, options?: OpenOptions): Region;
/** A new region without a name; share it through its fd. */
export declare function anonymous(size: number): Region;
/** Adopt a region fd (inherited or received); the caller keeps fd. */
export declare function fromFd(fd: number): Region;
/** Remove a name; the memory lives until its last user is gone. */
export declare function unlink(name: string): void;

type WaitableArray = Int32Array | BigInt64Array;
type WaitResult = 'ok' | 'not-equal' | 'timed-out';

/**
 * The global Atomics, except that wait, notify and waitAsync work across
 * processes on Int32Array and BigInt64Array views of region buffers.
 */
export declare const Atomics: Omit<typeof globalThis.Atomics, 'wait' | 'notify' | 'waitAsync'> & {
  wait(typedArray: Int32Array, index: number, value: number, timeout?: number): WaitResult;
  wait(typedArray: BigInt64Array, index: number, value: bigint, timeout?: number): WaitResult;
  notify(typedArray: WaitableArray, index: number, count?: number): number;
  waitAsync(typedArray: Int32Array, index: number, value: number, timeout?: number):
    { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
  waitAsync(typedArray: BigInt64Array, index: number, value: bigint, timeout?: number):
    { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
};

/** True when the array's waits and notifies go through syncmem. */
export declare function isRegionArray(typedArray: ArrayBufferView): boolean;

export interface WaiterInfo {
  pid: number;
  /** 0 for a waitAsync. */
  tid: number;
  async: boolean;
  size: 4 | 8;
}
/** Who waits on a word of a region buffer, oldest first. */
export declare function waiters(typedArray: WaitableArray, index: number): WaiterInfo[];

/** The lock-free fixed-size block allocator, in a region. */
export declare class Pool {
  private constructor();
  static footprint(blockSize: number, blocks: number): number;
  /** Build a pool at a 64-byte aligned byte offset of the region, once, by its creator. */
  static init(region: Region, offset: number, blockSize: number, blocks: number): Pool;
  /** Use the pool another process built there. */
  static attach(region: Region, offset: number): Pool;
  /** A free block's byte offset in region.buffer, or null when none is free. */
  alloc(): number | null;
  /** Give back a block alloc() returned (any process may). */
  free(offset: number): void;
  readonly blockSize: number;
  readonly blocks: number;
  readonly freeCount: number;
  readonly offset: number;
}

export type LockMode = 'exclusive' | 'shared';

export interface LockOptions {
  mode?: LockMode;
  ifAvailable?: boolean;
  steal?: boolean;
  signal?: AbortSignal;
}

export declare class Lock {
  private constructor();
  readonly name: string;
  readonly mode: LockMode;
}

export interface LockInfo {
  name: string;
  mode: LockMode;
  /** The client: a process (its owner id). */
  clientId: string;
  /** Its pid in this PID namespace, or 0. */
  pid: number;
}

export interface LockManagerSnapshot {
  held: LockInfo[];
  pending: LockInfo[];
}

/** The Web Locks API across the processes of a user. */
export declare class LockManager {
  /** No scope: the one every process of this user shares; a scope: a separate set of names. */
  constructor(scope?: string);
  readonly scope: string | null;
  request<T>(name: string, callback: (lock: Lock | null) => T | PromiseLike<T>): Promise<T>;
  request<T>(name: string, options: LockOptions, callback: (lock: Lock | null) => T | PromiseLike<T>): Promise<T>;
  query(): Promise<LockManagerSnapshot>;
}

/** The LockManager every process of this user shares. */
export declare const locks: LockManager;

/** The version of the C library built into the addon. */
export declare const libraryVersion: string;
