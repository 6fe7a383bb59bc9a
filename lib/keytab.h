/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A table of entries by key in shared memory (keyed locks, single-flight):
 * the struct syncmem_keytab header, a power-of-two array of bucket words,
 * the chain locks (stripes) and fixed-size entries, chained by index.
 * Entries never move, so a word inside one can be waited on.
 *
 * Two kinds of lock guard a table. The table lock (in the header) guards
 * the free list. A chain is changed under a lock that covers it: its
 * stripe's lock (keyed locks), or the table lock for a table whose every
 * user changes chains under it (single-flight). Lookups may also run with
 * no lock, checked by the bucket's sequence. Lock order: the table lock,
 * then a stripe's.
 */
#ifndef SYNCMEM_KEYTAB_H
#define SYNCMEM_KEYTAB_H

#include "internal.h"

/* The first 128 bytes of every entry. */
struct keytab_entry {
	uint32_t refs;		/* callers holding or waiting for the entry */
	uint32_t next;		/* index + 1 in its chain or the free list */
	uint32_t hash;
	uint32_t key_len;	/* 0: free; KEYTAB_TAKEN; else the key's length */
	uint8_t key[SYNCMEM_KEY_MAX];
};

/*
 * The key length of an entry taken off the free list and not linked yet.
 * Its taker holds the table lock from the take until it links the entry
 * or gives it back, so an entry found so by a holder of that lock was
 * left by a taker that died: that holder frees it (the sweeps do).
 */
#define KEYTAB_TAKEN	UINT32_MAX

/* Does @e hold a key (linked, or unlinked and not freed yet)? */
static inline bool keytab_keyed(const struct keytab_entry *e)
{
	uint32_t len = __atomic_load_n(&e->key_len, __ATOMIC_ACQUIRE);

	return len && len <= SYNCMEM_KEY_MAX;
}

#define KEYTAB_ENTRY_SIZE	192u	/* head + one 64-byte payload line */

/* Longest wait for a table still being built by its creator. */
#define KEYTAB_ATTACH_WAIT_MS	10000

/*
 * What one call uses of a table: the geometry that follows from one read of
 * its entry count, checked to lie inside the region. Every entry index read
 * from the table is bounded by @nentries before use.
 */
struct keytab_view {
	struct syncmem_keytab *t;
	uint32_t nentries;
	uint32_t mask;		/* nbuckets - 1 */
	uint32_t stripe_mask;	/* chain locks - 1 */
	uint64_t *buckets;	/* head index + 1 (low half), sequence (high half) */
	struct syncmem_lock *stripes;
	char *entries;
};

/* A key prepared for lookups: zero-padded to whole words. */
struct keytab_key {
	uint32_t hash;
	uint32_t len;
	uint64_t w[SYNCMEM_KEY_MAX / 8];
};

size_t syncmem__keytab_footprint(uint32_t nentries);
int syncmem__keytab_init(void *mem, size_t len, uint32_t nentries, uint32_t magic,
			 uint64_t aux, struct syncmem_keytab **out);
int syncmem__keytab_attach(void *mem, size_t len, uint32_t magic,
			   struct syncmem_keytab **out);

/*
 * Validate the table @t of kind @magic for a call on @r and fill @v:
 * 0; -ERANGE (not wholly inside @r); -EINVAL (NULL, misaligned, not such a
 * table); -EBADF (@r is read-only);
 * -EUCLEAN (its header holds values this library never writes).
 */
int syncmem__keytab_view(struct syncmem_region *r, struct syncmem_keytab *t, uint32_t magic,
			 struct keytab_view *v);

/* 0 for a usable key, -EINVAL (empty, NULL) or -E2BIG. */
int syncmem__key_check(const void *key, size_t len);
uint32_t syncmem__key_hash(const void *key, size_t len);
/* Prepare the checked key @key of @len bytes. */
void syncmem__keytab_key(struct keytab_key *k, const void *key, size_t len);

/*
 * Take the table lock within @timeout_ns (negative: no timeout of the
 * caller's): 0, SYNCMEM_TIMED_OUT when the caller's timeout passed first,
 * -EUCLEAN when it stayed held ten seconds (a dead or hostile holder), or
 * the mutex's errors.
 */
