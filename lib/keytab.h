/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A table of entries by key in shared memory (keyed locks, single-flight):
 * the struct syncmem_keytab header, a power-of-two array of bucket heads and
 * fixed-size entries, chained by index. Entries never move, so a word inside
 * one can be waited on. Every function here except the table lock itself
 * runs with the table lock held.
 */
#ifndef SYNCMEM_KEYTAB_H
#define SYNCMEM_KEYTAB_H

#include "internal.h"

/* The first 128 bytes of every entry. */
struct keytab_entry {
	uint32_t refs;		/* callers holding or waiting for the entry */
	uint32_t next;		/* index + 1 in its chain or the free list */
	uint32_t hash;
	uint32_t key_len;	/* 0: free */
	uint8_t key[SYNCMEM_KEY_MAX];
};

#define KEYTAB_ENTRY_SIZE	192u	/* head + one 64-byte payload line */

/* Longest wait for a table still being built by its creator. */
#define KEYTAB_ATTACH_WAIT_MS	10000

size_t syncmem__keytab_footprint(uint32_t nentries);
int syncmem__keytab_init(void *mem, size_t len, uint32_t nentries, uint32_t magic,
			 uint64_t aux, struct syncmem_keytab **out);
int syncmem__keytab_attach(void *mem, size_t len, uint32_t magic,
			   struct syncmem_keytab **out);

/* 0 for a usable key, -EINVAL (empty, NULL) or -E2BIG. */
int syncmem__key_check(const void *key, size_t len);
uint32_t syncmem__key_hash(const void *key, size_t len);

int syncmem__keytab_lock(struct syncmem_region *r, struct syncmem_keytab *t);
void syncmem__keytab_unlock(struct syncmem_region *r, struct syncmem_keytab *t);

/* The payload after the 128-byte head. */
static inline void *keytab_payload(struct keytab_entry *e)
{
	return (char *)e + sizeof(*e);
}

/* Entry lookup in the chain of @hash; NULL when absent. */
struct keytab_entry *syncmem__keytab_find(struct syncmem_keytab *t, const void *key,
					  size_t len, uint32_t hash);
/* A free entry holding @key, linked into its chain, refs 0; NULL when full. */
struct keytab_entry *syncmem__keytab_insert(struct syncmem_keytab *t, const void *key,
					    size_t len, uint32_t hash);
/* Take @e out of its chain: later lookups miss it. */
void syncmem__keytab_unlink(struct syncmem_keytab *t, struct keytab_entry *e);
/* Give an unlinked @e back to the free list. */
void syncmem__keytab_free(struct syncmem_keytab *t, struct keytab_entry *e);

#endif /* SYNCMEM_KEYTAB_H */
