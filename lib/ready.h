/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The creation protocol of structures built in shared memory by one process
 * and attached to by others (pool, keyed tables): the creator claims a zero
 * state word with a CAS, builds, and publishes READY with a release store;
 * an attacher waits (bounded) while the state says the build is under way.
 */
#ifndef SYNCMEM_READY_H
#define SYNCMEM_READY_H

#include <stdint.h>

#define SYNCMEM__INITIALISING	0x494e4954u	/* "INIT" */
#define SYNCMEM__READY		0x52454459u	/* "REDY" */

/*
 * Claim zeroed memory for building: 0, -EEXIST if someone else did, or
 * -EBADF when the memory is mapped read-only.
 */
int syncmem__ready_claim(uint32_t *state);

/* Publish the build: everything written before is seen by attachers. */
void syncmem__ready_publish(uint32_t *state);

/*
 * Wait until @state is READY (acquire): 0; -EPROTO at once for zeroed or
 * foreign memory; -ETIMEDOUT after @max_ms while still being built.
 */
int syncmem__ready_wait(const uint32_t *state, long max_ms);

#endif /* SYNCMEM_READY_H */