int syncmem__keytab_lock(struct syncmem_region *r, const struct keytab_view *v,
			 int64_t timeout_ns);
void syncmem__keytab_unlock(struct syncmem_region *r, const struct keytab_view *v);
/* The lock of the chain of @hash: as the table lock. */
int syncmem__keytab_chain_lock(struct syncmem_region *r, const struct keytab_view *v,
			       uint32_t hash, int64_t timeout_ns);
void syncmem__keytab_chain_unlock(struct syncmem_region *r, const struct keytab_view *v,
				  uint32_t hash);

/*
 * Look @k up with no lock: 0 with the entry in *@out (NULL: absent), or
 * -EAGAIN (the chain is being changed, or reads as impossible: look under
 * the chain lock). Whatever was found counts only if
 * syncmem__keytab_unchanged(@snap) says so afterwards.
 */
int syncmem__keytab_find_unlocked(const struct keytab_view *v, const struct keytab_key *k,
				  struct keytab_entry **out, uint64_t *snap);
/* The bucket word of the chain of @hash. */
static inline uint64_t *syncmem__keytab_bucket(const struct keytab_view *v, uint32_t hash)
{
	return &v->buckets[hash & v->mask];
}

/* Did the chain of @hash stay as it was at @snap since? */
bool syncmem__keytab_unchanged(const struct keytab_view *v, uint32_t hash, uint64_t snap);

/* The payload after the 128-byte head. */
static inline void *keytab_payload(struct keytab_entry *e)
{
	return (char *)e + sizeof(*e);
}

/*
 * The functions below run with the lock of the chain (find, link, unlink),
 * or the table lock (take, free), held. Each returns -EUCLEAN when it
 * meets a link, a key length or a count this library never writes (or a
 * chain longer than the table).
 */

/* The entry holding @k in its chain in *@out, NULL when absent. */
int syncmem__keytab_find(const struct keytab_view *v, const struct keytab_key *k,
			 struct keytab_entry **out);
/* A chain left mid-change by a holder of its lock that died is made whole. */
void syncmem__keytab_settle(const struct keytab_view *v, uint32_t hash);
/*
 * Take a free entry, refs 0, off the free list (table lock), marked
 * KEYTAB_TAKEN: -ENOSPC when none. The caller links it or gives it back
 * (syncmem__keytab_free()) before it lets go of the table lock.
 */
int syncmem__keytab_take(const struct keytab_view *v, struct keytab_entry **out);
/* Give the taken entry @e the key @k and link it into its chain. */
void syncmem__keytab_link(const struct keytab_view *v, struct keytab_entry *e,
			  const struct keytab_key *k);
/* Take and link, with both locks held (or the one lock that covers both). */
int syncmem__keytab_insert(const struct keytab_view *v, const struct keytab_key *k,
			   struct keytab_entry **out);
/*
 * Take @e out of its chain: later lookups miss it. 0; -ENOENT when it is
 * not in its chain (taken out already); -EUCLEAN for a chain this library
 * never builds.
 */
int syncmem__keytab_unlink(const struct keytab_view *v, struct keytab_entry *e);
/*
 * Take @e out of the chain of @hash (whose lock the caller holds) unless
 * the word @word (not NULL) is not 0: -EBUSY then; -ENOENT when the chain
 * ends without @e; -EUCLEAN when @e holds another hash or the chain is not
 * one this library builds. A lookup with no lock either sees the change
 * or its CAS on the word is seen here.
 */
int syncmem__keytab_unlink_if(const struct keytab_view *v, struct keytab_entry *e,
			      const uint64_t *word, uint32_t hash);
/* Is @e in its chain (the chain's lock held)? 1, 0, or -EUCLEAN. */
int syncmem__keytab_linked(const struct keytab_view *v, const struct keytab_entry *e);
/* Give an unlinked (or taken) @e back to the free list (table lock). */
void syncmem__keytab_free(const struct keytab_view *v, struct keytab_entry *e);
/* Count one more user of @e (-EUCLEAN at the count's limit). */
int syncmem__keytab_get(struct keytab_entry *e);
/* Count one user less: 1 when it was the last, 0, or -EUCLEAN at zero. */
int syncmem__keytab_put(struct keytab_entry *e);

#endif /* SYNCMEM_KEYTAB_H */
