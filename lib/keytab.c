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

/* One relaxed load: the field may change under us; this copy is what we check. */
static inline uint32_t shared_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static struct keytab_entry *keytab_entry(const struct keytab_view *v, uint32_t idx)
{
	return (struct keytab_entry *)(v->entries + (size_t)idx * KEYTAB_ENTRY_SIZE);
}

static uint32_t keytab_index(const struct keytab_view *v, const struct keytab_entry *e)
{
	return (uint32_t)(((const char *)e - v->entries) / KEYTAB_ENTRY_SIZE);
}

/* The view of a table at @t with @nentries, its geometry already checked. */
static void view_fill(struct keytab_view *v, struct syncmem_keytab *t, uint32_t nentries,
		      uint32_t nbuckets, uint64_t buckets_off, uint64_t entries_off)
{
	v->t = t;
	v->nentries = nentries;
	v->mask = nbuckets - 1;
	v->buckets = (uint32_t *)((char *)t + buckets_off);
	v->entries = (char *)t + entries_off;
}

int syncmem__keytab_init(void *mem, size_t len, uint32_t nentries, uint32_t magic,
			 uint64_t aux, struct syncmem_keytab **out)
{
	struct syncmem_keytab *t = mem;
	uint64_t boff, eoff, footprint;
	struct keytab_view v;
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
	err = syncmem__ready_claim(&t->state, &t->builder);
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
	syncmem_lock_init(&t->lock, 0);
	view_fill(&v, t, nentries, nb, boff, eoff);
	memset(v.buckets, 0, (size_t)nb * 4);
	for (uint32_t i = 0; i < nentries; i++) {
		struct keytab_entry *e = keytab_entry(&v, i);

		memset(e, 0, KEYTAB_ENTRY_SIZE);
		e->next = i + 1 < nentries ? i + 2 : 0;
	}
	t->free_head = 1;
	t->magic = magic;
	syncmem__ready_publish(&t->state);
	*out = t;
	return 0;
}

/*
 * The geometry of the ready table @t, from one read of its entry count,
 * checked against every stored field: 0, or -EPROTO.
 */
static int keytab_check(struct syncmem_keytab *t, uint32_t *nentries, uint32_t *nb,
			uint64_t *boff, uint64_t *eoff, uint64_t *footprint)
{
	*nentries = shared_u32(&t->nentries);
	if (shared_u32(&t->version) != SYNCMEM_KEYTAB_VERSION ||
	    keytab_geometry(*nentries, nb, boff, eoff, footprint) ||
	    shared_u32(&t->nbuckets) != *nb || shared_u32(&t->buckets_off) != *boff ||
	    shared_u32(&t->entries_off) != *eoff ||
	    __atomic_load_n(&t->footprint, __ATOMIC_RELAXED) != *footprint ||
	    shared_u32(&t->entry_size) != KEYTAB_ENTRY_SIZE)
		return -EPROTO;
	return 0;
}

int syncmem__keytab_attach(void *mem, size_t len, uint32_t magic,
			   struct syncmem_keytab **out)
{
	struct syncmem_keytab *t = mem;
	uint64_t boff, eoff, footprint;
	uint32_t nb, n;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (KEYTAB_ALIGN - 1)) || len < sizeof(*t))
		return -EINVAL;
	err = syncmem__ready_wait(&t->state, &t->builder, KEYTAB_ATTACH_WAIT_MS);
	if (err)
		return err;
	if (shared_u32(&t->magic) != magic || keytab_check(t, &n, &nb, &boff, &eoff, &footprint))
		return -EPROTO;
	if (len < footprint)
		return -EINVAL;
	*out = t;
	return 0;
}

int syncmem__keytab_view(struct syncmem_region *r, struct syncmem_keytab *t, uint32_t magic,
			 struct keytab_view *v)
{
	uint64_t boff, eoff, footprint;
	uint32_t nb, n;
	__u64 off;

	/* The header inside the region before any of its fields is read. */
	if (syncmem__object_offset(r, t, sizeof(*t), KEYTAB_ALIGN, &off) ||
	    shared_u32(&t->magic) != magic)
		return -EINVAL;
	if (r->rdonly)
		return -EBADF;
	/* Acquire: pairs with the creator's publish, for the fields below. */
	if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != SYNCMEM__READY ||
	    keytab_check(t, &n, &nb, &boff, &eoff, &footprint) || r->size - off < footprint)
		return -EUCLEAN;
	view_fill(v, t, n, nb, boff, eoff);
	return 0;
}

/*
 * The table lock is held for a few loads and stores, never across a wait:
 * one that stays held this long has a dead or hostile holder, and the
 * table is reported broken rather than waited for without end.
 */
#define KEYTAB_LOCK_MAX_NS	(10 * 1000000000LL)

