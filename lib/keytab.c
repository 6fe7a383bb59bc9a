// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Keys, and the table of entries by key shared by keyed locks and
 * single-flight (see keytab.h).
 *
 * The locks of a table (keytab.h) are held for a lookup and a few stores,
 * never across a wait: each entry's own synchronization (its fair lock,
 * its flight word) is used after they are dropped. Chains use entry
 * indexes, never pointers, so every process may map the table at its own
 * address.
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
#define KEYTAB_STRIPES_MAX	16u	/* chain locks */

/* A bucket word: index + 1 of its chain's head (low half), the chain's sequence (high). */
#define BUCKET_HEAD(b)	((uint32_t)(b))
#define BUCKET_SEQ(b)	((uint32_t)((b) >> 32))

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

/*
 * A word at a time over the zero-padded key, its length mixed in first
 * (keys that differ only in trailing zero bytes differ in length): a
 * multiply and a fold per word.
 */
static uint32_t key_words_hash(const uint64_t *w, size_t len)
{
	uint64_t h = (uint64_t)len * 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i * 8 < len; i++) {
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

uint32_t syncmem__key_hash(const void *key, size_t len)
{
	struct keytab_key k;

	syncmem__keytab_key(&k, key, len);
	return k.hash;
}

/* The power of two at or above @nentries (at least 1, at most 2^24). */
static inline uint32_t buckets_for(uint32_t nentries)
{
	return nentries <= 1 ? 1 : 1u << (32 - __builtin_clz(nentries - 1));
}

static inline uint32_t stripes_for(uint32_t nbuckets)
{
	return nbuckets < KEYTAB_STRIPES_MAX ? nbuckets : KEYTAB_STRIPES_MAX;
}

/*
 * The layout: the 128-byte header, the bucket words (8 bytes each), the
 * stripe locks (64 bytes each), the entries.
 */
static inline int keytab_geometry(uint32_t nentries, uint32_t *nbuckets, uint64_t *buckets_off,
			   uint64_t *entries_off, uint64_t *footprint)
{
	uint64_t stripes_off;

	if (!nentries || nentries > KEYTAB_MAX)
		return -EINVAL;
	*nbuckets = buckets_for(nentries);
	*buckets_off = sizeof(struct syncmem_keytab);
	stripes_off = (*buckets_off + (uint64_t)*nbuckets * sizeof(uint64_t) + KEYTAB_ALIGN - 1) &
		      ~(uint64_t)(KEYTAB_ALIGN - 1);
	*entries_off = stripes_off + (uint64_t)stripes_for(*nbuckets) * sizeof(struct syncmem_lock);
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
	uint32_t nstripes = stripes_for(nbuckets);

	v->t = t;
	v->nentries = nentries;
	v->mask = nbuckets - 1;
	v->stripe_mask = nstripes - 1;
	v->buckets = (uint64_t *)((char *)t + buckets_off);
	v->entries = (char *)t + entries_off;
	v->stripes = (struct syncmem_lock *)(v->entries - (size_t)nstripes * sizeof(*v->stripes));
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
	memset(v.buckets, 0, (size_t)nb * sizeof(*v.buckets));
	for (uint32_t i = 0; i <= v.stripe_mask; i++)
		syncmem_lock_init(&v.stripes[i], 0);
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
static inline __attribute__((always_inline)) int keytab_check(struct syncmem_keytab *t, uint32_t *nentries, uint32_t *nb,
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
	int err = syncmem__object_offset(r, t, sizeof(*t), KEYTAB_ALIGN, &off);

	if (err)
		return err;
	if (shared_u32(&t->magic) != magic)
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

static int table_lock(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns)
{
	int64_t wait = timeout_ns < 0 || timeout_ns > KEYTAB_LOCK_MAX_NS ?
		       KEYTAB_LOCK_MAX_NS : timeout_ns;
	int ret = syncmem_lock_timed(r, l, wait);

	/*
	 * Its holder died: the table is only ever changed by a few stores,
	 * and every reader bounds and checks what it reads, so a change left
	 * half-done is at worst reported as -EUCLEAN. Use it as it is.
	 */
	if (ret == -EOWNERDEAD)
		ret = syncmem_lock_consistent(r, l);
	/* Made consistent when taken over, so never left not recoverable but by a peer. */
	if (ret == -ENOTRECOVERABLE)
		return -EUCLEAN;
	return ret == -ETIMEDOUT && wait == KEYTAB_LOCK_MAX_NS ? -EUCLEAN : ret;
}

int syncmem__keytab_lock(struct syncmem_region *r, const struct keytab_view *v,
			 int64_t timeout_ns)
{
	return table_lock(r, &v->t->lock, timeout_ns);
}

void syncmem__keytab_unlock(struct syncmem_region *r, const struct keytab_view *v)
{
	syncmem_unlock(r, &v->t->lock);
}

static struct syncmem_lock *stripe_of(const struct keytab_view *v, uint32_t hash)
{
	return &v->stripes[hash & v->mask & v->stripe_mask];
}

int syncmem__keytab_chain_lock(struct syncmem_region *r, const struct keytab_view *v,
			       uint32_t hash, int64_t timeout_ns)
{
	return table_lock(r, stripe_of(v, hash), timeout_ns);
}

void syncmem__keytab_chain_unlock(struct syncmem_region *r, const struct keytab_view *v,
				  uint32_t hash)
{
	syncmem_unlock(r, stripe_of(v, hash));
}

/* The entry of index + 1 @i read from the table, or NULL when out of bounds. */
static struct keytab_entry *entry_at(const struct keytab_view *v, uint32_t i)
{
	return i && i <= v->nentries ? keytab_entry(v, i - 1) : NULL;
}

void syncmem__keytab_key(struct keytab_key *k, const void *key, size_t len)
{
	/* Only the words the key covers are read: zero the last one's tail. */
	k->w[(len - 1) / 8] = 0;
	memcpy(k->w, key, len);
	k->len = (uint32_t)len;
	k->hash = key_words_hash(k->w, len);
}

/*
 * Keys and links are read and written a word at a time with atomic
 * accesses: a lookup that takes no lock may read an entry being reused for
 * another key, and then finds out that its chain changed. The reads are
 * acquires and the writes releases (plain moves on x86): a lookup that
 * reads any store of a change then reads the sequence that change began
 * with, or a later one (syncmem__keytab_unchanged()). Bytes past a key's
 * length are 0.
 */
static inline uint32_t walk_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static bool key_is(const struct keytab_entry *e, const struct keytab_key *k)
{
	const uint64_t *w = (const uint64_t *)e->key;

	if (walk_u32(&e->hash) != k->hash || walk_u32(&e->key_len) != k->len)
		return false;
	for (uint32_t i = 0; i * 8 < k->len; i++)
		if (__atomic_load_n(&w[i], __ATOMIC_ACQUIRE) != k->w[i])
			return false;
	return true;
}

static void key_store(struct keytab_entry *e, const struct keytab_key *k)
{
	uint64_t *w = (uint64_t *)e->key;

	/* Words past the key are 0 in the table (the caller's are not read). */
	for (uint32_t i = 0; i < SYNCMEM_KEY_MAX / 8; i++)
		__atomic_store_n(&w[i], i * 8 < k->len ? k->w[i] : 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->hash, k->hash, __ATOMIC_RELEASE);
	__atomic_store_n(&e->key_len, k->len, __ATOMIC_RELEASE);
}

/* Walk the chain starting at index + 1 @i for @k: 0 (*@out NULL if absent) or -EUCLEAN. */
static int chain_find(const struct keytab_view *v, uint32_t i, const struct keytab_key *k,
		      struct keytab_entry **out)
{
	*out = NULL;
	/* A chain longer than the table has a cycle. */
	for (uint32_t steps = 0; i; steps++) {
		struct keytab_entry *e = entry_at(v, i);

		if (!e || steps == v->nentries)
			return -EUCLEAN;
		if (walk_u32(&e->key_len) > SYNCMEM_KEY_MAX)
			return -EUCLEAN;
		if (key_is(e, k)) {
			*out = e;
			return 0;
		}
		i = walk_u32(&e->next);
	}
	return 0;
}

static uint64_t *bucket_of(const struct keytab_view *v, uint32_t hash)
{
	return syncmem__keytab_bucket(v, hash);
}

int syncmem__keytab_find(const struct keytab_view *v, const struct keytab_key *k,
			 struct keytab_entry **out)
{
	return chain_find(v, BUCKET_HEAD(__atomic_load_n(bucket_of(v, k->hash), __ATOMIC_RELAXED)),
			  k, out);
}

int syncmem__keytab_find_unlocked(const struct keytab_view *v, const struct keytab_key *k,
				  struct keytab_entry **out, uint64_t *snap)
{
	/* Acquire: pairs with the release that ended the chain's last change. */
	uint64_t b = __atomic_load_n(bucket_of(v, k->hash), __ATOMIC_ACQUIRE);

	*out = NULL;
	*snap = b;
	if (BUCKET_SEQ(b) & 1)
		return -EAGAIN;		/* being changed (or its changer died) */
	return chain_find(v, BUCKET_HEAD(b), k, out) ? -EAGAIN : 0;
}

bool syncmem__keytab_unchanged(const struct keytab_view *v, uint32_t hash, uint64_t snap)
{
	/*
	 * After the walk's acquires (no load moves before them), and
	 * sequentially consistent: see chain_begin().
	 */
	return __atomic_load_n(bucket_of(v, hash), __ATOMIC_SEQ_CST) == snap;
}

/*
 * A chain is changed between chain_begin() and chain_end(), its sequence
 * odd meanwhile: a lookup that takes no lock and overlaps the change sees
 * the sequence odd or changed, and looks again under the lock. A sequence
 * left odd by a changer that died is made even by the next lock holder.
 */
static uint32_t chain_begin(uint64_t *b)
{
	uint64_t old = __atomic_load_n(b, __ATOMIC_RELAXED);
	uint32_t seq = BUCKET_SEQ(old) | 1;

	/*
	 * Sequentially consistent: the load of a lock word deciding the
	 * change (syncmem__keytab_unlink_if()) comes after it, and a lookup's
	 * CAS on that word and its check of the sequence are sequentially
	 * consistent too, so either the lookup sees this sequence or the
	 * changer sees its lock word. The change's stores are releases, so a
	 * lookup that reads one also sees this sequence.
	 */
	__atomic_store_n(b, ((uint64_t)seq << 32) | BUCKET_HEAD(old), __ATOMIC_SEQ_CST);
	return seq + 1;
}

static void chain_end(uint64_t *b, uint32_t seq, uint32_t head)
{
	/* Release: the change happens before a lookup that reads this sequence. */
	__atomic_store_n(b, ((uint64_t)seq << 32) | head, __ATOMIC_RELEASE);
}

void syncmem__keytab_settle(const struct keytab_view *v, uint32_t hash)
{
	uint64_t *b = bucket_of(v, hash);

	if (BUCKET_SEQ(__atomic_load_n(b, __ATOMIC_RELAXED)) & 1)
		chain_end(b, chain_begin(b), BUCKET_HEAD(__atomic_load_n(b, __ATOMIC_RELAXED)));
}

int syncmem__keytab_take(const struct keytab_view *v, struct keytab_entry **out)
{
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
	/* Taken before it leaves the list: a taker that dies leaves it marked. */
	__atomic_store_n(&e->key_len, KEYTAB_TAKEN, __ATOMIC_RELEASE);
	__atomic_store_n(&v->t->free_head, next, __ATOMIC_RELAXED);
	__atomic_store_n(&v->t->used, shared_u32(&v->t->used) + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->next, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->refs, 0, __ATOMIC_RELAXED);
	*out = e;
	return 0;
}

void syncmem__keytab_link(const struct keytab_view *v, struct keytab_entry *e,
			  const struct keytab_key *k)
{
	uint64_t *b = bucket_of(v, k->hash);
	uint32_t seq = chain_begin(b);

	/*
	 * The key and the link only: the count and the payload are set up by
	 * the caller before. A keyed lock's word may still be held, or waited
	 * on, by a locker that looked the entry up before it was freed; wiping
	 * it would strand its waiters.
	 */
	key_store(e, k);
	__atomic_store_n(&e->next, BUCKET_HEAD(__atomic_load_n(b, __ATOMIC_RELAXED)),
			 __ATOMIC_RELEASE);
	chain_end(b, seq, keytab_index(v, e) + 1);
}

int syncmem__keytab_insert(const struct keytab_view *v, const struct keytab_key *k,
			   struct keytab_entry **out)
{
	int err = syncmem__keytab_take(v, out);

	if (!err)
		syncmem__keytab_link(v, *out, k);
	return err;
}

int syncmem__keytab_unlink_if(const struct keytab_view *v, struct keytab_entry *e,
			      const uint64_t *word, uint32_t hash)
{
	uint64_t *b = bucket_of(v, hash);
	uint32_t want = keytab_index(v, e) + 1, seq = chain_begin(b);
	uint32_t head = BUCKET_HEAD(__atomic_load_n(b, __ATOMIC_RELAXED));
	uint32_t *link = &head;
	int ret = -EUCLEAN;

	/*
	 * Only an entry of the chain whose lock the caller holds: one being
	 * linked elsewhere may show a new key with its old hash.
	 */
	if (walk_u32(&e->hash) != hash)
		goto out;
	/* Sequentially consistent, after chain_begin(): see there. */
	if (word && __atomic_load_n(word, __ATOMIC_SEQ_CST)) {
		ret = -EBUSY;
		goto out;
	}
	for (uint32_t steps = 0; steps < v->nentries; steps++) {
		uint32_t i = shared_u32(link);
		struct keytab_entry *at = entry_at(v, i);

		if (i == want) {
			/*
			 * @e keeps its link until it is freed: a changer that
			 * dies before chain_end() leaves @e in the chain, its
			 * successors behind it, not a chain cut short.
			 */
			__atomic_store_n(link, shared_u32(&e->next), __ATOMIC_RELEASE);
			ret = 0;
			break;
		}
		/* The end of the chain without @e, or a link out of bounds. */
		if (!at) {
			if (!i)
				ret = -ENOENT;
			break;
		}
		link = &at->next;
	}
out:
	chain_end(b, seq, head);
	return ret;
}

int syncmem__keytab_unlink(const struct keytab_view *v, struct keytab_entry *e)
{
	return syncmem__keytab_unlink_if(v, e, NULL, shared_u32(&e->hash));
}

int syncmem__keytab_linked(const struct keytab_view *v, const struct keytab_entry *e)
{
	uint32_t want = keytab_index(v, e) + 1;
	uint32_t i = BUCKET_HEAD(__atomic_load_n(bucket_of(v, shared_u32(&e->hash)),
						 __ATOMIC_RELAXED));

	/* A chain longer than the table has a cycle. */
	for (uint32_t steps = 0; i; steps++) {
		struct keytab_entry *at = entry_at(v, i);

		if (i == want)
			return 1;
		if (!at || steps == v->nentries)
			return -EUCLEAN;
		i = walk_u32(&at->next);
	}
	return 0;
}

void syncmem__keytab_free(const struct keytab_view *v, struct keytab_entry *e)
{
	__atomic_store_n(&e->key_len, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&e->refs, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&e->next, shared_u32(&v->t->free_head), __ATOMIC_RELEASE);
	__atomic_store_n(&v->t->free_head, keytab_index(v, e) + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->t->used, shared_u32(&v->t->used) - 1, __ATOMIC_RELAXED);
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
