// ESM entry point: the same objects as the CommonJS one.
import { createRequire } from 'node:module';

const syncmem = createRequire(import.meta.url)('./index.js');

export const {
  open, anonymous, fromFd, unlink, Region, Atomics, isRegionArray, waiters, Pool,
  LockManager, Lock, locks,
  libraryVersion,
} = syncmem;
export default syncmem;