int syncmem__keytab_lock(struct syncmem_region *r, const struct keytab_view *v,
			 int64_t timeout_ns)
{
	int64_t wait = timeout_ns < 0 || timeout_ns > KEYTAB_LOCK_MAX_NS ?
		       KEYTAB_LOCK_MAX_NS : timeout_ns;
	int ret = syncmem_lock_timed(r, &v->t->lock, wait);

	/*
	 * Its holder died: the table is only ever changed by a few stores,
	 * and every reader bounds and checks what it reads, so a change left
	 * half-done is at worst reported as -EUCLEAN. Use it as it is.
	 */
	if (ret == -EOWNERDEAD)
		ret = syncmem_lock_consistent(r, &v->t->lock);
	return ret == -ETIMEDOUT && wait == KEYTAB_LOCK_MAX_NS ? -EUCLEAN : ret;
}

void syncmem__keytab_unlock(struct syncmem_region *r, const struct keytab_view *v)
{
	syncmem_unlock(r, &v->t->lock);
}

/* The entry of index + 1 @i read from the table, or NULL when out of bounds. */
static struct keytab_entry *entry_at(const struct keytab_view *v, uint32_t i)
{
	return i && i <= v->nentries ? keytab_entry(v, i - 1) : NULL;
}

int syncmem__keytab_find(const struct keytab_view *v, const void *key, size_t len,
			 uint32_t hash, struct keytab_entry **out)
{
	uint32_t i = shared_u32(&v->buckets[hash & v->mask]);

	*out = NULL;
	/* A chain longer than the table has a cycle. */
	for (uint32_t steps = 0; i; steps++) {
		struct keytab_entry *e = entry_at(v, i);
		uint32_t key_len;

		if (!e || steps == v->nentries)
			return -EUCLEAN;
		key_len = shared_u32(&e->key_len);
		if (key_len > SYNCMEM_KEY_MAX)
			return -EUCLEAN;
		/* @len is at most SYNCMEM_KEY_MAX: the compare stays in the key. */
		if (shared_u32(&e->hash) == hash && key_len == len && !memcmp(e->key, key, len)) {
			*out = e;
			return 0;
		}
		i = shared_u32(&e->next);
	}
	return 0;
}

int syncmem__keytab_insert(const struct keytab_view *v, const void *key, size_t len,
			   uint32_t hash, struct keytab_entry **out)
{
	uint32_t *bucket = &v->buckets[hash & v->mask];
	uint32_t i = shared_u32(&v->t->free_head), next;
	struct keytab_entry *e;

	*out = NULL;
	if (!i)
		return -ENOSPC;
	e = entry_at(v, i);
	if (!e)
		return -EUCLEAN;
	next = shared_u32(&e->next);
	if (next > v->nentries)
		return -EUCLEAN;
	v->t->free_head = next;
	/*
	 * The head only: the payload is its user's to set up. A keyed lock's
	 * word may still be held, or waited on, by a locker that looked the
	 * entry up before it was freed; wiping it would strand its waiters.
	 */
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->key_len = (uint32_t)len;
	memcpy(e->key, key, len);
	e->next = shared_u32(bucket);
	*bucket = i;
	v->t->used++;
	*out = e;
	return 0;
}

int syncmem__keytab_unlink(const struct keytab_view *v, struct keytab_entry *e)
{
	uint32_t *link = &v->buckets[shared_u32(&e->hash) & v->mask];
	uint32_t want = keytab_index(v, e) + 1;

	for (uint32_t steps = 0; steps < v->nentries; steps++) {
		uint32_t i = shared_u32(link);

		if (i == want) {
			*link = e->next;
			e->next = 0;
			return 0;
		}
		/* The end of the chain without @e, or a link out of bounds. */
		if (!entry_at(v, i))
			return -EUCLEAN;
		link = &entry_at(v, i)->next;
	}
	return -EUCLEAN;
}

void syncmem__keytab_free(const struct keytab_view *v, struct keytab_entry *e)
{
	e->key_len = 0;
	__atomic_store_n(&e->refs, 0, __ATOMIC_RELAXED);
	e->next = v->t->free_head;
	v->t->free_head = keytab_index(v, e) + 1;
	v->t->used--;
}

/*
 * Counts change atomically: a count taken with syncmem__count_arm() is
 * taken back by the kernel at any moment if its process dies.
 */
int syncmem__keytab_get(struct keytab_entry *e)
{
	uint32_t refs = __atomic_load_n(&e->refs, __ATOMIC_RELAXED), failed = 0;

	do {
		if (refs == UINT32_MAX || syncmem__too_many(&failed))
			return -EUCLEAN;
	} while (!__atomic_compare_exchange_n(&e->refs, &refs, refs + 1, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 0;
}

int syncmem__keytab_put(struct keytab_entry *e)
{
	uint32_t refs = __atomic_load_n(&e->refs, __ATOMIC_RELAXED), failed = 0;

	do {
		if (!refs || syncmem__too_many(&failed))
			return -EUCLEAN;
	} while (!__atomic_compare_exchange_n(&e->refs, &refs, refs - 1, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return refs == 1;
}
