// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Keys, and the table of entries by key shared by keyed locks and
 * single-flight (see keytab.h).
 *
 * The table is changed only under its own mutex (a struct syncmem_lock in
 * the header), held for a lookup and a few stores, never across a wait:
 * entries are looked up, created and reclaimed under it, and each entry's
 * own synchronization (its fair lock, its flight word) is used after it is
 * dropped. Chains use entry indexes, never pointers, so every process may
 * map the table at its own address.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "keytab.h"
#include "ready.h"

_Static_assert(sizeof(struct syncmem_keytab) == 128, "struct syncmem_keytab layout");
_Static_assert(sizeof(struct keytab_entry) == 128, "keytab entry head");

#define KEYTAB_ALIGN	64u
#define KEYTAB_MAX	(1u << 24)	/* entries */

int syncmem_key_build(void *buf, size_t cap, const struct syncmem_key_part *parts,
		      unsigned int nparts)
{
	uint8_t *out = buf;
	size_t len = 0;

	if (!buf || (!parts && nparts))
		return -EINVAL;
	if (cap > SYNCMEM_KEY_MAX)
		cap = SYNCMEM_KEY_MAX;
	for (unsigned int i = 0; i < nparts; i++) {
		size_t n = parts[i].len;

		if (n && !parts[i].data)
			return -EINVAL;
		/* Each part: its length (2 bytes, little-endian), its bytes. */
		if (n > 0xffff || cap - len < 2 || cap - len - 2 < n)
			return -E2BIG;
		out[len] = (uint8_t)n;
		out[len + 1] = (uint8_t)(n >> 8);
		if (n)
			memcpy(out + len + 2, parts[i].data, n);
		len += 2 + n;
	}
	return (int)len;
}

int syncmem__key_check(const void *key, size_t len)
{
	if (!key || !len)
		return -EINVAL;
	return len > SYNCMEM_KEY_MAX ? -E2BIG : 0;
}

/* FNV-1a, 32 bits. */
uint32_t syncmem__key_hash(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint32_t h = 2166136261u;

	while (len--) {
		h ^= *p++;
		h *= 16777619u;
	}
	return h;
}

static uint32_t buckets_for(uint32_t nentries)
{
	uint32_t n = 1;

	while (n < nentries)
		n <<= 1;
	return n;
}

static int keytab_geometry(uint32_t nentries, uint32_t *nbuckets, uint64_t *buckets_off,
			   uint64_t *entries_off, uint64_t *footprint)
{
	if (!nentries || nentries > KEYTAB_MAX)
		return -EINVAL;
	*nbuckets = buckets_for(nentries);
	*buckets_off = sizeof(struct syncmem_keytab);
	*entries_off = (*buckets_off + (uint64_t)*nbuckets * 4 + KEYTAB_ALIGN - 1) &
		       ~(uint64_t)(KEYTAB_ALIGN - 1);
	*footprint = *entries_off + (uint64_t)nentries * KEYTAB_ENTRY_SIZE;
	return 0;
}

size_t syncmem__keytab_footprint(uint32_t nentries)
{
	uint64_t boff, eoff, footprint;
	uint32_t nb;

	return keytab_geometry(nentries, &nb, &boff, &eoff, &footprint) ? 0 : footprint;
}

static uint32_t *keytab_buckets(struct syncmem_keytab *t)
{
	return (uint32_t *)((char *)t + t->buckets_off);
}

static struct keytab_entry *keytab_entry(struct syncmem_keytab *t, uint32_t idx)
{
	return (struct keytab_entry *)((char *)t + t->entries_off +
				       (size_t)idx * KEYTAB_ENTRY_SIZE);
}

static uint32_t keytab_index(struct syncmem_keytab *t, struct keytab_entry *e)
{
	return (uint32_t)(((char *)e - ((char *)t + t->entries_off)) / KEYTAB_ENTRY_SIZE);
}

