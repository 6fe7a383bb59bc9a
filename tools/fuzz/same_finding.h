/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Findings that differ only in numbers (pids, seeds, addresses, counts) are
 * one finding seen several times: the fuzzers list each once, with a count.
 */
#ifndef SYNCMEM_SAME_FINDING_H
#define SYNCMEM_SAME_FINDING_H

#include <ctype.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* @msg with every number (decimal, or hex after a digit) replaced by '#'. */
static inline void finding_shape(const char *msg, char *out, size_t len)
{
	size_t n = 0;

	while (*msg && n + 1 < len) {
		if (isdigit((unsigned char)*msg)) {
			while (isxdigit((unsigned char)*msg) || *msg == 'x')
				msg++;
			out[n++] = '#';
		} else {
			out[n++] = *msg++;
		}
	}
	out[n] = '\0';
}

/*
 * Record @msg in @nslots slots of @len bytes at @slots (counts in @counts,
 * @ready set once a slot is written): a message of the same shape as one
 * already there only adds to its count. Returns true when it is new.
 */
static inline bool finding_record(char *slots, size_t len, size_t max, atomic_uint *nslots,
				  atomic_uint *counts, atomic_bool *ready, const char *msg)
{
	char shape[512], other[512];
	unsigned int n = atomic_load(nslots), slot;

	finding_shape(msg, shape, sizeof(shape));
	for (unsigned int i = 0; i < n && i < max; i++) {
		if (!atomic_load(&ready[i]))
			continue;
		finding_shape(slots + i * len, other, sizeof(other));
		if (!strcmp(shape, other)) {
			atomic_fetch_add(&counts[i], 1);
			return false;
		}
	}
	slot = atomic_fetch_add(nslots, 1);
	if (slot >= max)
		return true;
	snprintf(slots + slot * len, len, "%s", msg);
	atomic_store(&counts[slot], 1);
	atomic_store(&ready[slot], true);
	return true;
}

#endif /* SYNCMEM_SAME_FINDING_H */
