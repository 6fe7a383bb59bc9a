// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed-lock and single-flight tables against hostile peers: another
 * process may write anything into a table (header, buckets, entries) or
 * into a flight's result at any moment. Calls must stay inside the region,
 * return, and answer a documented result: -EUCLEAN for values this library
 * never writes. The region (a keyed table, a flight table, the flight's
 * result pool at the very end) lies between guard pages; each victim runs
 * in a child whose exit status says how it ended.
 *
 * No kernel here (hostile.h's stand-in region): a flight leader cannot arm
 * its death guard (-ENODEV), so flights are set up in the table directly,
 * the way a peer could.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "flight.h"
#include "hostile.h"
#include "pool.h"
#include "syncmem.h"

#define ENTRIES		8
#define BLOCK		256
#define BLOCKS		4
#define CAP		8192	/* the callers' result buffers */

struct tables {
	struct syncmem_region r;
	struct guarded g;
	struct syncmem_keyed *k;
	struct syncmem_flight *f;
	struct syncmem_pool *pool;
};

/* Keyed table, flight table, pool: one after the other, the pool last. */
static int tables_new(struct tables *t)
{
	size_t klen = syncmem_keyed_footprint(ENTRIES), flen = syncmem_flight_footprint(ENTRIES);
	size_t plen = syncmem_pool_footprint(BLOCK, BLOCKS);

	if (guarded_map(klen + flen + plen, &t->g))
		return -1;
	if (stand_in_region(&t->r, t->g.mem, t->g.len, false) ||
	    syncmem_keyed_init(t->g.mem, klen, ENTRIES, &t->k) ||
	    syncmem_pool_init(t->g.mem + klen + flen, plen, BLOCK, BLOCKS, &t->pool) ||
	    syncmem_flight_init(&t->r, t->g.mem + klen, flen, ENTRIES, t->pool, &t->f))
		return -1;
	return 0;
}

static void tables_free(struct tables *t)
{
	syncmem_pool_detach(t->pool);
	close(t->r.fd);
	guarded_unmap(&t->g);
}

static struct keytab_view view_of(struct tables *t, struct syncmem_keytab *tab, uint32_t magic)
{
	struct keytab_view v = { 0 };

	syncmem__keytab_view(&t->r, tab, magic, &v);
	return v;
}

/* Some key of bucket @b other than @not (a key is "k" and a number). */
static int key_in_bucket(uint32_t b, int not, char *key)
{
	for (int n = 0;; n++) {
		int len = sprintf(key, "k%d", n);

		if (n != not && (syncmem__key_hash(key, len) & (ENTRIES - 1)) == b)
			return len;
	}
}

/* ---- Edits of a keyed table's header and entries ----------------------- */

struct keyed_case {
	const char *what;
	void (*apply)(struct tables *t);
	int expect;		/* what locking a new key answers */
	int unlock;		/* what unlocking it answers */
};

static void k_nentries_huge(struct tables *t)
{
	/* A valid geometry, but far larger than the region. */
	struct syncmem_keytab *h = &t->k->t;

	h->nentries = 1u << 24;
	h->nbuckets = 1u << 24;
	h->entries_off = 128 + (8u << 24) + 16 * 64;	/* buckets, stripes */
	h->footprint = h->entries_off + (192ull << 24);
}

static void k_buckets_moved(struct tables *t)
{
	t->k->t.buckets_off = 0x7ff00000;
}

static void k_entries_moved(struct tables *t)
{
	t->k->t.entries_off = 0x7ff00000;
}

static void k_free_head_huge(struct tables *t)
{
	t->k->t.free_head = 0x10000;
}

static void k_bucket_heads_huge(struct tables *t)
{
	struct keytab_view v = view_of(t, &t->k->t, SYNCMEM_KEYED_MAGIC);

	for (uint32_t b = 0; b <= v.mask; b++)
		v.buckets[b] = 0x10000 + b;
}

/* Every key has one holder; the entries of its bucket chain in a cycle. */
static void k_chain_cycle(struct tables *t)
{
	struct keytab_view v = view_of(t, &t->k->t, SYNCMEM_KEYED_MAGIC);

	for (uint32_t i = 0; i < v.nentries; i++) {
		struct keytab_entry *e = (void *)(v.entries + i * KEYTAB_ENTRY_SIZE);

		e->key_len = 3;
		e->next = i + 1;	/* itself */
	}
	for (uint32_t b = 0; b <= v.mask; b++)
		v.buckets[b] = b + 1;
}

static void k_key_len_huge(struct tables *t)
{
	struct keytab_view v = view_of(t, &t->k->t, SYNCMEM_KEYED_MAGIC);

	for (uint32_t i = 0; i < v.nentries; i++)
		((struct keytab_entry *)(v.entries + i * KEYTAB_ENTRY_SIZE))->key_len = 1u << 20;
	for (uint32_t b = 0; b <= v.mask; b++)
		v.buckets[b] = b + 1;
}

static void k_state_reset(struct tables *t)
{
	t->k->t.state = 0x494e4954u;	/* "being built" */
}

static const struct keyed_case keyed_cases[] = {
	{ "entry count far beyond the region", k_nentries_huge, -EUCLEAN, -EUCLEAN },
	{ "buckets moved out of the region", k_buckets_moved, -EUCLEAN, -EUCLEAN },
	{ "entries moved out of the region", k_entries_moved, -EUCLEAN, -EUCLEAN },
	/* Nothing to find, so nothing held: unlocking is -EPERM. */
	{ "free list head out of bounds", k_free_head_huge, -EUCLEAN, -EPERM },
	{ "bucket heads out of bounds", k_bucket_heads_huge, -EUCLEAN, -EUCLEAN },
	{ "a chain that loops", k_chain_cycle, -EUCLEAN, -EUCLEAN },
	{ "key lengths beyond the key", k_key_len_huge, -EUCLEAN, -EUCLEAN },
	{ "a table being built again", k_state_reset, -EUCLEAN, -EUCLEAN },
};

struct case_arg {
	struct tables *t;
	const void *c;
};

/* Run @victim on fresh tables (case @c) in a child: its exit status. */
static int on_fresh_tables(int (*victim)(void *arg), const void *c)
{
	struct tables t;
	struct case_arg a = { &t, c };
	int ret;

	if (tables_new(&t))
		return -1;
	/* Sound before the victim starts. */
	if (syncmem_keyed_trylock(&t.r, t.k, "held", 4) ||
	    syncmem_keyed_unlock(&t.r, t.k, "held", 4))
		return -2;
	ret = run_victim(victim, &a, 20);
	tables_free(&t);
	return ret;
}

static int keyed_victim(void *arg)
{
	struct case_arg *a = arg;
	const struct keyed_case *c = a->c;
	struct tables *t = a->t;

	c->apply(t);
	if (syncmem_keyed_trylock(&t->r, t->k, "fresh", 5) != c->expect)
		return 1;
	if (syncmem_keyed_lock(&t->r, t->k, "fresh", 5, 1000000) != c->expect)
		return 2;
	if (syncmem_keyed_unlock(&t->r, t->k, "fresh", 5) != c->unlock)
		return 3;
	return 0;
}

TEST(keyed_table_edits_stay_inside_the_region)
{
	for (size_t i = 0; i < sizeof(keyed_cases) / sizeof(keyed_cases[0]); i++) {
		EXPECT_EQ(0, on_fresh_tables(keyed_victim, &keyed_cases[i])) {
			TH_LOG("%s", keyed_cases[i].what);
		}
	}
}

/*
 * An entry whose lock word a peer zeroed under its holder: the unlock says
 * the caller does not hold it, the entry (now unused) goes at the next
 * full-table sweep or lock of its key, and the chain still works.
 */
static int zeroed_word_victim(void *arg)
{
	struct case_arg *a = arg;
	struct tables *t = a->t;
	struct keytab_view v = view_of(t, &t->k->t, SYNCMEM_KEYED_MAGIC);
	struct keytab_entry *e;
	struct keytab_key k;
	char other[16];
	int len;

	if (syncmem_keyed_trylock(&t->r, t->k, "k0", 2))
		return 1;
	syncmem__keytab_key(&k, "k0", 2);
	if (syncmem__keytab_find(&v, &k, &e) || !e)
		return 2;
	((struct syncmem_lock *)keytab_payload(e))->word = 0;
	if (syncmem_keyed_unlock(&t->r, t->k, "k0", 2) != -EPERM)
		return 3;
	/* Another key of the same bucket walks past it. */
	len = key_in_bucket(e->hash & v.mask, 0, other);
	if (syncmem_keyed_trylock(&t->r, t->k, other, len) ||
	    syncmem_keyed_unlock(&t->r, t->k, other, len))
		return 4;
	/* The key itself works and nobody holds it after use. */
	if (syncmem_keyed_trylock(&t->r, t->k, "k0", 2) ||
	    syncmem_keyed_unlock(&t->r, t->k, "k0", 2) || syncmem_keyed_held(&t->r, t->k))
		return 5;
	return 0;
}

TEST(keyed_entries_live_by_their_lock_word)
{
	EXPECT_EQ(0, on_fresh_tables(zeroed_word_victim, NULL));
}

/* ---- Flights a peer set up or damaged ----------------------------------- */

/*
 * A flight of key "job" that another process leads, as it lies in the
 * table: one count (the leader's), linked, its result block taken.
 */
static struct flight *planted_flight(struct tables *t)
{
	struct keytab_view v = view_of(t, &t->f->t, SYNCMEM_FLIGHT_MAGIC);
	struct keytab_entry *e;
	struct keytab_key k;
	struct flight *fl;
	uint32_t block = syncmem_pool_alloc(t->pool);

	syncmem__keytab_key(&k, "job", 3);
	if (!block || syncmem__keytab_insert(&v, &k, &e))
		return NULL;
	e->refs = 1;
	fl = entry_flight(e);
	*fl = (struct flight){ .result_off = block, .done = FLIGHT_DONE };
	memcpy(syncmem_pool_ptr(t->pool, block), "result", 6);
	fl->result_len = 6;
	return fl;
}

struct flight_case {
	const char *what;
	void (*apply)(struct tables *t, struct flight *fl);
	int expect;		/* what syncmem_flight_do() of "job" answers */
};

static int never_runs(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	(void)out;
	(void)cap;
	(void)len;
	_exit(90);
}

static void f_untouched(struct tables *t, struct flight *fl)
{
	(void)t;
	(void)fl;
}

static void f_result_past_the_block(struct tables *t, struct flight *fl)
{
	(void)t;
	fl->result_len = 5000;	/* the block is the pool's last: beyond is the guard */
	fl->result_off = (uint32_t)syncmem_pool_footprint(BLOCK, BLOCKS) - BLOCK;
}

static void f_result_not_a_block(struct tables *t, struct flight *fl)
{
	(void)t;
	fl->result_off = 12;	/* inside the pool's header */
}

static void f_positive_error(struct tables *t, struct flight *fl)
{
	(void)t;
	fl->error = 5;
}

static void f_error_too_large(struct tables *t, struct flight *fl)
{
	(void)t;
	fl->error = -100000;
}

static void f_done_unknown(struct tables *t, struct flight *fl)
{
	(void)t;
	fl->done = 7;
}

static void f_pool_moved_out(struct tables *t, struct flight *fl)
{
	(void)fl;
	t->f->t.aux = 1ull << 40;
}

static void f_pool_is_not_a_pool(struct tables *t, struct flight *fl)
{
	(void)fl;
	t->f->t.aux = 0;	/* the keyed table */
}

static void f_table_header(struct tables *t, struct flight *fl)
{
	(void)fl;
	t->f->t.entries_off = 0x10000;
}

static const struct flight_case flight_cases[] = {
	{ "a sound flight", f_untouched, 6 },
	{ "a result running past its block", f_result_past_the_block, -EUCLEAN },
	{ "a result that is not in a block", f_result_not_a_block, -EUCLEAN },
	{ "a positive error", f_positive_error, -EUCLEAN },
	{ "an error beyond the errnos", f_error_too_large, -EUCLEAN },
	{ "a done word no flight holds", f_done_unknown, -EUCLEAN },
	{ "the result pool moved out of the region", f_pool_moved_out, -EUCLEAN },
	{ "the result pool replaced by something else", f_pool_is_not_a_pool, -EUCLEAN },
	{ "the table's geometry", f_table_header, -EUCLEAN },
};

static int flight_victim(void *arg)
{
	struct case_arg *a = arg;
	const struct flight_case *c = a->c;
	struct tables *t = a->t;
	struct flight *fl = planted_flight(t);
	static char out[CAP];
	int ret;

	if (!fl)
		return 1;
	c->apply(t, fl);
	ret = syncmem_flight_do(&t->r, t->f, "job", 3, never_runs, NULL, out, sizeof(out));
	if (ret != c->expect) {
		printf("# got %d\n", ret);
		fflush(stdout);
		return 2;
	}
	if (ret > 0 && memcmp(out, "result", 6))
		return 3;
	return 0;
}

TEST(flight_results_are_bounded_before_use)
{
	for (size_t i = 0; i < sizeof(flight_cases) / sizeof(flight_cases[0]); i++) {
		EXPECT_EQ(0, on_fresh_tables(flight_victim, &flight_cases[i])) {
			TH_LOG("%s", flight_cases[i].what);
		}
	}
}

/* A follower whose waits keep finding the done word changed gives up. */
static int follower_victim(void *arg)
{
	struct case_arg *a = arg;
	struct tables *t = a->t;
	struct flight *fl = planted_flight(t);
	char out[16];

	if (!fl)
		return 1;
	fl->done = FLIGHT_RUNNING;
	if (every_wait_finds_the_word_changed())
		return 2;
	if (syncmem_flight_do(&t->r, t->f, "job", 3, never_runs, NULL, out, sizeof(out)) !=
	    -EUCLEAN)
		return 3;
	return 0;
}

TEST(a_follower_cannot_be_kept_looping)
{
	EXPECT_EQ(0, on_fresh_tables(follower_victim, NULL));
}

/* ---- A scribbler over both tables ---------------------------------------- */

static bool keyed_documented(int ret)
{
	switch (ret) {
	case 0:
	case -ETIMEDOUT:
	case -EBUSY:
	case -EPERM:
	case -EDEADLK:
	case -ENOSPC:
	case -EUCLEAN:
	case -EINVAL:	/* the magic no longer says "keyed table" */
	case -ENOTTY:	/* a wait or wake: the stand-in region has no kernel */
		return true;
	}
	return false;
}

static bool flight_documented(int ret)
{
	switch (ret) {
	case -ENODEV:	/* a leader: no kernel for its death guard */
	case -ENOMEM:
	case -ENOSPC:
	case -EOWNERDEAD:
	case -EMSGSIZE:
	case -EDEADLK:
	case -EUCLEAN:
	case -EINVAL:
	case -ENOTTY:
		return true;
	}
	/* A length, or the error a leader reported: any negative errno. */
	return ret >= -4095 && ret <= CAP;
}

static int scribbled_victim(void *arg)
{
	struct case_arg *a = arg;
	struct tables *t = a->t;
	double end = hostile_now() + 2.0;
	unsigned long calls = 0, euclean = 0, ok = 0;
	static char out[CAP];

	while (hostile_now() < end) {
		char key[16];
		int len = sprintf(key, "k%lu", calls % 11), ret[6];

		ret[0] = syncmem_keyed_trylock(&t->r, t->k, key, len);
		ret[1] = syncmem_keyed_unlock(&t->r, t->k, key, len);
		ret[2] = syncmem_keyed_lock(&t->r, t->k, key, len, 1000000);
		ret[3] = syncmem_keyed_unlock(&t->r, t->k, key, len);
		ret[4] = syncmem_flight_do(&t->r, t->f, key, len, never_runs, NULL, out,
					   sizeof(out));
		ret[5] = syncmem_flight_do(&t->r, t->f, "job", 3, never_runs, NULL, out,
					   sizeof(out));
		for (int i = 0; i < 6; i++) {
			if (i < 4 ? !keyed_documented(ret[i]) : !flight_documented(ret[i])) {
				printf("# call %d returned %d\n", i, ret[i]);
				fflush(stdout);
				return 10 + i;
			}
			euclean += ret[i] == -EUCLEAN;
			ok += ret[i] >= 0;
		}
		calls += 6;
	}
	printf("# %lu calls: %lu succeeded, %lu -EUCLEAN\n", calls, ok, euclean);
	fflush(stdout);
	return 0;
}

/*
 * Scribblers over the buckets and entries of both tables (past their
 * headers, which would only make every call -EINVAL or -EUCLEAN at once),
 * and over the result pool's header and links, while a process locks keys
 * and joins flights.
 */
TEST(scribbled_tables_never_send_a_call_outside_the_region)
{
	size_t klen = syncmem_keyed_footprint(ENTRIES), head = sizeof(struct syncmem_keytab);
	struct tables t;
	struct case_arg a = { &t, NULL };
	pid_t keyed, flights;

	ASSERT_EQ(0, tables_new(&t));
	ASSERT_NE(NULL, planted_flight(&t));
	keyed = scribbler_start(t.g.mem + head, klen - head, ENTRIES, 0xf11e);
	ASSERT_LT(0, keyed);
	flights = scribbler_start(t.g.mem + klen + head, t.g.len - klen - head - BLOCKS * BLOCK,
				  ENTRIES, 0x5eed);
	ASSERT_LT(0, flights);
	EXPECT_EQ(0, run_victim(scribbled_victim, &a, 20));
	scribbler_stop(keyed);
	scribbler_stop(flights);
	tables_free(&t);
}

/* ---- Read-only memory ----------------------------------------------------- */

static int read_only_victim(void *arg)
{
	struct case_arg *a = arg;
	struct tables *t = a->t;
	char out[16];

	t->r.rdonly = true;
	t->r.lock_words = 0;
	if (mprotect(t->g.map, t->g.map_len, PROT_READ))
		return 1;
	if (syncmem_keyed_trylock(&t->r, t->k, "k", 1) != -EBADF ||
	    syncmem_keyed_lock(&t->r, t->k, "k", 1, 0) != -EBADF ||
	    syncmem_keyed_unlock(&t->r, t->k, "k", 1) != -EBADF)
		return 2;
	if (syncmem_flight_do(&t->r, t->f, "job", 3, never_runs, NULL, out, sizeof(out)) !=
	    -EBADF)
		return 3;
	/* Building a table there cannot work either. */
	if (syncmem_keyed_init(t->g.mem + t->g.len - 2048, 2048, 1, &t->k) != -EBADF)
		return 4;
	return 0;
}

TEST(read_only_memory_is_ebadf_not_sigsegv)
{
	EXPECT_EQ(0, on_fresh_tables(read_only_victim, NULL));
}

TEST_HARNESS_MAIN
