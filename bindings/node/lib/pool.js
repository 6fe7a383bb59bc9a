'use strict';
// The lock-free fixed-size block allocator, in a region.
const native = require('./native');
const { Region } = require('./region');

const kToken = Symbol('syncmem.pool');

function checkU32(v, what, min = 0) {
  if (typeof v !== 'number')
    throw new TypeError(`syncmem.Pool: ${what} must be a number`);
  if (!Number.isInteger(v) || v < min || v > 0xffffffff)
    throw new RangeError(`syncmem.Pool: ${what} must be an integer from ${min} to 2^32 - 1`);
}

function checkOffset(region, offset) {
  checkU32(offset, 'offset');
  if (offset % 64 !== 0)
    throw new RangeError('syncmem.Pool: offset must be a multiple of 64');
  return Region.handleOf(region);
}

class Pool {
  #pool;
  #offset;
  #blockSize;
  #blocks;

  constructor(token, pool, offset, blockSize, blocks) {
    if (token !== kToken)
      throw new TypeError('syncmem: use Pool.init() or Pool.attach()');
    this.#pool = pool;
    this.#offset = offset;
    this.#blockSize = blockSize;
    this.#blocks = blocks;
  }

  /* Bytes a pool of @blocks blocks of @blockSize bytes spans (0: impossible). */
  static footprint(blockSize, blocks) {
    checkU32(blockSize, 'blockSize', 1);
    checkU32(blocks, 'blocks', 1);
    return native.poolFootprint(blockSize, blocks);
  }

  /* Build a pool at byte @offset of @region, once, by its creator. */
  static init(region, offset, blockSize, blocks) {
    const h = checkOffset(region, offset);
    checkU32(blockSize, 'blockSize', 1);
    checkU32(blocks, 'blocks', 1);
    const [p, stride, n] = native.poolOpen(h, offset, true, blockSize, blocks);
    return new Pool(kToken, p, offset, stride, n);
  }

  /* Use the pool another process built at byte @offset of @region. */
  static attach(region, offset) {
    const h = checkOffset(region, offset);
    const [p, stride, n] = native.poolOpen(h, offset, false, 0, 0);
    return new Pool(kToken, p, offset, stride, n);
  }

  /* A free block's byte offset in the region's buffer, or null when none is free. */
  alloc() {
    const off = native.poolAlloc(this.#pool);
    return off === null ? null : this.#offset + off;
  }

  /* Give back the block at byte @offset of the region's buffer (from alloc()). */
  free(offset) {
    if (typeof offset !== 'number')
      throw new TypeError('syncmem.Pool.free: offset must be a number');
    const off = offset - this.#offset;
    if (!Number.isInteger(off) || off <= 0 || off > 0xffffffff)
      throw new RangeError('syncmem.Pool.free: not a block of this pool');
    native.poolFree(this.#pool, off);
  }

  /* The stride between blocks: the requested size rounded up to 64. */
  get blockSize() { return this.#blockSize; }
  get blocks() { return this.#blocks; }
  get freeCount() { return native.poolFreeCount(this.#pool); }
  get offset() { return this.#offset; }
  get [Symbol.toStringTag]() { return 'Pool'; }
}

module.exports = { Pool };
