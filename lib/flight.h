/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The payload of a single-flight entry in its key table (see flight.c). */
#ifndef SYNCMEM_FLIGHT_H
#define SYNCMEM_FLIGHT_H

#include <stdint.h>

#include "keytab.h"

/*
 * The done word: the flight's generation (its high 30 bits, one more each
 * time the entry starts a flight) and its state (the low 2 bits). A death
 * guard matches one generation only, so a guard that runs late (its
 * process still going away) never marks the entry's next flight.
 */
#define FLIGHT_RUNNING	0u
#define FLIGHT_DONE	1u
#define FLIGHT_DIED	2u
#define FLIGHT_STATE(done)	((done) & 3u)
#define FLIGHT_GEN(done)	((done) & ~3u)
#define FLIGHT_GEN_ONE	4u

/*
 * Set up before the entry is linked. Whether a flight is joinable is
 * whether its entry is in its chain: no flag of its own.
 */
struct flight {
	uint32_t done;		/* generation | FLIGHT_*: the word followers sleep on */
	int32_t error;		/* the function's negative errno, or 0 */
	uint32_t result_off;	/* pool block holding the result; 0 (free entries): none */
	uint32_t result_len;
	uint32_t leader;	/* the leader's pid (diagnostics) */
	uint32_t reserved[11];
};

_Static_assert(sizeof(struct keytab_entry) + sizeof(struct flight) <= KEYTAB_ENTRY_SIZE,
	       "flight entry");

static inline struct flight *entry_flight(struct keytab_entry *e)
{
	return keytab_payload(e);
}

#endif /* SYNCMEM_FLIGHT_H */
