/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The payload of a single-flight entry in its key table (see flight.c). */
#ifndef SYNCMEM_FLIGHT_H
#define SYNCMEM_FLIGHT_H

#include <stdint.h>

#include "keytab.h"

#define FLIGHT_RUNNING	0u
#define FLIGHT_DONE	1u
#define FLIGHT_DIED	2u

struct flight {
	uint32_t done;		/* FLIGHT_*: the word followers sleep on */
	int32_t error;		/* the function's negative errno, or 0 */
	uint32_t result_off;	/* pool block holding the result */
	uint32_t result_len;
	uint32_t leader;	/* the leader's pid (diagnostics) */
	uint32_t linked;	/* in its chain: new callers join it */
	uint32_t reserved[10];
};

_Static_assert(sizeof(struct keytab_entry) + sizeof(struct flight) <= KEYTAB_ENTRY_SIZE,
	       "flight entry");

static inline struct flight *entry_flight(struct keytab_entry *e)
{
	return keytab_payload(e);
}

#endif /* SYNCMEM_FLIGHT_H */