int syncmem__keytab_init(void *mem, size_t len, uint32_t nentries, uint32_t magic,
			 uint64_t aux, struct syncmem_keytab **out)
{
	struct syncmem_keytab *t = mem;
	uint64_t boff, eoff, footprint;
	uint32_t nb;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (KEYTAB_ALIGN - 1)))
		return -EINVAL;
	err = keytab_geometry(nentries, &nb, &boff, &eoff, &footprint);
	if (err)
		return err;
	if (len < footprint)
		return -EINVAL;
	err = syncmem__ready_claim(&t->state);
	if (err)
		return err;
	t->version = SYNCMEM_KEYTAB_VERSION;
	t->nentries = nentries;
	t->nbuckets = nb;
	t->entry_size = KEYTAB_ENTRY_SIZE;
	t->buckets_off = (uint32_t)boff;
	t->entries_off = (uint32_t)eoff;
	t->footprint = footprint;
	t->used = 0;
	t->aux = aux;
	memset(t->reserved, 0, sizeof(t->reserved));
	syncmem_lock_init(&t->lock, 0);
	memset(keytab_buckets(t), 0, (size_t)nb * 4);
	for (uint32_t i = 0; i < nentries; i++) {
		struct keytab_entry *e = keytab_entry(t, i);

		memset(e, 0, KEYTAB_ENTRY_SIZE);
		e->next = i + 1 < nentries ? i + 2 : 0;
	}
	t->free_head = 1;
	t->magic = magic;
	syncmem__ready_publish(&t->state);
	*out = t;
	return 0;
}

int syncmem__keytab_attach(void *mem, size_t len, uint32_t magic,
			   struct syncmem_keytab **out)
{
	struct syncmem_keytab *t = mem;
	uint64_t boff, eoff, footprint;
	uint32_t nb;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (KEYTAB_ALIGN - 1)) || len < sizeof(*t))
		return -EINVAL;
	err = syncmem__ready_wait(&t->state, KEYTAB_ATTACH_WAIT_MS);
	if (err)
		return err;
	if (t->magic != magic || t->version != SYNCMEM_KEYTAB_VERSION ||
	    keytab_geometry(t->nentries, &nb, &boff, &eoff, &footprint) ||
	    nb != t->nbuckets || boff != t->buckets_off || eoff != t->entries_off ||
	    footprint != t->footprint || t->entry_size != KEYTAB_ENTRY_SIZE)
		return -EPROTO;
	if (len < footprint)
		return -EINVAL;
	*out = t;
	return 0;
}

int syncmem__keytab_lock(struct syncmem_region *r, struct syncmem_keytab *t)
{
	return syncmem_lock(r, &t->lock);
}

void syncmem__keytab_unlock(struct syncmem_region *r, struct syncmem_keytab *t)
{
	syncmem_unlock(r, &t->lock);
}

struct keytab_entry *syncmem__keytab_find(struct syncmem_keytab *t, const void *key,
					  size_t len, uint32_t hash)
{
	uint32_t i = keytab_buckets(t)[hash & (t->nbuckets - 1)];

	/* Bounded by nentries even if the shared memory was scribbled on. */
	for (uint32_t steps = 0; i && i <= t->nentries && steps < t->nentries; steps++) {
		struct keytab_entry *e = keytab_entry(t, i - 1);

		if (e->hash == hash && e->key_len == len && !memcmp(e->key, key, len))
			return e;
		i = e->next;
	}
	return NULL;
}

struct keytab_entry *syncmem__keytab_insert(struct syncmem_keytab *t, const void *key,
					    size_t len, uint32_t hash)
{
	uint32_t *bucket = &keytab_buckets(t)[hash & (t->nbuckets - 1)];
	struct keytab_entry *e;
	uint32_t i = t->free_head;

	if (!i || i > t->nentries)
		return NULL;
	e = keytab_entry(t, i - 1);
	t->free_head = e->next;
	memset(e, 0, KEYTAB_ENTRY_SIZE);
	e->hash = hash;
	e->key_len = (uint32_t)len;
	memcpy(e->key, key, len);
	e->next = *bucket;
	*bucket = i;
	t->used++;
	return e;
}

void syncmem__keytab_unlink(struct syncmem_keytab *t, struct keytab_entry *e)
{
	uint32_t *link = &keytab_buckets(t)[e->hash & (t->nbuckets - 1)];
	uint32_t want = keytab_index(t, e) + 1;

	for (uint32_t steps = 0; *link && steps < t->nentries; steps++) {
		if (*link == want) {
			*link = e->next;
			e->next = 0;
			return;
		}
		link = &keytab_entry(t, *link - 1)->next;
	}
}

void syncmem__keytab_free(struct syncmem_keytab *t, struct keytab_entry *e)
{
	e->key_len = 0;
	e->refs = 0;
	e->next = t->free_head;
	t->free_head = keytab_index(t, e) + 1;
	t->used--;
}
