/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The creation protocol of structures built in shared memory by one process
 * and attached to by others (pool, keyed tables): the creator claims the
 * builder word with a CAS of its process's owner id, then moves the state
 * word from 0 to INIT, builds, and publishes READY with a release store; an attacher waits
 * (bounded) while the state says the build is under way. A builder that
 * died is told apart from a slow one by asking the kernel whether its id is
 * alive: attachers then fail with -ESRCH at once, and a new init takes
 * the build over and starts it again from scratch.
 */
#ifndef SYNCMEM_READY_H
#define SYNCMEM_READY_H

#include <stdint.h>

#define SYNCMEM__INITIALISING	0x494e4954u	/* "INIT" */
#define SYNCMEM__READY		0x52454459u	/* "REDY" */

/*
 * Claim memory for building: 0 (build it), -EEXIST if someone else did (and
 * is alive, or finished), or -EBADF when the memory is mapped read-only.
 * Zeroed memory, or memory whose builder died part-way, can be claimed.
 */
int syncmem__ready_claim(uint32_t *state, uint64_t *builder);

/* Publish the build: everything written before is seen by attachers. */
void syncmem__ready_publish(uint32_t *state);

/*
 * Wait until @state is READY (acquire): 0; -EPROTO at once for zeroed or
 * foreign memory (a state of 0 under a claimed builder word is a build
 * starting, and waited for); -ESRCH once the builder is known to have died
 * part-way (init it again); -ETIMEDOUT after @max_ms while still being
 * built.
 */
int syncmem__ready_wait(const uint32_t *state, const uint64_t *builder, long max_ms);

#endif /* SYNCMEM_READY_H */
