// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Web Locks across processes: a manager of named locks with shared and
 * exclusive modes, one FIFO queue per name, steal, timeouts and death
 * recovery, living in a region (layout in locks.h).
 *
 * Names and cells. A name that is held, queued for, or used recently has a
 * cell: its fast-path words, its mutex @m, its queue, 16 share slots and
 * its name bytes. Cells hang in hash chains by name; lookups take no lock:
 * a reader reads the cell's @gen (even when stable), compares the name and,
 * after its grant or under @m, checks that @gen did not move. A cell changes
 * name only under the manager's @table lock and its own @m, and only while
 * idle (nothing held, nothing queued), with CLOSED_BUSY set so that no fast
 * path can slip in between the idle check and the change. Idle cells stay
 * named (a cache of recently used names) until a new name needs one: a
 * second-chance clock over the cells picks it.
 *
 * Requests ("reqs"): one 64-byte record per request, pending or held, so
 * that query and recovery read reqs only. Free reqs sit on a tagged
 * lock-free stack; each thread keeps its last one (REQ_CACHED) for its next
 * request, and anyone short of reqs may take a cached one back. A req
 * names its client: the kernel's owner id of its process.
 *
 * Holds. Exclusive: @excl holds the cell's epoch (high half) and the index
 * + 1 of the holder's req (low half). Shared: a process counts its shares
 * of the name in its own slot ({owner word, epoch << 32 | count}, 4 slots
 * per cache line, as in rwlock.c), or, with no slot to be had, in the slow
 * list under @m. A slot is its process's until the process dies; a
 * request that finds none free takes back those of dead processes (under
 * @m), so that processes that come and go do not use them up. The fast
 * paths, which take no lock and make no system call: a shared request
 * adds 1 to its slot's count and then reads @closed and @excl; an
 * exclusive one swaps its req into @excl and then reads
 * @closed, @slots_used and the counts of the slots it names (a claimer sets
 * its slot's bit before the slot ever counts; the bit goes only once the
 * slot is free again). All those accesses are sequentially consistent
 * (the rwlock's handshake): of two racing requests at least one sees the
 * other and takes its claim back. @closed is non-zero whenever anything
 * needs the mutex (a queue, slow shares, a death to report, a change in
 * progress): fast paths then take the slow path, except that slow shares
 * turn away exclusive requests only; a fast release that sees a queue
 * takes @m to consider it.
 *
 * Per-thread caches (only hints: each is checked against the shared
 * state). A thread remembers its recent names by length and first bytes,
 * with their cell, the cell's gen and its process's slot there, so that a
 * request of a recently used name computes no hash and walks no chain; the
 * gen, read before the grant and again after it (sequentially consistent),
 * says whether the cell still has the name. It keeps one free req, and
 * up to HELD_CACHE free handles: a fast request and release call neither
 * malloc() nor free(). A handle released on another thread joins that
 * thread's list. Each fast grant is stamped with the cheapest clock that
 * is not a system call (stamp_now()).
 *
 * Queue and grants (under @m). A request that cannot be granted at once
 * joins the tail of the queue (CLOSED_QUEUE set first, then the holds
 * looked at, so a release either sees the queue or is seen). Whoever makes
 * the head grantable grants it: the head, and every consecutive shared
 * request behind a shared head. A queued exclusive request is granted into
 * @excl; queued shared requests are granted into the slow list (counting a
 * share in another process's slot could not be told done from not done if
 * the granter died between the two; a slow-list grant is one state store).
 * A grant sets the req HELD, then swaps its word to 0 and wakes its waiter
 * if it sleeps: one system call per waiter woken.
 *
 * Waiting and death: every waiter names whom it waits for. A pending req's
 * @word is an owner word (<linux/syncmem.h>) naming one process whose
 * action it needs: the head names one current holder, every other request
 * the client of the request ahead of it. Its requester sleeps on it with
 * LOCK_WAIT as its process. When the process named dies the kernel hands
 * the word to the sleeper (SYNCMEM_WAIT_OWNER_DIED), which takes @m,
 * recovers the dead process's holds and requests of the cell and looks
 * again; a requester about to sleep on a dead process's word is told at
 * once. Whoever changes what a sleeper must name rewrites its word under
 * @m and then asks the kernel whether the new name is alive (the kernel
 * marks a process dead before it scans the words): a dead holder is found
 * by the head, a dead pending request by the one behind it, and nothing by
 * polling. With nobody waiting, a dead process's holds are found by the
 * next request that needs them (a fast path that fails goes to @m, which
 * asks) and by query; a manager-wide sweep frees everything of dead
 * processes when reqs or cells run out.
 *
 * Steal: under @m, bump the epoch, zero every slot's count under the new
 * epoch, move the slow list's reqs and the holder in @excl to REQ_STOLEN
 * and put the stealer's req in @excl. A stolen holder's release fails its
 * compare-and-swap (epoch) and returns -ECONNABORTED.
 *
 * A process that dies inside @m leaves the cell's lists half changed: the
 * next locker gets -EOWNERDEAD from the mutex and rebuilds them from the
 * reqs' states (the grant's one store is what commits it).
 *
 * Departures from the lead's design (/work/helpers/weblocks-design.md):
 * - @excl names the holder's req, not its process, so that a stolen
 *   exclusive holder's release cannot free a hold the same process got
 *   again; the process is read from the req, and since no waiter sleeps
 *   on @excl it needs no owner-word bits.
 * - Queued shared requests are granted into the slow list, not into their
 *   process's slot (see above: a granter's death must leave a state that
 *   can be told).
 * - init is given only a size (api.md): the room is divided as one name
 *   per LOCKS_RATIO requests, and the footprint is defined to match, so
 *   that the promise "at least n names and q requests" holds.
 * - The LRU of idle cells is a second-chance clock: fast paths cannot take
 *   @table to move a cell in a list.
 * - A grant the requester never learnt of (it died before its wait ended)
 *   is released silently when recovered, not reported as -EOWNERDEAD.
 *
 * Hostile peers: every index read from the manager is checked against the
 * geometry in the private handle before use, every walk is bounded (chains
 * by max_names, queues by max_reqs), every compare-and-swap loop by
 * SYNCMEM__RETRY_MAX; the mutexes are held for bookkeeping only, so one
 * held ten seconds is reported as -EUCLEAN rather than waited for.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

#include <linux/syncmem.h>

#include "locks.h"
#include "ready.h"

_Static_assert(sizeof(struct locks_header) == 320, "locks header layout");
_Static_assert(sizeof(struct locks_cell) == 1472, "locks cell layout");
_Static_assert(sizeof(struct locks_req) == 64, "locks req layout");
_Static_assert(offsetof(struct locks_cell, m) == 64 && offsetof(struct locks_cell, qhead) == 128 &&
	       offsetof(struct locks_cell, slot) == 192 && offsetof(struct locks_cell, name) == 448,
	       "locks cell lines");
_Static_assert(offsetof(struct locks_req, word) == 32, "locks req word aligned");

#define LD(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define LDA(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LDS(p)		__atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ST(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define STR(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CAS(p, e, v, mo) __atomic_compare_exchange_n((p), (e), (v), false, (mo), __ATOMIC_RELAXED)

#define WAITERS		SYNCMEM_OWNER_WAITERS
#define OWNER_ID	SYNCMEM_OWNER_ID
#define SLOT_CLAIMING	SYNCMEM_OWNER_DIED	/* in a slot's owner: being claimed */
#define SLOT_NOBODY	SYNCMEM_OWNER_NOBODY	/* in a slot's owner: being freed under @m */
#define COUNT_MAX	0x7fffffffu		/* shares one slot may count */

/* The mutexes guard bookkeeping, never a wait: held this long, it is broken. */
#define LOCKS_MUTEX_MAX_NS	(10 * 1000000000LL)

static inline uint32_t hi32(uint64_t v)
{
	return (uint32_t)(v >> 32);
}

static inline uint32_t lo32(uint64_t v)
{
	return (uint32_t)v;
}

static inline uint64_t mk64(uint32_t hi, uint32_t lo)
{
	return (uint64_t)hi << 32 | lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Stamps of fast-path grants (query's since_ns and order). Where the
 * kernel's clocksource has a vDSO mode, CLOCK_MONOTONIC costs tens of
 * nanoseconds and every stamp reads it. Where it has none, each read is a
 * system call (2.4 us in the QEMU VM, whose clocksource is the HPET: many
 * times a whole fast request and release), and a fast grant reads
 * CLOCK_MONOTONIC_COARSE instead (from the vDSO's data, no system call;
 * one clock tick of precision, 1 to 10 ms). The cycle counter is no way
 * out: under QEMU's TCG each read takes a lock shared by every vCPU. The
 * process decides once, from the fastest of a few reads. A thread's stamps
 * are strictly increasing whatever the clock.
 *
 * The stamp calls the vDSO's clock_gettime itself, found once in the image
 * the kernel maps (AT_SYSINFO_EHDR): glibc's wrapper around it was a third
 * of a coarse read under QEMU's TCG (30 of 100 ns). Without a vDSO, or one
 * this cannot read, the stamp calls clock_gettime().
 */
#define STAMP_SLOW_READ_NS	500	/* a read slower than this is a system call */

typedef int (*stamp_fn_t)(clockid_t, struct timespec *);

static stamp_fn_t stamp_fn;	/* NULL: not decided yet */
static clockid_t stamp_clock;	/* written before stamp_fn */
static __thread uint64_t stamp_last __attribute__((tls_model("initial-exec")));

#if defined(__x86_64__)
#define STAMP_VDSO_NAME	"__vdso_clock_gettime"
#elif defined(__aarch64__)
#define STAMP_VDSO_NAME	"__kernel_clock_gettime"
#endif

/* The vDSO's clock_gettime, or NULL. The image is the kernel's, in our own memory. */
static stamp_fn_t stamp_vdso(void)
{
#if defined(STAMP_VDSO_NAME) && UINTPTR_MAX == UINT64_MAX
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR), bias = 0;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *d = NULL;
	const Elf64_Sym *sym = NULL;
	const Elf32_Word *hash = NULL;
	const char *str = NULL;
	bool load = false;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (uint32_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !load) {
			bias = base + ph[i].p_offset - ph[i].p_vaddr;
			load = true;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			d = (const Elf64_Dyn *)(base + ph[i].p_offset);
		}
	}
	if (!load || !d)
		return NULL;
	for (; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			sym = (const Elf64_Sym *)(bias + d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			str = (const char *)(bias + d->d_un.d_ptr);
		else if (d->d_tag == DT_HASH)
			hash = (const Elf32_Word *)(bias + d->d_un.d_ptr);
	}
	if (!sym || !str || !hash)
		return NULL;
	/* The symbol table has as many entries as the hash table's chain. */
	for (Elf32_Word i = 0; i < hash[1]; i++)
		if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && sym[i].st_shndx != SHN_UNDEF &&
		    sym[i].st_value && !strcmp(str + sym[i].st_name, STAMP_VDSO_NAME))
			return (stamp_fn_t)(bias + sym[i].st_value);
#endif
	return NULL;
}

static __attribute__((noinline)) stamp_fn_t stamp_decide(void)
{
	uint64_t best = UINT64_MAX, prev = now_ns();
	stamp_fn_t fn = stamp_vdso();
	struct timespec ts;
	clockid_t clk;

	for (int i = 0; i < 5; i++) {
		uint64_t t = now_ns();

		if (t - prev < best)
			best = t - prev;
		prev = t;
	}
	clk = best > STAMP_SLOW_READ_NS ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC;
	__atomic_store_n(&stamp_clock, clk, __ATOMIC_RELAXED);
	/* A vDSO function that fails (a clock it lacks) is left for glibc's. */
	if (!fn || fn(clk, &ts))
		fn = clock_gettime;
	/* Release: the clock with the function. Racing threads decide alike. */
	__atomic_store_n(&stamp_fn, fn, __ATOMIC_RELEASE);
	return fn;
}

static inline uint64_t stamp_now(void)
{
	stamp_fn_t fn = __atomic_load_n(&stamp_fn, __ATOMIC_ACQUIRE);
	struct timespec ts;
	uint64_t t;

	if (__builtin_expect(!fn, 0))
		fn = stamp_decide();
	fn(__atomic_load_n(&stamp_clock, __ATOMIC_RELAXED), &ts);
	t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (__builtin_expect(t <= stamp_last, 0))
		t = stamp_last + 1;
	stamp_last = t;
	return t;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---- Geometry ------------------------------------------------------------ */

#define ALIGN64(v)	(((v) + 63) & ~(uint64_t)63)

struct locks_geom {
	uint32_t names, reqs, nbuckets;
	uint64_t buckets_off, cells_off, reqs_off, footprint;
};

static uint32_t buckets_for(uint32_t names)
{
	return names <= 1 ? 1 : 1u << (32 - __builtin_clz(names - 1));
}

/* The layout of @names cells and @reqs reqs: 0 or -EINVAL. */
static int geometry(uint32_t names, uint32_t reqs, struct locks_geom *g)
{
	if (!names || names > LOCKS_NAMES_MAX || !reqs || reqs > LOCKS_REQS_MAX)
		return -EINVAL;
	g->names = names;
	g->reqs = reqs;
	g->nbuckets = buckets_for(names);
	g->buckets_off = sizeof(struct locks_header);
	g->cells_off = ALIGN64(g->buckets_off + (uint64_t)g->nbuckets * sizeof(uint32_t));
	g->reqs_off = g->cells_off + (uint64_t)names * sizeof(struct locks_cell);
	g->footprint = g->reqs_off + (uint64_t)reqs * sizeof(struct locks_req);
	return 0;
}

/* Bytes for @n names and LOCKS_RATIO requests each; 0 if impossible. */
static uint64_t footprint_of(uint32_t n)
{
	struct locks_geom g;

	if (n > LOCKS_REQS_MAX / LOCKS_RATIO || geometry(n, n * LOCKS_RATIO, &g))
		return 0;
	return g.footprint;
}

size_t syncmem_locks_footprint(uint32_t max_names, uint32_t max_requests)
{
	uint32_t n;

	if (!max_names || !max_requests || max_names > LOCKS_NAMES_MAX ||
	    max_requests > LOCKS_REQS_MAX)
		return 0;
	n = max_requests / LOCKS_RATIO + (max_requests % LOCKS_RATIO != 0);
	return (size_t)footprint_of(n > max_names ? n : max_names);
}

/*
 * The geometry init builds in @size bytes: the most names whose footprint
 * fits, then every whole req the rest holds. Since footprint() is that of
 * max(n, ceil(q / ratio)) names, every (n, q) whose footprint fits is
 * covered. 0 or -EINVAL (too small).
 */
static int geometry_for_size(uint64_t size, struct locks_geom *g)
{
	uint32_t lo = 0, hi = LOCKS_NAMES_MAX;
	uint64_t reqs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		uint64_t f = footprint_of(mid);

		if (f && f <= size)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!lo || geometry(lo, 1, g))
		return -EINVAL;
	reqs = (size - g->reqs_off) / sizeof(struct locks_req);
	if (reqs > LOCKS_REQS_MAX)
		reqs = LOCKS_REQS_MAX;
	return geometry(lo, (uint32_t)reqs, g);
}

/* ---- Handles ------------------------------------------------------------- */

static uint64_t next_serial;

static int handle_new(struct syncmem_region *r, struct locks_header *h,
		      const struct locks_geom *g, uint32_t seed, struct syncmem_locks **out)
{
	struct syncmem_locks *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->r = r;
	m->h = h;
	m->buckets = (uint32_t *)((char *)h + g->buckets_off);
	m->cells = (struct locks_cell *)((char *)h + g->cells_off);
	m->reqs = (struct locks_req *)((char *)h + g->reqs_off);
	m->max_names = g->names;
	m->max_reqs = g->reqs;
	m->mask = g->nbuckets - 1;
	m->seed = seed;
	m->serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
	m->rdonly = r->rdonly;
	*out = m;
	return 0;
}

/*
 * @at's offset in @r for @len bytes, 64-byte aligned: 0 or -EINVAL (api.md
 * says -EINVAL for a manager outside its region, where other objects say
 * -ERANGE).
 */
static int place(struct syncmem_region *r, void *at, uint64_t len, __u64 *off)
{
	if (!r || !at || ((uintptr_t)at & 63))
		return -EINVAL;
	return syncmem__object_offset(r, at, len, 64, off) ? -EINVAL : 0;
}

int syncmem_locks_init(struct syncmem_region *r, void *at, size_t size,
		       struct syncmem_locks **out)
{
	struct locks_header *h = at;
	struct syncmem_locks *m;
	struct locks_geom g;
	uint32_t seed = 0;
	__u64 off;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	err = place(r, at, size, &off);
	if (err)
		return err;
	err = geometry_for_size(size, &g);
	if (err)
		return err;
	if (r->rdonly)
		return -EBADF;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint32_t)now_ns() ^ (uint32_t)(uintptr_t)&seed;
	err = handle_new(r, h, &g, seed, &m);
	if (err)
		return err;
	err = syncmem__ready_claim(&h->state, &h->builder);
	if (err) {
		free(m);
		return err;
	}
	/* Everything but the state and the builder, which the claim owns. */
	memset((char *)h + offsetof(struct locks_header, max_names), 0,
	       offsetof(struct locks_header, builder) - offsetof(struct locks_header, max_names));
	memset((char *)h + offsetof(struct locks_header, reserved1), 0,
	       g.footprint - offsetof(struct locks_header, reserved1));
	ST(&h->magic, 0u);
	h->version = LOCKS_VERSION;
	h->seed = seed;
	h->max_names = g.names;
	h->max_reqs = g.reqs;
	h->nbuckets = g.nbuckets;
	h->cell_size = sizeof(struct locks_cell);
	h->req_size = sizeof(struct locks_req);
	h->buckets_off = g.buckets_off;
	h->cells_off = g.cells_off;
	h->reqs_off = g.reqs_off;
	h->footprint = g.footprint;
	syncmem_lock_init(&h->table, 0);
	for (uint32_t i = 0; i < g.reqs; i++)
		m->reqs[i].free_next = i + 1 < g.reqs ? i + 2 : 0;
	h->free_reqs = 1;
	h->magic = LOCKS_MAGIC;
	syncmem__ready_publish(&h->state);
	*out = m;
	return 0;
}

int syncmem_locks_attach(struct syncmem_region *r, void *at, struct syncmem_locks **out)
{
	struct locks_header *h = at;
	struct locks_geom g;
	__u64 off;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	err = place(r, at, sizeof(*h), &off);
	if (err)
		return err;
	err = syncmem__ready_wait(&h->state, &h->builder, SYNCMEM_POOL_ATTACH_WAIT_MS);
	if (err)
		return err;
	/* The geometry from one read of the counts, every stored field checked against it. */
	if (LD(&h->magic) != LOCKS_MAGIC || LD(&h->version) != LOCKS_VERSION ||
	    geometry(LD(&h->max_names), LD(&h->max_reqs), &g) ||
	    LD(&h->nbuckets) != g.nbuckets || LD(&h->cell_size) != sizeof(struct locks_cell) ||
	    LD(&h->req_size) != sizeof(struct locks_req) || LD(&h->buckets_off) != g.buckets_off ||
	    LD(&h->cells_off) != g.cells_off || LD(&h->reqs_off) != g.reqs_off ||
	    LD(&h->footprint) != g.footprint)
		return -EPROTO;
	if (r->size - off < g.footprint)
		return -EINVAL;
	return handle_new(r, h, &g, LD(&h->seed), out);
}

/* ---- Per-thread caches --------------------------------------------------- */

/*
 * A name this thread used: its first 8 bytes and length (the key: no hash
 * is computed on a hit), where its cell was, and its process's slot there.
 * The cell counts only while its gen is @gen: a rename bumps the gen.
 */
struct tc_name {
	uint64_t w0;		/* the name's first bytes, zero-padded (name_w0()) */
	struct locks_cell *c;	/* &cells[@cell] */
	uint32_t len;		/* 0: empty */
	uint32_t cell;		/* cell index, < max_names */
	uint32_t gen;
	uint32_t slot;		/* the slot hint, or LOCKS_NO_SLOT */
	uint32_t reclaim_skip;	/* slot-less requests left before the next reclaim */
};

#define TC_NAMES	4
#define TC_MANAGERS	4

/*
 * Per thread and manager handle: a req kept for the next request, recent
 * names. Only hints: everything is checked against the shared state.
 */
struct locks_tc {
	uint64_t serial;	/* the handle's; 0: unused */
	uint64_t me;		/* the process owner id it was filled as */
	uint32_t req1;		/* a REQ_CACHED req: index + 1 */
	uint32_t victim;
	struct tc_name names[TC_NAMES];
};

static __thread struct locks_tc locks_tcs[TC_MANAGERS] __attribute__((tls_model("initial-exec")));
static __thread struct locks_tc *locks_tc_last __attribute__((tls_model("initial-exec")));
static __thread uint32_t locks_tc_next __attribute__((tls_model("initial-exec")));

/* This thread's cache for @m as process @me (a forked child starts afresh). */
static struct locks_tc *tc_find(const struct syncmem_locks *m, uint64_t me)
{
	struct locks_tc *tc;

	for (int i = 0; i < TC_MANAGERS; i++) {
		tc = &locks_tcs[i];
		if (tc->serial == m->serial && tc->me == me)
			return locks_tc_last = tc;
	}
	/* Another manager's entry is forgotten: its memory may be gone. */
	tc = &locks_tcs[locks_tc_next++ % TC_MANAGERS];
	memset(tc, 0, sizeof(*tc));
	tc->serial = m->serial;
	tc->me = me;
	return locks_tc_last = tc;
}

static inline struct locks_tc *tc_of(const struct syncmem_locks *m, uint64_t me)
{
	struct locks_tc *tc = locks_tc_last;

	if (__builtin_expect(tc && tc->serial == m->serial && tc->me == me, 1))
		return tc;
	return tc_find(m, me);
}

/*
 * Free handles, per thread: the fast path takes one and a release (on any
 * thread) gives it back to its own thread's list, so that no request or
 * release of a recently used name calls malloc() or free(). The list is
 * short, and freed when the thread exits.
 */
#define HELD_CACHE	8

static __thread struct syncmem_held *held_free __attribute__((tls_model("initial-exec")));
static __thread uint32_t held_nfree __attribute__((tls_model("initial-exec")));
static __thread bool held_registered __attribute__((tls_model("initial-exec")));
static pthread_key_t held_key;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;
static bool held_key_ok;

/* At the thread's exit: its free handles go back to malloc. */
static void held_cache_drop(void *unused)
{
	(void)unused;
	while (held_free) {
		struct syncmem_held *h = held_free;

		held_free = h->next_free;
		free(h);
	}
	held_nfree = 0;
	/* A later destructor that releases a lock registers the list again. */
	held_registered = false;
}

static void held_key_make(void)
{
	held_key_ok = !pthread_key_create(&held_key, held_cache_drop);
}

/* Unloaded (dlclose): no thread may exit into held_cache_drop(), gone with us. */
__attribute__((destructor)) static void held_key_unload(void)
{
	if (held_key_ok)
		pthread_key_delete(held_key);
}

static inline struct syncmem_held *held_new(void)
{
	struct syncmem_held *h = held_free;

	if (__builtin_expect(h != NULL, 1)) {
		held_free = h->next_free;
		held_nfree--;
		return h;
	}
	return malloc(sizeof(*h));
}

static inline void held_dispose(struct syncmem_held *h)
{
	if (__builtin_expect(!held_registered, 0)) {
		/* The thread's first: its exit must find the list. */
		pthread_once(&held_once, held_key_make);
		held_registered = held_key_ok && !pthread_setspecific(held_key, &held_free);
	}
	if (__builtin_expect(held_registered && held_nfree < HELD_CACHE, 1)) {
		h->next_free = held_free;
		held_free = h;
		held_nfree++;
		return;
	}
	free(h);
}

void syncmem_locks_detach(struct syncmem_locks *m)
{
	if (!m)
		return;
	for (int i = 0; i < TC_MANAGERS; i++)
		if (locks_tcs[i].serial == m->serial)
			memset(&locks_tcs[i], 0, sizeof(locks_tcs[i]));
	free(m);
}

int64_t syncmem__locks_me(struct syncmem_locks *m)
{
	return syncmem__process_owner(m->r->fd);
}

/* ---- Reqs ---------------------------------------------------------------- */

/* The req of index + 1 @i read from shared memory, or NULL when out of bounds. */
static inline struct locks_req *req_at(const struct syncmem_locks *m, uint32_t i)
{
	return i && i <= m->max_reqs ? &m->reqs[i - 1] : NULL;
}

static inline uint32_t req_index(const struct syncmem_locks *m, const struct locks_req *r)
{
	return (uint32_t)(r - m->reqs);
}

static inline struct locks_cell *cell_at(const struct syncmem_locks *m, uint32_t i)
{
	return i && i <= m->max_names ? &m->cells[i - 1] : NULL;
}

static inline uint32_t cell_index(const struct syncmem_locks *m, const struct locks_cell *c)
{
	return (uint32_t)(c - m->cells);
}

/* Pop a free req: 0 and its index, -ENOSPC, -EUCLEAN. It is ours: nobody else can reach it. */
static int req_pop(struct syncmem_locks *m, uint32_t *out)
{
	uint64_t head = LDA(&m->h->free_reqs);
	uint32_t failed = 0;

	for (;;) {
		uint32_t i = lo32(head), next;

		if (!i)
			return -ENOSPC;
		if (i > m->max_reqs)
			return -EUCLEAN;
		next = LD(&m->reqs[i - 1].free_next);
		/* A stale link fails the tag compare below; a corrupt one is out of bounds. */
		if (next <= m->max_reqs &&
		    CAS(&m->h->free_reqs, &head, mk64(hi32(head) + 1, next), __ATOMIC_ACQUIRE)) {
			*out = i - 1;
			return 0;
		}
		if (next > m->max_reqs)
			head = LDA(&m->h->free_reqs);
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/* Push req @i, owned by the caller, on the free stack. */
static void req_push(struct syncmem_locks *m, uint32_t i)
{
	struct locks_req *r = &m->reqs[i];
	uint64_t head = LD(&m->h->free_reqs);
	uint32_t failed = 0;

	ST(&r->state, (uint32_t)REQ_FREE);
	ST(&r->client, 0ull);
	do {
		ST(&r->free_next, lo32(head));
		/* Release: the req's stores happen before its next popper's. */
		if (CAS(&m->h->free_reqs, &head, mk64(hi32(head) + 1, i + 1), __ATOMIC_RELEASE))
			return;
	} while (!syncmem__too_many(&failed));
	/* A peer keeps writing the head: the req is lost, nothing worse. */
}

/* A req for process @me, taken for a request: REQ_TAKEN (or @state), its seq bumped. */
static void req_own(struct locks_req *r, uint64_t me, uint32_t state)
{
	ST(&r->client, me);
	ST(&r->flags, 0u);
	ST(&r->prev, 0u);
	ST(&r->next, 0u);
	ST(&r->word, 0ull);
	ST(&r->slot, LOCKS_NO_SLOT);
	ST(&r->seq, LD(&r->seq) + 1);
	STR(&r->state, state);
}

/* The thread's cached req for @m, claimed as @state: its index, or -1. */
static inline int64_t tc_req_claim(struct syncmem_locks *m, struct locks_tc *tc, uint64_t me,
				   uint32_t state)
{
	struct locks_req *r = req_at(m, tc->req1);
	uint32_t cached = REQ_CACHED;

	tc->req1 = 0;
	/* Somebody short of reqs may have taken it back: then it is not ours. */
	if (!r || !CAS(&r->state, &cached, state, __ATOMIC_ACQUIRE))
		return -1;
	req_own(r, me, state);
	return req_index(m, r);
}

static int sweep(struct syncmem_locks *m, bool take_cached);

/* A req for process @me in @state: 0 and its index, -ENOSPC, -EUCLEAN. */
static int req_take(struct syncmem_locks *m, uint64_t me, uint32_t state, uint32_t *out)
{
	struct locks_tc *tc = tc_of(m, me);
	int64_t i = tc_req_claim(m, tc, me, state);
	int err;

	if (i >= 0) {
		*out = (uint32_t)i;
		return 0;
	}
	err = req_pop(m, out);
	if (err == -ENOSPC) {
		/* Reqs of dead processes, then those kept by live ones for later. */
		err = sweep(m, true);
		if (err >= 0)
			err = req_pop(m, out);
	}
	if (!err)
		req_own(&m->reqs[*out], me, state);
	return err;
}

/* Give back req @i, owned by the caller: kept for this thread's next request, or freed. */
static inline void req_put(struct syncmem_locks *m, uint32_t i, uint64_t me)
{
	struct locks_tc *tc = me ? tc_of(m, me) : NULL;

	if (tc && !tc->req1) {
		ST(&m->reqs[i].client, me);
		STR(&m->reqs[i].state, (uint32_t)REQ_CACHED);
		tc->req1 = i + 1;
		return;
	}
	req_push(m, i);
}

/* Free req @i of a dead (or departed) client: under the cell's @m, or a CACHED one. */
static void req_free(struct syncmem_locks *m, uint32_t i)
{
	req_push(m, i);
}

/* ---- Names --------------------------------------------------------------- */

static uint32_t name_hash(uint32_t seed, const void *name, size_t len)
{
	const uint8_t *p = name;
	uint64_t h = ((uint64_t)seed << 32 | len) * 0x9e3779b97f4a7c15ull, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (uint32_t)(h ^ (h >> 32));
}

/* The hash of @a's name, computed once: a fast path that hits never needs it. */
static inline void ask_hash(const struct syncmem_locks *m, struct locks_ask *a)
{
	if (!a->hashed) {
		a->hash = name_hash(m->seed, a->name, a->len);
		a->hashed = true;
	}
}

/*
 * The first (up to) 8 bytes of a name of @len bytes, zero-padded, as one
 * word: the key of a thread's cache of names, read without a call and
 * without reading past the name.
 */
static inline uint64_t name_w0(const uint8_t *p, uint32_t len)
{
	uint64_t w = 0;
	uint32_t off = 0;

	if (len >= 8) {
		memcpy(&w, p, 8);
		return w;
	}
	if (len & 4) {
		uint32_t x;

		memcpy(&x, p, 4);
		w = x;
		off = 4;
	}
	if (len & 2) {
		uint16_t x;

		memcpy(&x, p + off, 2);
		w |= (uint64_t)x << (off * 8);
		off += 2;
	}
	if (len & 1)
		w |= (uint64_t)p[off] << (off * 8);
	return w;
}

/*
 * Are the bytes of @a's name from @i on those of @c's? Read with acquires
 * (a renamer writes them with releases after its odd gen), so a later
 * check of the gen sees any rename whose stores were read here.
 */
static bool name_bytes_from(const struct locks_cell *c, const struct locks_ask *a, uint32_t i)
{
	const uint64_t *w = (const uint64_t *)c->name;
	const uint8_t *p = a->name;

	for (; i + 8 <= a->len; i += 8) {
		uint64_t x;

		memcpy(&x, p + i, 8);
		if (LDA(&w[i / 8]) != x)
			return false;
	}
	if (i < a->len) {
		uint64_t y = LDA(&w[i / 8]);
		uint8_t b[8];

		memcpy(b, &y, 8);
		if (memcmp(b, p + i, a->len - i))
			return false;
	}
	return true;
}

/* Does @c hold the name of @a? (Its hash and length too are read with acquires.) */
static bool name_is(const struct locks_cell *c, const struct locks_ask *a)
{
	if (LDA(&c->hash) != a->hash || LDA(&c->len) != a->len)
		return false;
	return name_bytes_from(c, a, 0);
}

/*
 * The cell named @a, looked up with no lock, and its gen in *@gen; NULL when
 * none was found (maybe wrongly: a chain being changed; look again under
 * @table). What is found counts only if the gen is unchanged afterwards.
 */
static struct locks_cell *lookup(const struct syncmem_locks *m, const struct locks_ask *a,
				 uint32_t *gen)
{
	uint32_t i = LDA(&m->buckets[a->hash & m->mask]);

	for (uint32_t steps = 0; i && steps < m->max_names; steps++) {
		struct locks_cell *c = cell_at(m, i);
		uint32_t g;

		if (!c)
			return NULL;
		/* Acquire: the name as its renamer left it with this gen. */
		g = LDA(&c->gen);
		if (!(g & 1) && name_is(c, a)) {
			*gen = g;
			return c;
		}
		i = LDA(&c->next);
	}
	return NULL;
}

/* Under @table: link cell @c (named) at the head of its chain. */
static void chain_link(struct syncmem_locks *m, struct locks_cell *c)
{
	uint32_t *b = &m->buckets[LD(&c->hash) & m->mask];

	STR(&c->next, LD(b));
	/* Release: a lookup that reaches @c sees its name. */
	STR(b, cell_index(m, c) + 1);
}

/*
 * Under @table: take @c out of the chain of its hash, if it is there (a
 * renamer that died may have left it out).
 */
static void chain_unlink(struct syncmem_locks *m, struct locks_cell *c)
{
	uint32_t *link = &m->buckets[LD(&c->hash) & m->mask];
	uint32_t want = cell_index(m, c) + 1;

	for (uint32_t steps = 0; steps < m->max_names; steps++) {
		uint32_t i = LD(link);
		struct locks_cell *at = cell_at(m, i);

		if (i == want) {
			/* @c keeps its link: a lookup standing on it goes on. */
			STR(link, LD(&c->next));
			return;
		}
		if (!at)
			return;
		link = &at->next;
	}
}

/* ---- The mutexes --------------------------------------------------------- */

static int cell_repair(struct syncmem_locks *m, struct locks_cell *c);

static int mutex_take(struct syncmem_region *r, struct syncmem_lock *l)
{
	int ret = syncmem_lock_timed(r, l, LOCKS_MUTEX_MAX_NS);

	/* Held ten seconds, or never recoverable: a peer broke it. */
	if (ret == -ETIMEDOUT || ret == -ENOTRECOVERABLE || ret == -EDEADLK)
		return -EUCLEAN;
	return ret;
}

/*
 * Take @table. Chains are changed in an order that leaves them usable
 * wherever a holder dies (locks.rst): a dead holder's mutex is just taken.
 */
static int table_lock(struct syncmem_locks *m)
{
	int ret = mutex_take(m->r, &m->h->table);

	if (ret == -EOWNERDEAD)
		ret = syncmem_lock_consistent(m->r, &m->h->table);
	return ret;
}

static void table_unlock(struct syncmem_locks *m)
{
	syncmem_unlock(m->r, &m->h->table);
}

/* Take @c's mutex, repairing what a holder that died left: 0 or -errno. */
static int cell_lock(struct syncmem_locks *m, struct locks_cell *c)
{
	int ret = mutex_take(m->r, &c->m);

	if (ret == -EOWNERDEAD) {
		ret = cell_repair(m, c);
		syncmem_lock_consistent(m->r, &c->m);
		if (ret)
			syncmem_unlock(m->r, &c->m);
	}
	return ret;
}

static void cell_unlock(struct syncmem_locks *m, struct locks_cell *c)
{
	syncmem_unlock(m->r, &c->m);
}

/* ---- Holds --------------------------------------------------------------- */

/* Are any shares counted in @c's slots? (Sequentially consistent: the handshake.) */
static bool slots_busy(const struct locks_cell *c)
{
	for (int i = 0; i < LOCKS_SLOTS; i++)
		if (lo32(LDS(&c->slot[i].count)))
			return true;
	return false;
}

/*
 * The fast exclusive check: are shares counted in the slots @slots_used
 * names? One load when no process ever counted shares of the name.
 * Sequentially consistent, as slots_busy().
 */
static inline bool used_slots_busy(const struct locks_cell *c)
{
	uint32_t used = LDS(&c->slots_used) & ((1u << LOCKS_SLOTS) - 1);

	while (used) {
		uint32_t i = (uint32_t)__builtin_ctz(used);

		if (lo32(LDS(&c->slot[i].count)))
			return true;
		used &= used - 1;
	}
	return false;
}

/* Take back a share counted in @s under epoch @e (unless a steal zeroed it). */
static void share_undo(struct locks_slot *s, uint32_t e)
{
	uint64_t v = LD(&s->count);
	uint32_t failed = 0;

	while (hi32(v) == e && lo32(v) &&
	       !CAS(&s->count, &v, v - 1, __ATOMIC_SEQ_CST))
		if (syncmem__too_many(&failed))
			return;
}

/* Take back @ri's claim on @excl, made under epoch @e. */
static void excl_undo(struct locks_cell *c, uint32_t e, uint32_t ri)
{
	uint64_t v = mk64(e, ri + 1);

	/* Fails only if a steal took it: then nothing is ours to undo. */
	CAS(&c->excl, &v, mk64(e, 0), __ATOMIC_SEQ_CST);
}

static int cell_process(struct syncmem_locks *m, struct locks_cell *c, uint32_t fresh);

/*
 * A claim was taken back: if requests are queued, one of them may have been
 * waiting for it (a granter that saw the claim named us). Consider the
 * queue. Sequentially consistent after the undo: a queue formed later saw
 * no claim.
 */
static void kick(struct syncmem_locks *m, struct locks_cell *c)
{
	if (!(LDS(&c->closed) & CLOSED_QUEUE))
		return;
	if (cell_lock(m, c))
		return;
	cell_process(m, c, UINT32_MAX);
	cell_unlock(m, c);
}

/* The slot of process @me in @c: the hinted one, else the one naming it; NULL if none. */
static inline struct locks_slot *slot_mine(struct locks_cell *c, uint64_t me, uint32_t hint,
					   uint32_t *idx)
{
	if (hint < LOCKS_SLOTS && LDA(&c->slot[hint].owner) == me) {
		*idx = hint;
		return &c->slot[hint];
	}
	for (uint32_t i = 0; i < LOCKS_SLOTS; i++) {
		/* Acquire: the count as its claimer left it. */
		if (LDA(&c->slot[i].owner) == me) {
			*idx = i;
			return &c->slot[i];
		}
	}
	return NULL;
}

/* The i-th slot a claim tries: a new cache line first, so the first four processes share none. */
static inline uint32_t claim_order(uint32_t i)
{
	return (i % 4) * 4 + i / 4;
}

/* A free slot of @c claimed for @me (its count zeroed, epoch kept), or NULL. */
static struct locks_slot *slot_claim(struct locks_cell *c, uint64_t me, uint32_t *idx)
{
	for (uint32_t k = 0; k < LOCKS_SLOTS; k++) {
		uint32_t i = claim_order(k);
		struct locks_slot *s = &c->slot[i];
		uint64_t o = 0, v;
		uint32_t failed = 0;

		if (LD(&s->owner) || !CAS(&s->owner, &o, me | SLOT_CLAIMING, __ATOMIC_ACQUIRE))
			continue;
		/* No thread of ours counts in it before it names us without the bit. */
		v = LD(&s->count);
		while (lo32(v) && !CAS(&s->count, &v, mk64(hi32(v), 0), __ATOMIC_RELAXED))
			if (syncmem__too_many(&failed))
				break;
		/*
		 * Sequentially consistent, before the slot can count: an
		 * exclusive claim that reads the summary without this bit
		 * precedes it, so our first share sees that claim (excl_enter()).
		 */
		__atomic_fetch_or(&c->slots_used, 1u << i, __ATOMIC_SEQ_CST);
		STR(&s->owner, me);
		*idx = i;
		return s;
	}
	return NULL;
}

/* The slot of @me in @c, claimed if it has none: NULL when every slot is taken. */
static inline struct locks_slot *slot_for(struct locks_cell *c, uint64_t me, uint32_t hint,
					  uint32_t *idx)
{
	struct locks_slot *s = slot_mine(c, me, hint, idx);

	return s ? s : slot_claim(c, me, idx);
}

/*
 * Count a share for @me in slot @s of @c, whose gen must stay @gen (or
 * anything, with @gen odd), with the closed bits @allowed tolerated (under
 * @m, @locked: the died flag and slow shares). 1 in, with the epoch in *@epoch; 0
 * taken back (a conflicting hold, a queue, a change of name); -EUCLEAN.
 */
static inline int share_enter(struct syncmem_locks *m, struct locks_cell *c, struct locks_slot *s,
			      uint32_t gen, uint32_t allowed, bool locked, uint32_t *epoch)
{
	/* Sequentially consistent, all four: the handshake with exclusive claims. */
	uint64_t before = __atomic_fetch_add(&s->count, 1, __ATOMIC_SEQ_CST);
	uint32_t e = hi32(before);

	if (__builtin_expect(lo32(before) < COUNT_MAX, 1) &&
	    __builtin_expect(!(LDS(&c->closed) & ~allowed), 1) &&
	    __builtin_expect(LDS(&c->excl) == mk64(e, 0), 1) &&
	    __builtin_expect((gen & 1) || LDS(&c->gen) == gen, 1)) {
		*epoch = e;
		return 1;
	}
	share_undo(s, e);
	if (!locked)
		kick(m, c);
	return lo32(before) >= COUNT_MAX ? -EUCLEAN : 0;
}

/*
 * Claim @excl of @c for req @ri, as share_enter(): 1 held (*@epoch), 0
 * taken back or not free.
 */
static inline int excl_enter(struct syncmem_locks *m, struct locks_cell *c, uint32_t ri,
			     uint32_t gen, uint32_t allowed, bool locked, uint32_t *epoch)
{
	uint64_t x = LD(&c->excl);
	uint32_t e = hi32(x);

	if (lo32(x) || !CAS(&c->excl, &x, mk64(e, ri + 1), __ATOMIC_SEQ_CST))
		return 0;
	/* Sequentially consistent: the handshake with shares counted in slots. */
	if (__builtin_expect(!(LDS(&c->closed) & ~allowed), 1) && !used_slots_busy(c) &&
	    !LD(&c->shead) && __builtin_expect((gen & 1) || LDS(&c->gen) == gen, 1)) {
		*epoch = e;
		return 1;
	}
	excl_undo(c, e, ri);
	if (!locked)
		kick(m, c);
	return 0;
}

/* ---- Queue and slow list (under @m) -------------------------------------- */

/* Append req @r to the list whose head and tail are @head, @tail. */
static void list_append(struct syncmem_locks *m, uint32_t *head, uint32_t *tail,
			struct locks_req *r)
{
	uint32_t i = req_index(m, r) + 1;
	struct locks_req *t = req_at(m, LD(tail));

	ST(&r->next, 0u);
	ST(&r->prev, t ? LD(tail) : 0u);
	if (t)
		ST(&t->next, i);
	else
		ST(head, i);
	ST(tail, i);
}

/* Take @r out of its list: 0, or -EUCLEAN when the links do not agree (rebuild). */
static int list_remove(struct syncmem_locks *m, uint32_t *head, uint32_t *tail,
		       struct locks_req *r)
{
	uint32_t i = req_index(m, r) + 1, p = LD(&r->prev), n = LD(&r->next);
	struct locks_req *pr = req_at(m, p), *nr = req_at(m, n);

	if ((p && (!pr || LD(&pr->next) != i)) || (!p && LD(head) != i) ||
	    (n && (!nr || LD(&nr->prev) != i)) || (!n && LD(tail) != i))
		return -EUCLEAN;
	if (pr)
		ST(&pr->next, n);
	else
		ST(head, n);
	if (nr)
		ST(&nr->prev, p);
	else
		ST(tail, p);
	ST(&r->prev, 0u);
	ST(&r->next, 0u);
	return 0;
}

/* Stamps are unique and increasing per cell: query's order. The fast path's clock. */
static uint64_t next_stamp(struct locks_cell *c)
{
	uint64_t t = stamp_now(), last = LD(&c->last_stamp);

	if (t <= last)
		t = last + 1;
	ST(&c->last_stamp, t);
	return t;
}

/* Does req @r belong to cell @c (index @ci) as it is now named? */
static inline bool req_of(const struct locks_req *r, const struct locks_cell *c, uint32_t ci)
{
	return LD(&r->cell) == ci && LD(&r->gen) == LD(&c->gen);
}

/*
 * Make pending req @r's word name @id, keeping the waiters bit (and
 * dropping the died bit the kernel may have set). True when it changed.
 */
static bool name_word(struct locks_req *r, uint64_t id)
{
	uint64_t w = LD(&r->word);
	uint32_t failed = 0;

	for (;;) {
		uint64_t nw = id | (w & WAITERS);

		if (w == nw)
			return false;
		if (CAS(&r->word, &w, nw, __ATOMIC_RELAXED))
			return true;
		if (syncmem__too_many(&failed))
			return true;
	}
}

/*
 * A process id read from the manager, as it is named and matched: an id the
 * kernel may have issued, else SYNCMEM_OWNER_GONE (dead to the kernel), so
 * that whatever a peer wrote is recovered like a dead process's.
 */
static inline uint64_t norm_id(uint64_t id)
{
	return syncmem__locks_id(id);
}

/* The process of a slot's owner word (claimed or not); 0 for a free slot. */
static inline uint64_t slot_id(uint64_t owner)
{
	return owner ? norm_id(owner & ~SLOT_CLAIMING) : 0;
}

/* Is @id alive? 1, 0, or -errno. Ids no library writes count as dead. */
static int alive(struct syncmem_locks *m, uint64_t id)
{
	if (!id || id >= SYNCMEM_OWNER_NOBODY)
		return id == SYNCMEM_OWNER_NOBODY;
	return syncmem__owner_alive(m->r->fd, id);
}

static void recover(struct syncmem_locks *m, struct locks_cell *c, uint64_t dead);

/*
 * Who keeps the head @r of @c's queue from being granted: a process id, 0
 * when nobody (a claim taken back meanwhile). @prefer: the id its word
 * names now, kept if it still blocks.
 */
static uint64_t blocker(struct syncmem_locks *m, struct locks_cell *c, struct locks_req *r,
			uint64_t prefer)
{
	uint64_t x = LDS(&c->excl), first = 0;
	struct locks_req *xr = req_at(m, lo32(x));

	if (lo32(x)) {
		uint64_t id = norm_id(xr ? LD(&xr->client) : 0);

		if (id == prefer)
			return id;
		first = id;
	}
	if (LD(&r->flags) & REQ_SHARED)
		return first;
	for (int i = 0; i < LOCKS_SLOTS; i++) {
		struct locks_slot *s = &c->slot[i];
		uint64_t v = LDS(&s->count), o = slot_id(LD(&s->owner));

		if (!lo32(v))
			continue;
		if (!o) {
			/* Shares of no process: not this library's (slots are claimed first). */
			CAS(&s->count, &v, mk64(hi32(v), 0), __ATOMIC_RELAXED);
			continue;
		}
		if (o == prefer)
			return o;
		if (!first)
			first = o;
	}
	for (uint32_t i = LD(&c->shead), steps = 0; i && steps < m->max_reqs; steps++) {
		struct locks_req *s = req_at(m, i);
		uint64_t id;

		if (!s)
			break;
		id = norm_id(LD(&s->client));
		if (id == prefer)
			return id;
		if (!first)
			first = id;
		i = LD(&s->next);
	}
	return first;
}

/* A grant was made to req @r: record it and wake its requester. */
static void grant_done(struct syncmem_locks *m, struct locks_cell *c, struct locks_req *r,
		       uint32_t epoch, uint32_t flags)
{
	uint64_t w;

	if (LD(&c->died)) {
		flags |= REQ_DIED;
		ST(&c->died, 0u);
		__atomic_fetch_and(&c->closed, ~CLOSED_DIED, __ATOMIC_SEQ_CST);
	}
	ST(&r->stamp, next_stamp(c));
	ST(&r->epoch, epoch);
	ST(&r->flags, LD(&r->flags) | flags);
	/* Release: a requester that sees HELD sees the grant's fields. */
	STR(&r->state, (uint32_t)REQ_HELD);
	/* After the state: a requester that reads 0 here finds it HELD. */
	w = __atomic_exchange_n(&r->word, 0ull, __ATOMIC_ACQ_REL);
	if (w & WAITERS)
		syncmem_notify(m->r, &r->word, SYNCMEM_ALL);
}

/*
 * Grant the head @r of @c's queue if it is compatible with what is held: 1
 * granted, 0 not now, -EUCLEAN. @excl and the counts are read sequentially
 * consistent, after CLOSED_QUEUE was set: every hold that a fast path
 * believes in is seen, and every claim made later is taken back (it sees
 * the bit). Claims on their way back may be seen too: their takers kick
 * the queue once they are gone.
 */
static int grant_head(struct syncmem_locks *m, struct locks_cell *c, struct locks_req *r)
{
	uint64_t x = LDS(&c->excl);
	uint32_t ri = req_index(m, r);

	if (lo32(x))
		return 0;
	if (LD(&r->flags) & REQ_SHARED) {
		if (list_remove(m, &c->qhead, &c->qtail, r))
			return -EUCLEAN;
		list_append(m, &c->shead, &c->stail, r);
		__atomic_fetch_or(&c->closed, CLOSED_SLOW, __ATOMIC_SEQ_CST);
		grant_done(m, c, r, hi32(x), REQ_SLOW);
		return 1;
	}
	if (LD(&c->shead) || slots_busy(c))
		return 0;
	if (!CAS(&c->excl, &x, mk64(hi32(x), ri + 1), __ATOMIC_SEQ_CST))
		return 0;
	if (list_remove(m, &c->qhead, &c->qtail, r)) {
		excl_undo(c, hi32(x), ri);
		return -EUCLEAN;
	}
	grant_done(m, c, r, hi32(x), 0);
	return 1;
}

static int cell_rebuild(struct syncmem_locks *m, struct locks_cell *c);

/*
 * Under @m: grant what the queue's head allows, then make the new head's
 * word name one of its blockers; a name that changed is asked about, and a
 * dead one recovered. @fresh: a req just queued (its requester is not
 * asleep: its own wait asks). 0 or -errno.
 */
static int cell_process(struct syncmem_locks *m, struct locks_cell *c, uint32_t fresh)
{
	uint32_t ci = cell_index(m, c), failed = 0;
	bool rebuilt = false;

	for (uint64_t steps = 0; steps <= (uint64_t)m->max_reqs * 2 + 16; steps++) {
		struct locks_req *r = req_at(m, LD(&c->qhead));
		uint64_t id;
		int ret;

		if (!LD(&c->qhead)) {
			__atomic_fetch_and(&c->closed, ~CLOSED_QUEUE, __ATOMIC_SEQ_CST);
			/* A request queued meanwhile sets it again under @m: none can be. */
			return 0;
		}
		if (!r || LD(&r->state) != REQ_PENDING || !req_of(r, c, ci)) {
			ret = -EUCLEAN;
		} else {
			ret = grant_head(m, c, r);
			if (ret > 0)
				continue;
		}
		if (ret == -EUCLEAN) {
			if (rebuilt)
				return ret;
			rebuilt = true;
			ret = cell_rebuild(m, c);
			if (ret)
				return ret;
			continue;
		}
		id = blocker(m, c, r, LD(&r->word) & OWNER_ID);
		if (!id) {
			/* A claim was taken back just now: look again. */
			if (syncmem__too_many(&failed))
				return -EUCLEAN;
			continue;
		}
		if (!name_word(r, id) || req_index(m, r) == fresh)
			return 0;
		ret = alive(m, id);
		if (ret < 0)
			return ret;
		if (ret)
			return 0;
		recover(m, c, id);
	}
	return -EUCLEAN;
}

/*
 * Under @m: make every pending request's word name whom it waits for (the
 * client of the request ahead; the head: a blocker), recover the dead ones
 * found, and grant what can be. 0 or -errno.
 */
static int cell_settle(struct syncmem_locks *m, struct locks_cell *c)
{
	for (uint32_t pass = 0; pass < 64; pass++) {
		uint32_t i = LD(&c->qhead);
		bool again = false;
		int ret = cell_process(m, c, UINT32_MAX);

		if (ret)
			return ret;
		i = LD(&c->qhead);
		for (uint32_t steps = 0; i && steps < m->max_reqs; steps++) {
			struct locks_req *r = req_at(m, i), *p;
			uint64_t id;

			if (!r)
				return -EUCLEAN;
			p = req_at(m, LD(&r->prev));
			if (p) {
				id = norm_id(LD(&p->client));
				if (name_word(r, id)) {
					ret = alive(m, id);
					if (ret < 0)
						return ret;
					if (!ret) {
						recover(m, c, id);
						again = true;
						break;
					}
				}
			}
			i = LD(&r->next);
		}
		if (!again)
			return 0;
	}
	return -EUCLEAN;
}

/* ---- Recovery ------------------------------------------------------------ */

/*
 * Under @m: everything dead process @dead held or asked for in @c goes.
 * Its exclusive hold, if its requester knew of it, is reported to the next
 * grant. Its reqs of other cells are left to those cells (and the sweep).
 */
static void recover(struct syncmem_locks *m, struct locks_cell *c, uint64_t dead)
{
	uint32_t ci = cell_index(m, c);
	uint64_t x;

	for (int i = 0; i < LOCKS_SLOTS; i++) {
		struct locks_slot *s = &c->slot[i];
		uint64_t o = LD(&s->owner), v;
		uint32_t failed = 0;

		if (!o || slot_id(o) != dead || !CAS(&s->owner, &o, SLOT_NOBODY, __ATOMIC_ACQUIRE))
			continue;
		v = LD(&s->count);
		while (lo32(v) && !CAS(&s->count, &v, mk64(hi32(v), 0), __ATOMIC_SEQ_CST))
			if (syncmem__too_many(&failed))
				break;
		/* Nobody counts in it: its bit goes before anyone can claim it again. */
		__atomic_fetch_and(&c->slots_used, ~(1u << i), __ATOMIC_SEQ_CST);
		/* Release: the count is 0 before anyone can claim the slot. */
		STR(&s->owner, 0ull);
	}
	x = LDS(&c->excl);
	if (lo32(x)) {
		struct locks_req *xr = req_at(m, lo32(x));

		if (norm_id(xr ? LD(&xr->client) : 0) == dead) {
			bool knew = xr && (LD(&xr->flags) & REQ_PICKED);

			if (CAS(&c->excl, &x, mk64(hi32(x), 0), __ATOMIC_SEQ_CST) && knew) {
				ST(&c->died, 1u);
				__atomic_fetch_or(&c->closed, CLOSED_DIED, __ATOMIC_SEQ_CST);
			}
		}
	}
	/* Its queued requests and slow shares leave their lists; then its reqs are freed. */
	for (uint32_t i = 0; i < m->max_reqs; i++) {
		struct locks_req *r = &m->reqs[i];
		uint32_t st = LD(&r->state);

		if (st == REQ_FREE || norm_id(LD(&r->client)) != dead)
			continue;
		if (st == REQ_CACHED || st == REQ_TAKEN) {
			uint32_t seen = st;

			if (CAS(&r->state, &seen, (uint32_t)REQ_FREE, __ATOMIC_ACQUIRE))
				req_free(m, i);
			continue;
		}
		if (LD(&r->cell) != ci)
			continue;
		/* Out of its list first: a rebuild then leaves it out. */
		ST(&r->state, (uint32_t)REQ_TAKEN);
		if (st == REQ_PENDING && req_of(r, c, ci)) {
			if (list_remove(m, &c->qhead, &c->qtail, r))
				cell_rebuild(m, c);
		} else if (st == REQ_HELD && (LD(&r->flags) & REQ_SLOW) && req_of(r, c, ci)) {
			if (list_remove(m, &c->shead, &c->stail, r))
				cell_rebuild(m, c);
		}
		req_free(m, i);
	}
	if (!LD(&c->shead))
		__atomic_fetch_and(&c->closed, ~CLOSED_SLOW, __ATOMIC_SEQ_CST);
}

struct stamped {
	uint64_t stamp;
	uint32_t req;
};

static int stamped_cmp(const void *a, const void *b)
{
	const struct stamped *x = a, *y = b;

	if (x->stamp != y->stamp)
		return x->stamp < y->stamp ? -1 : 1;
	return x->req < y->req ? -1 : x->req > y->req;
}

/*
 * Under @m: rebuild @c's queue and slow list from the states of its reqs
 * (pending ones in stamp order), finish a grant into @excl that a dead
 * granter left, undo half a steal, and reset @closed. 0 or -ENOMEM.
 */
static int cell_rebuild(struct syncmem_locks *m, struct locks_cell *c)
{
	uint32_t ci = cell_index(m, c), gen = LD(&c->gen), nq = 0, ns = 0;
	struct stamped *q, *s;
	uint64_t x = LD(&c->excl);
	uint32_t e = hi32(x);
	struct locks_req *xr = req_at(m, lo32(x));

	q = malloc(sizeof(*q) * m->max_reqs);
	s = malloc(sizeof(*s) * m->max_reqs);
	if (!q || !s) {
		free(q);
		free(s);
		return -ENOMEM;
	}
	/* @excl names a req: a holder of this cell, or a grant left half done. */
	if (xr && LD(&xr->cell) == ci && LD(&xr->gen) == gen && LD(&xr->state) == REQ_PENDING) {
		ST(&xr->epoch, e);
		ST(&xr->stamp, next_stamp(c));
		STR(&xr->state, (uint32_t)REQ_HELD);
		if (__atomic_exchange_n(&xr->word, 0ull, __ATOMIC_ACQ_REL) & WAITERS)
			syncmem_notify(m->r, &xr->word, SYNCMEM_ALL);
	} else if (lo32(x) && (!xr || LD(&xr->cell) != ci ||
			       (LD(&xr->state) != REQ_HELD && LD(&xr->state) != REQ_FAST))) {
		CAS(&c->excl, &x, mk64(e, 0), __ATOMIC_SEQ_CST);
	}
	for (uint32_t i = 0; i < m->max_reqs; i++) {
		struct locks_req *r = &m->reqs[i];
		uint32_t st = LD(&r->state);

		if (LD(&r->cell) != ci || LD(&r->gen) != gen)
			continue;
		if (st == REQ_PENDING)
			q[nq++] = (struct stamped){ LD(&r->stamp), i };
		else if (st == REQ_HELD && LD(&r->epoch) != e)
			ST(&r->state, (uint32_t)REQ_STOLEN);	/* a steal left half done */
		else if (st == REQ_HELD && (LD(&r->flags) & REQ_SLOW))
			s[ns++] = (struct stamped){ LD(&r->stamp), i };
	}
	qsort(q, nq, sizeof(*q), stamped_cmp);
	qsort(s, ns, sizeof(*s), stamped_cmp);
	ST(&c->qhead, 0u);
	ST(&c->qtail, 0u);
	ST(&c->shead, 0u);
	ST(&c->stail, 0u);
	for (uint32_t i = 0; i < nq; i++)
		list_append(m, &c->qhead, &c->qtail, &m->reqs[q[i].req]);
	for (uint32_t i = 0; i < ns; i++)
		list_append(m, &c->shead, &c->stail, &m->reqs[s[i].req]);
	free(q);
	free(s);
	for (int i = 0; i < LOCKS_SLOTS; i++) {
		struct locks_slot *sl = &c->slot[i];
		uint64_t v = LD(&sl->count);

		if (LD(&sl->owner) == SLOT_NOBODY) {
			ST(&sl->count, mk64(e, 0));
			__atomic_fetch_and(&c->slots_used, ~(1u << i), __ATOMIC_SEQ_CST);
			STR(&sl->owner, 0ull);
		} else if (hi32(v) != e) {
			/* Shares a steal was zeroing: they were stolen. */
			CAS(&sl->count, &v, mk64(e, 0), __ATOMIC_SEQ_CST);
		}
		/* A claimed slot has its bit (a claimer that died part-way, a peer's scribble). */
		if (LD(&sl->owner))
			__atomic_fetch_or(&c->slots_used, 1u << i, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&c->closed, (LD(&c->qhead) ? CLOSED_QUEUE : 0) |
			 (LD(&c->shead) ? CLOSED_SLOW : 0) | (LD(&c->died) ? CLOSED_DIED : 0),
			 __ATOMIC_SEQ_CST);
	return 0;
}

/* The mutex's last holder died in it: rebuild, then settle (the dead are found). */
static int cell_repair(struct syncmem_locks *m, struct locks_cell *c)
{
	int ret = cell_rebuild(m, c);

	return ret ? ret : cell_settle(m, c);
}

/* ---- Cells --------------------------------------------------------------- */

/*
 * Under @c's mutex: is @c idle (nothing held or queued)? When it is, it is
 * left with CLOSED_BUSY set, so that no fast path gets in: the caller
 * changes its name, then clears the bit.
 */
static bool cell_idle(struct locks_cell *c, bool died_ok)
{
	/* Sequentially consistent: a fast path that counted itself in sees the bit. */
	__atomic_fetch_or(&c->closed, CLOSED_BUSY, __ATOMIC_SEQ_CST);
	if (!lo32(LDS(&c->excl)) && !slots_busy(c) && !LD(&c->qhead) && !LD(&c->shead) &&
	    (died_ok || !LD(&c->died)))
		return true;
	__atomic_fetch_and(&c->closed, ~CLOSED_BUSY, __ATOMIC_SEQ_CST);
	return false;
}

/*
 * Under @table and @c's mutex, @c idle: give it the name of @a. The order
 * keeps the chains usable wherever the renamer dies: the gen goes odd, the
 * cell leaves its chain, the name changes, the gen goes even, it joins
 * the new chain.
 */
static void cell_rename(struct syncmem_locks *m, struct locks_cell *c, const struct locks_ask *a)
{
	uint64_t *w = (uint64_t *)c->name;
	uint32_t g = LD(&c->gen);

	ST(&c->gen, g | 1);
	if (LD(&c->len))
		chain_unlink(m, c);
	/* Releases: a lookup that reads any of them sees the odd gen after. */
	STR(&c->hash, a->hash);
	STR(&c->len, a->len);
	for (uint32_t i = 0; i * 8 < a->len; i++) {
		uint64_t x = 0;

		memcpy(&x, (const uint8_t *)a->name + i * 8, a->len - i * 8 < 8 ? a->len - i * 8 : 8);
		STR(&w[i], x);
	}
	ST(&c->died, 0u);
	ST(&c->ref, 1u);
	/* Release: a lookup that sees this gen sees the name. */
	STR(&c->gen, (g | 1) + 1);
	chain_link(m, c);
	__atomic_fetch_and(&c->closed, ~(CLOSED_BUSY | CLOSED_DIED), __ATOMIC_SEQ_CST);
}

/*
 * Under @table: a cell for the name of @a, renamed, its mutex held: one
 * never used, else an idle one the clock finds. NULL: none (*@err says
 * why: -ENOSPC, or the mutex's error).
 */
static struct locks_cell *cell_claim(struct syncmem_locks *m, const struct locks_ask *a, int *err)
{
	uint32_t used = LD(&m->h->used_cells);

	*err = -ENOSPC;
	if (used < m->max_names) {
		struct locks_cell *c = &m->cells[used];

		*err = cell_lock(m, c);
		if (*err)
			return NULL;
		ST(&m->h->used_cells, used + 1);
		if (cell_idle(c, true)) {
			cell_rename(m, c, a);
			return c;
		}
		cell_unlock(m, c);
		*err = -EUCLEAN;	/* a cell never handed out is in use */
		return NULL;
	}
	/* Second chance, then died cells too (their report is lost with their name). */
	for (uint32_t pass = 0; pass < 3; pass++) {
		for (uint32_t k = 0; k < m->max_names; k++) {
			uint32_t i = LD(&m->h->hand) % m->max_names;
			struct locks_cell *c = &m->cells[i];

			ST(&m->h->hand, (i + 1) % m->max_names);
			if (pass == 0 && LD(&c->ref)) {
				ST(&c->ref, 0u);
				continue;
			}
			if (lo32(LD(&c->excl)) || LD(&c->qhead) || LD(&c->shead) ||
			    (pass < 2 && LD(&c->died)))
				continue;
			*err = cell_lock(m, c);
			if (*err)
				return NULL;
			if (cell_idle(c, pass == 2)) {
				cell_rename(m, c, a);
				return c;
			}
			cell_unlock(m, c);
		}
	}
	*err = -ENOSPC;
	return NULL;
}

/*
 * The cell named @a, created if need be, with its mutex held: 0 and *@out,
 * -ENOSPC, or -errno.
 */
static int cell_get(struct syncmem_locks *m, const struct locks_ask *a, struct locks_cell **out)
{
	bool swept = false;

	for (uint32_t tries = 0; tries < 64; tries++) {
		struct locks_cell *c;
		uint32_t g;
		int err;

		c = lookup(m, a, &g);
		if (c) {
			err = cell_lock(m, c);
			if (err)
				return err;
			/* Renames take the mutex: under it the gen says whether the name stayed. */
			if (LDA(&c->gen) == g) {
				*out = c;
				return 0;
			}
			cell_unlock(m, c);
			continue;
		}
		err = table_lock(m);
		if (err)
			return err;
		/* Under @table no name changes: a miss is a miss. */
		c = lookup(m, a, &g);
		if (c) {
			err = cell_lock(m, c);
			table_unlock(m);
			if (err)
				return err;
			*out = c;
			return 0;
		}
		c = cell_claim(m, a, &err);
		table_unlock(m);
		if (c) {
			*out = c;
			return 0;
		}
		if (err != -ENOSPC || swept)
			return err;
		/* Cells held by dead processes, freed; then once more. */
		swept = true;
		err = sweep(m, false);
		if (err < 0)
			return err;
	}
	return -EUCLEAN;
}

/* ---- The sweep ----------------------------------------------------------- */

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static bool id_in(const uint64_t *ids, size_t n, uint64_t id)
{
	return bsearch(&id, ids, n, sizeof(*ids), id_cmp) != NULL;
}

/*
 * Free everything of processes @dead (sorted) in the whole manager; with
 * @take_cached also the reqs live threads keep for later.
 */
static void forget(struct syncmem_locks *m, const uint64_t *dead, size_t nd, bool take_cached);

/*
 * Free everything of dead processes in the whole manager (one question to
 * the kernel per distinct process); with @take_cached also the reqs live
 * threads keep for later. The number of dead processes, or -errno.
 */
static int sweep(struct syncmem_locks *m, bool take_cached)
{
	/* Bounded before it sizes anything: a peer may have written any count. */
	uint32_t used = LD(&m->h->used_cells);
	size_t cap, n = 0, nd = 0;
	uint64_t *ids, *dead;
	int ret = 0;

	if (used > m->max_names)
		used = m->max_names;
	cap = (size_t)m->max_reqs + (size_t)used * LOCKS_SLOTS;
	/* Ids sorted: the dead ones, written over the front, stay sorted. */
	ids = malloc(sizeof(*ids) * cap);
	if (!ids)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->max_reqs && n < cap; i++) {
		if (LD(&m->reqs[i].state) != REQ_FREE)
			ids[n++] = norm_id(LD(&m->reqs[i].client));
	}
	for (uint32_t i = 0; i < used; i++)
		for (int k = 0; k < LOCKS_SLOTS && n < cap; k++) {
			uint64_t o = slot_id(LD(&m->cells[i].slot[k].owner));

			if (o && lo32(LD(&m->cells[i].slot[k].count)))
				ids[n++] = o;
		}
	qsort(ids, n, sizeof(*ids), id_cmp);
	/* Distinct ids, the dead ones moved to the front. */
	dead = ids;
	for (size_t i = 0; i < n; i++) {
		int a;

		if (i && ids[i] == ids[i - 1])
			continue;
		a = alive(m, ids[i]);
		if (a < 0) {
			ret = a;
			break;
		}
		if (!a)
			dead[nd++] = ids[i];
	}
	if (!ret)
		forget(m, dead, nd, take_cached);
	free(ids);
	return ret < 0 ? ret : (int)nd;
}

void syncmem__locks_forget(struct syncmem_locks *m, const uint64_t *dead, size_t nd)
{
	forget(m, dead, nd, false);
}

static void forget(struct syncmem_locks *m, const uint64_t *dead, size_t nd, bool take_cached)
{
	uint32_t used = LD(&m->h->used_cells);

	if (used > m->max_names)
		used = m->max_names;
	for (uint32_t i = 0; i < m->max_reqs; i++) {
		struct locks_req *r = &m->reqs[i];
		uint32_t st = LD(&r->state);
		uint64_t id = norm_id(LD(&r->client));
		struct locks_cell *c;

		if (st == REQ_FREE)
			continue;
		if (st == REQ_CACHED || st == REQ_TAKEN) {
			uint32_t seen = st;

			if ((id_in(dead, nd, id) || (take_cached && st == REQ_CACHED)) &&
			    CAS(&r->state, &seen, (uint32_t)REQ_FREE, __ATOMIC_ACQUIRE))
				req_free(m, i);
			continue;
		}
		if (!id_in(dead, nd, id))
			continue;
		c = cell_at(m, LD(&r->cell) + 1);
		if (!c || cell_lock(m, c))
			continue;
		recover(m, c, id);
		cell_settle(m, c);
		cell_unlock(m, c);
	}
	for (uint32_t i = 0; i < used; i++) {
		struct locks_cell *c = &m->cells[i];
		bool found = false;

		for (int k = 0; k < LOCKS_SLOTS; k++)
			if (id_in(dead, nd, slot_id(LD(&c->slot[k].owner))) &&
			    lo32(LD(&c->slot[k].count)))
				found = true;
		if (!found || cell_lock(m, c))
			continue;
		for (int k = 0; k < LOCKS_SLOTS; k++) {
			uint64_t o = slot_id(LD(&c->slot[k].owner));

			if (o && id_in(dead, nd, o))
				recover(m, c, o);
		}
		cell_settle(m, c);
		cell_unlock(m, c);
	}
}

/* ---- Requests ------------------------------------------------------------ */

/* Fill the handle @h of req @ri, granted. */
static void held_fill(struct syncmem_locks *m, struct syncmem_held *h, uint32_t ri)
{
	struct locks_req *r = &m->reqs[ri];
	uint32_t flags = LD(&r->flags), cell = LD(&r->cell);

	*h = (struct syncmem_held){
		.m = m,
		/* Read from shared memory: bounded here, a scribbled one is released as -EUCLEAN. */
		.c = cell < m->max_names ? &m->cells[cell] : NULL,
		.r = r,
		.client = LD(&r->client),
		.req = ri,
		.seq = LD(&r->seq),
		.cell = cell,
		.gen = LD(&r->gen),
		.epoch = LD(&r->epoch),
		.slot = (flags & (REQ_SHARED | REQ_SLOW)) == REQ_SHARED ? LD(&r->slot) : LOCKS_NO_SLOT,
		.flags = flags & (REQ_SHARED | REQ_SLOW),
	};
}

/*
 * The key of a name in a thread's cache: its bytes when it has at most 8
 * (then the key is the name), else its first 8 bytes mixed with its last
 * 8 (then the rest is compared with the cell's).
 */
static inline uint64_t name_key(const struct locks_ask *a)
{
	const uint8_t *p = a->name;
	uint64_t last;

	if (a->len <= 8)
		return name_w0(p, a->len);
	memcpy(&last, p + a->len - 8, 8);
	return name_w0(p, 8) ^ (last * 0x9e3779b97f4a7c15ull);
}

/*
 * This thread's entry for the name of @a (keyed by @key), or NULL. A hit
 * needs no hash and no lookup: the cell and gen it recorded are checked
 * against the cell (a rename changes the gen) by the caller.
 */
static inline struct tc_name *tc_name_find(struct locks_tc *tc, const struct locks_ask *a,
					   uint64_t key)
{
	for (int i = 0; i < TC_NAMES; i++) {
		struct tc_name *nm = &tc->names[i];

		if (nm->len == a->len && nm->w0 == key &&
		    (a->len <= 8 || name_bytes_from(nm->c, a, 8)))
			return nm;
	}
	return NULL;
}

/*
 * The fast path: a recently used name, nothing queued or changing, no
 * conflicting hold. 1 granted (*@out), 0 take the slow path, -errno.
 *
 * The common case costs: the thread's cache entry of the name (no hash),
 * a free handle of the thread (no malloc), the thread's kept req, one
 * clock read for the grant's stamp, and the grant itself: for a share,
 * one add to its process's own slot and three loads of line 0 of the
 * cell; for an exclusive lock, one compare-and-swap of @excl and the
 * counts of the claimed slots only (@slots_used).
 */
static inline __attribute__((always_inline)) int locks_fast(struct syncmem_locks *m,
							    struct locks_ask *a,
							    struct syncmem_held **out)
{
	uint64_t me = syncmem__process_owner_cached(), key;
	bool shared = a->flags & SYNCMEM_LOCKS_SHARED;
	struct locks_slot *s = NULL;
	struct syncmem_held *h;
	struct locks_cell *c;
	struct locks_req *r;
	struct locks_tc *tc;
	struct tc_name *nm;
	uint32_t g, ri, si = LOCKS_NO_SLOT, epoch, seq, cached = REQ_CACHED;
	int ret;

	if (__builtin_expect(!me, 0))
		return 0;
	tc = tc_of(m, me);
	key = name_key(a);
	nm = tc_name_find(tc, a, key);
	/* A cell renamed since (its gen moved) is looked up again. */
	if (__builtin_expect(!nm || LD(&nm->c->gen) != nm->gen, 0)) {
		ask_hash(m, a);
		c = lookup(m, a, &g);
		if (!c)
			return 0;
		if (!nm)
			nm = &tc->names[tc->victim++ % TC_NAMES];
		*nm = (struct tc_name){ .w0 = key, .c = c, .len = a->len,
					.cell = cell_index(m, c), .gen = g, .slot = LOCKS_NO_SLOT };
	}
	c = nm->c;
	g = nm->gen;
	if (shared) {
		/* Shares granted from the queue (CLOSED_SLOW) keep out exclusive requests only. */
		if (__builtin_expect(LD(&c->closed) & ~CLOSED_SLOW, 0))
			return 0;
		s = slot_for(c, me, nm->slot, &si);
		if (!s)
			return 0;
		nm->slot = si;
	} else if (__builtin_expect(LD(&c->closed), 0)) {
		return 0;
	}
	if (__builtin_expect(!LD(&c->ref), 0))
		ST(&c->ref, 1u);
	h = held_new();
	if (!h)
		return -ENOMEM;
	/* The thread's kept req, unless somebody short of reqs took it back. */
	r = req_at(m, tc->req1);
	tc->req1 = 0;
	if (__builtin_expect(!r || !CAS(&r->state, &cached, (uint32_t)REQ_FAST, __ATOMIC_ACQUIRE), 0)) {
		if (req_pop(m, &ri)) {
			held_dispose(h);
			return 0;
		}
		r = &m->reqs[ri];
		STR(&r->state, (uint32_t)REQ_FAST);
	}
	ri = req_index(m, r);
	seq = LD(&r->seq) + 1;
	/* All relaxed: the state's release store below publishes them to query. */
	ST(&r->client, me);
	ST(&r->cell, nm->cell);
	ST(&r->gen, g);
	ST(&r->flags, shared ? REQ_SHARED | REQ_PICKED : REQ_PICKED);
	ST(&r->prev, 0u);
	ST(&r->next, 0u);
	ST(&r->word, 0ull);
	ST(&r->slot, si);
	ST(&r->seq, seq);
	ST(&r->stamp, stamp_now());
	if (shared)
		ret = share_enter(m, c, s, g, CLOSED_SLOW, false, &epoch);
	else
		ret = excl_enter(m, c, ri, g, 0, false, &epoch);
	if (__builtin_expect(ret <= 0, 0)) {
		ST(&r->state, (uint32_t)REQ_TAKEN);
		req_put(m, ri, me);
		held_dispose(h);
		return ret;
	}
	ST(&r->epoch, epoch);
	/* Release: query sees the fields with the state. */
	STR(&r->state, (uint32_t)REQ_HELD);
	h->m = m;
	h->c = c;
	h->r = r;
	h->client = me;
	h->req = ri;
	h->seq = seq;
	h->cell = nm->cell;
	h->gen = g;
	h->epoch = epoch;
	h->slot = si;
	h->flags = shared ? REQ_SHARED : 0u;
	*out = h;
	return 1;
}

int syncmem__locks_fast(struct syncmem_locks *m, struct locks_ask *a, struct syncmem_held **out)
{
	return locks_fast(m, a, out);
}

/*
 * Under @m: free the slots of @c that name dead processes (recovering
 * everything of theirs in @c), so that processes that come and go do not
 * use up the 16 slots and send every later share to the slow list. True
 * when one was freed. A thread whose reclaim found every slot alive skips
 * the next RECLAIM_SKIP of its slot-less requests of the name (@nm): each
 * try asks the kernel about each slot's process.
 */
#define RECLAIM_SKIP	64

static bool slots_reclaim(struct syncmem_locks *m, struct locks_cell *c, struct tc_name *nm)
{
	bool freed = false;

	if (nm && nm->reclaim_skip) {
		nm->reclaim_skip--;
		return false;
	}
	for (int i = 0; i < LOCKS_SLOTS; i++) {
		uint64_t id = slot_id(LD(&c->slot[i].owner));

		if (id && alive(m, id) == 0) {
			recover(m, c, id);
			freed = true;
		}
	}
	if (!freed && nm)
		nm->reclaim_skip = RECLAIM_SKIP;
	return freed;
}

/*
 * Under @m, queue empty: grant req @ri of @me at once if compatible (shares
 * in the process's slot when it has one, else in the slow list). 1, 0, or
 * -errno.
 */
static int grant_now(struct syncmem_locks *m, struct locks_cell *c, uint32_t ri, uint64_t me)
{
	struct locks_req *r = &m->reqs[ri];
	struct locks_tc *tc = tc_of(m, me);
	uint32_t si = LOCKS_NO_SLOT, epoch, hint = LOCKS_NO_SLOT;
	struct tc_name *nm = NULL;
	int ret;

	for (int i = 0; i < TC_NAMES; i++)
		if (tc->names[i].len && tc->names[i].cell == cell_index(m, c) &&
		    tc->names[i].gen == LD(&c->gen)) {
			nm = &tc->names[i];
			hint = nm->slot;
		}

	if (LD(&r->flags) & REQ_SHARED) {
		struct locks_slot *s = slot_for(c, me, hint, &si);
		uint64_t x;

		if (!s && slots_reclaim(m, c, nm))
			s = slot_for(c, me, LOCKS_NO_SLOT, &si);

		if (s) {
			ret = share_enter(m, c, s, 1, CLOSED_DIED | CLOSED_SLOW, true, &epoch);
			if (ret <= 0)
				return ret;
			ST(&r->slot, si);
			grant_done(m, c, r, epoch, REQ_PICKED);
			return 1;
		}
		x = LDS(&c->excl);
		if (lo32(x))
			return 0;
		list_append(m, &c->shead, &c->stail, r);
		__atomic_fetch_or(&c->closed, CLOSED_SLOW, __ATOMIC_SEQ_CST);
		if (lo32(LDS(&c->excl))) {
			list_remove(m, &c->shead, &c->stail, r);
			if (!LD(&c->shead))
				__atomic_fetch_and(&c->closed, ~CLOSED_SLOW, __ATOMIC_SEQ_CST);
			return 0;
		}
		grant_done(m, c, r, hi32(x), REQ_SLOW | REQ_PICKED);
		return 1;
	}
	ret = excl_enter(m, c, ri, 1, CLOSED_DIED, true, &epoch);
	if (ret <= 0)
		return ret;
	grant_done(m, c, r, epoch, REQ_PICKED);
	return 1;
}

/*
 * Under @m: steal @c for req @ri. Every holder loses it: the epoch moves
 * on, the counts are zeroed under the new one, held reqs become STOLEN.
 */
static void steal(struct syncmem_locks *m, struct locks_cell *c, uint32_t ri)
{
	uint32_t ci = cell_index(m, c), gen = LD(&c->gen), e;
	struct locks_req *r = &m->reqs[ri];

	/* Sequentially consistent: fast paths that count themselves in now take it back. */
	__atomic_fetch_or(&c->closed, CLOSED_BUSY, __ATOMIC_SEQ_CST);
	e = hi32(LDS(&c->excl)) + 1;
	for (int i = 0; i < LOCKS_SLOTS; i++)
		__atomic_store_n(&c->slot[i].count, mk64(e, 0), __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->excl, mk64(e, ri + 1), __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < m->max_reqs; i++) {
		struct locks_req *h = &m->reqs[i];
		uint32_t held = REQ_HELD;

		if (i != ri && LD(&h->cell) == ci && LD(&h->gen) == gen)
			CAS(&h->state, &held, (uint32_t)REQ_STOLEN, __ATOMIC_RELAXED);
	}
	ST(&c->shead, 0u);
	ST(&c->stail, 0u);
	__atomic_fetch_and(&c->closed, ~(CLOSED_SLOW | CLOSED_BUSY), __ATOMIC_SEQ_CST);
	grant_done(m, c, r, e, REQ_PICKED);
}

/*
 * Under @m, a request that cannot be granted now: is what stops it alive?
 * 1 yes (busy), 0 a dead process was recovered (look again), -errno.
 */
static int blockers_alive(struct syncmem_locks *m, struct locks_cell *c, struct locks_req *r)
{
	struct locks_req *head = req_at(m, LD(&c->qhead));
	uint64_t id;
	int ret;

	if (head)
		id = norm_id(LD(&head->client));
	else
		id = blocker(m, c, r, 0);
	if (!id)
		return 0;
	ret = alive(m, id);
	if (ret != 0)
		return ret;
	recover(m, c, id);
	return cell_process(m, c, UINT32_MAX);
}

int syncmem__locks_begin(struct syncmem_locks *m, struct locks_ask *a, bool now_only,
			 uint32_t *req, struct syncmem_held **out, bool *died)
{
	bool shared = a->flags & SYNCMEM_LOCKS_SHARED;
	struct locks_cell *c = NULL;
	struct syncmem_held *h;
	struct locks_req *r;
	int64_t me = syncmem__locks_me(m);
	uint32_t ri, ci, failed = 0;
	int ret;

	if (me < 0)
		return (int)me;
	ask_hash(m, a);
	h = held_new();
	if (!h)
		return -ENOMEM;
	ret = req_take(m, (uint64_t)me, REQ_TAKEN, &ri);
	if (ret) {
		held_dispose(h);
		return ret;
	}
	ret = cell_get(m, a, &c);
	if (ret) {
		req_put(m, ri, (uint64_t)me);
		held_dispose(h);
		return ret;
	}
	r = &m->reqs[ri];
	ci = cell_index(m, c);
	ST(&r->cell, ci);
	ST(&r->gen, LD(&c->gen));
	ST(&r->flags, shared ? REQ_SHARED : 0u);
	/* Claims taken back before we came may have left the queue waiting. */
	ret = cell_process(m, c, UINT32_MAX);
	if (ret)
		goto fail;
	if (a->flags & SYNCMEM_LOCKS_STEAL) {
		steal(m, c, ri);
		cell_process(m, c, UINT32_MAX);
		goto granted;
	}
	for (;;) {
		if (!LD(&c->qhead)) {
			ret = grant_now(m, c, ri, (uint64_t)me);
			if (ret < 0)
				goto fail;
			if (ret)
				goto granted;
		}
		if (!now_only)
			break;
		ret = blockers_alive(m, c, r);
		if (ret < 0)
			goto fail;
		if (ret) {
			ret = -EBUSY;
			goto fail;
		}
		if (syncmem__too_many(&failed)) {
			ret = -EUCLEAN;
			goto fail;
		}
	}
	/* Queue: CLOSED_QUEUE first, then the holds are looked at (grant_head()). */
	ST(&r->stamp, next_stamp(c));
	STR(&r->state, (uint32_t)REQ_PENDING);
	list_append(m, &c->qhead, &c->qtail, r);
	__atomic_fetch_or(&c->closed, CLOSED_QUEUE, __ATOMIC_SEQ_CST);
	{
		struct locks_req *p = req_at(m, LD(&r->prev));

		/* Behind another: it names that one's client; the head is named below. */
		ST(&r->word, p ? norm_id(LD(&p->client)) : (uint64_t)me);
	}
	ret = cell_process(m, c, ri);
	if (ret && LD(&r->state) == REQ_PENDING) {
		if (!list_remove(m, &c->qhead, &c->qtail, r))
			cell_process(m, c, UINT32_MAX);
		goto fail;
	}
	if (LD(&r->state) == REQ_HELD)
		goto granted;
	cell_unlock(m, c);
	held_dispose(h);
	*req = ri;
	return 0;

granted:
	cell_unlock(m, c);
	ST(&r->flags, LD(&r->flags) | REQ_PICKED);
	*died = LD(&r->flags) & REQ_DIED;
	held_fill(m, h, ri);
	*out = h;
	return 1;

fail:
	cell_unlock(m, c);
	ST(&r->state, (uint32_t)REQ_TAKEN);
	req_put(m, ri, (uint64_t)me);
	held_dispose(h);
	return ret;
}

static inline int held_release(const struct syncmem_held *h);

/* Req @ri is ours and granted: its handle. 1, or -ENOMEM (then it is released). */
static int take_grant(struct syncmem_locks *m, uint32_t ri, struct syncmem_held **out, bool *died)
{
	struct locks_req *r = &m->reqs[ri];
	struct syncmem_held *h = held_new();

	__atomic_fetch_or(&r->flags, REQ_PICKED, __ATOMIC_RELAXED);
	*died = LD(&r->flags) & REQ_DIED;
	if (!h) {
		struct syncmem_held tmp;

		held_fill(m, &tmp, ri);
		held_release(&tmp);
		return -ENOMEM;
	}
	held_fill(m, h, ri);
	*out = h;
	return 1;
}

int syncmem__locks_pending(struct syncmem_locks *m, uint32_t ri, uint64_t *expect,
			   struct syncmem_held **out, bool *died)
{
	struct locks_req *r = &m->reqs[ri];
	uint32_t failed = 0;

	for (;;) {
		/* The word first: a grant sets the state, then the word. */
		uint64_t w = LDA(&r->word);
		uint32_t st = LDA(&r->state);

		if (st == REQ_HELD || st == REQ_STOLEN)
			return take_grant(m, ri, out, died);
		if (st != REQ_PENDING)
			return -EUCLEAN;	/* our req was taken: not by this library */
		if ((w & OWNER_ID) &&
		    ((w & WAITERS) || CAS(&r->word, &w, w | WAITERS, __ATOMIC_RELAXED))) {
			*expect = w | WAITERS;
			return 0;
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

int syncmem__locks_woken(struct syncmem_locks *m, uint32_t ri, uint64_t expect, int result)
{
	struct locks_req *r = &m->reqs[ri];
	struct locks_cell *c = cell_at(m, LD(&r->cell) + 1);
	uint64_t id = expect & OWNER_ID, me = LD(&r->client);
	int ret;

	if (result != SYNCMEM_WAIT_OWNER_DIED && result != SYNCMEM_WAIT_HANDED_OFF)
		return 0;
	if (!c)
		return -EUCLEAN;
	ret = cell_lock(m, c);
	if (ret)
		return ret;
	if (LD(&r->state) == REQ_PENDING) {
		/* The process our word named died (or a wake-up was passed to us). */
		if (id != me && alive(m, id) == 0)
			recover(m, c, id);
		/* Every word of the queue names someone alive again. */
		ST(&r->word, (LD(&r->word) & WAITERS) | me);
		ret = cell_settle(m, c);
	}
	cell_unlock(m, c);
	return ret;
}

int syncmem__locks_give_up(struct syncmem_locks *m, uint32_t ri, int err,
			   struct syncmem_held **out, bool *died)
{
	struct locks_req *r = &m->reqs[ri];
	struct locks_cell *c = cell_at(m, LD(&r->cell) + 1);
	uint64_t me = LD(&r->client);
	uint32_t st;
	int ret;

	if (!c)
		return -EUCLEAN;
	ret = cell_lock(m, c);
	if (ret)
		return ret;
	st = LD(&r->state);
	if (st == REQ_HELD || st == REQ_STOLEN) {
		/* Granted meanwhile: the grant stands. */
		cell_unlock(m, c);
		return take_grant(m, ri, out, died);
	}
	if (st == REQ_PENDING) {
		/* Out of the queue: a rebuild then leaves it out too. */
		ST(&r->state, (uint32_t)REQ_TAKEN);
		if (list_remove(m, &c->qhead, &c->qtail, r))
			cell_rebuild(m, c);
		/* The next request is considered at once. */
		cell_settle(m, c);
	}
	cell_unlock(m, c);
	if (st == REQ_PENDING)
		req_put(m, ri, me);
	return err;
}

int syncmem__locks_cancel(struct syncmem_locks *m, uint32_t ri)
{
	struct locks_req *r = &m->reqs[ri];
	struct locks_cell *c = cell_at(m, LD(&r->cell) + 1);
	int ret;

	if (!c)
		return -EUCLEAN;
	ret = cell_lock(m, c);
	if (ret)
		return ret;
	if (LD(&r->state) != REQ_PENDING) {
		cell_unlock(m, c);
		return -ENOENT;		/* granted: the grant stands */
	}
	ST(&r->state, (uint32_t)REQ_TAKEN);
	if (list_remove(m, &c->qhead, &c->qtail, r))
		cell_rebuild(m, c);
	/* The next request of the name is considered at once. */
	cell_settle(m, c);
	cell_unlock(m, c);
	/* Its own wait (the caller's), woken to learn it. */
	if (__atomic_exchange_n(&r->word, 0ull, __ATOMIC_ACQ_REL) & WAITERS)
		syncmem_notify(m->r, &r->word, SYNCMEM_ALL);
	return 0;
}

void syncmem__locks_drop(struct syncmem_locks *m, uint32_t ri)
{
	req_put(m, ri, syncmem__process_owner_cached());
}

/* Polls of a queued request's state before its requester goes to sleep. */
#define LOCKS_SPIN	100

/*
 * Watch queued request @r for a short while before sleeping: the holds
 * ahead of it are often over sooner than a sleep and a wake-up, and a
 * grant to a requester that has not set the waiters bit of its word wakes
 * nobody: neither side makes a system call. The request keeps its place
 * in the queue meanwhile, so spinning barges ahead of nobody.
 */
static void locks_spin(struct locks_req *r)
{
	for (int i = 0; i < LOCKS_SPIN && LDA(&r->state) == REQ_PENDING; i++)
		cpu_relax();
}

/* The slow part of syncmem_locks_request(): queue, wait, give up. */
static __attribute__((noinline)) int request_wait(struct syncmem_locks *m, struct locks_ask *a,
						  int64_t timeout_ns, struct syncmem_held **out)
{
	bool now_only = (a->flags & SYNCMEM_LOCKS_IF_AVAILABLE) || !timeout_ns;
	uint64_t deadline, expect = 0;
	uint32_t ri, changed = 0;
	bool died = false;
	int64_t me;
	int ret;

	/* Only now: the fast path never waits, and mostly needs no clock. */
	deadline = syncmem__deadline(timeout_ns);
	ret = syncmem__locks_begin(m, a, now_only, &ri, out, &died);
	if (ret == -EBUSY && !(a->flags & SYNCMEM_LOCKS_IF_AVAILABLE))
		return -ETIMEDOUT;
	if (ret)
		return ret < 0 ? ret : died ? -EOWNERDEAD : 0;
	me = syncmem__locks_me(m);
	if (me < 0)
		return syncmem__locks_give_up(m, ri, (int)me, out, &died);
	locks_spin(&m->reqs[ri]);
	for (;;) {
		int w;

		ret = syncmem__locks_pending(m, ri, &expect, out, &died);
		if (ret)
			break;
		w = syncmem__lock_wait(m->r, &m->reqs[ri].word, expect, (uint64_t)me, deadline, 0);
		/* A wait that never sleeps (a death each time) still ends at the deadline. */
		if (w == SYNCMEM_WAIT_TIMED_OUT || w < 0 ||
		    (deadline != SYNCMEM_NO_DEADLINE && !syncmem__remaining(deadline))) {
			ret = syncmem__locks_give_up(m, ri, w < 0 ? w : -ETIMEDOUT, out, &died);
			break;
		}
		/* Woken by deaths without end: the queue names processes that are not. */
		if (syncmem__keeps_changing(w == SYNCMEM_WAIT_WOKEN ? 0 : SYNCMEM_WAIT_NOT_EQUAL,
					    &changed)) {
			ret = syncmem__locks_give_up(m, ri, -EUCLEAN, out, &died);
			break;
		}
		ret = syncmem__locks_woken(m, ri, expect, w);
		if (ret) {
			ret = syncmem__locks_give_up(m, ri, ret, out, &died);
			break;
		}
	}
	if (ret == 1)
		return died ? -EOWNERDEAD : 0;
	return ret;
}

int syncmem_locks_request(struct syncmem_locks *m, const void *name, size_t len,
			  unsigned flags, int64_t timeout_ns, struct syncmem_held **out)
{
	struct locks_ask a;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	ret = syncmem__locks_check(m, name, len, flags, &a);
	if (ret)
		return ret;
	if (!(flags & SYNCMEM_LOCKS_STEAL)) {
		ret = locks_fast(m, &a, out);
		if (__builtin_expect(ret != 0, 1))
			return ret > 0 ? 0 : ret;
	}
	return request_wait(m, &a, timeout_ns, out);
}

/* ---- Release ------------------------------------------------------------- */

/* Release a lock granted into the slow list (under @m): 0 or -errno. */
static int slow_release(struct syncmem_locks *m, const struct syncmem_held *h,
			struct locks_cell *c, struct locks_req *r)
{
	int ret = cell_lock(m, c);

	if (ret)
		return ret;
	if (LD(&r->state) == REQ_STOLEN) {
		ret = -ECONNABORTED;
	} else if (LD(&r->state) != REQ_HELD || !req_of(r, c, h->cell)) {
		ret = -EUCLEAN;
	} else {
		if (list_remove(m, &c->shead, &c->stail, r))
			cell_rebuild(m, c);
		if (!LD(&c->shead))
			__atomic_fetch_and(&c->closed, ~CLOSED_SLOW, __ATOMIC_SEQ_CST);
		ret = cell_process(m, c, UINT32_MAX);
	}
	cell_unlock(m, c);
	return ret;
}

/* Take back a share of slot @s counted under @epoch: 0, -ECONNABORTED (stolen), -EUCLEAN. */
static int share_release(struct locks_slot *s, uint32_t epoch)
{
	uint64_t v = LD(&s->count);
	uint32_t failed = 0;

	for (;;) {
		if (hi32(v) != epoch)
			return -ECONNABORTED;
		if (!lo32(v) || syncmem__too_many(&failed))
			return -EUCLEAN;
		/* Sequentially consistent: the handshake with exclusive claims. */
		if (CAS(&s->count, &v, v - 1, __ATOMIC_SEQ_CST))
			return 0;
	}
}

/*
 * Release the lock of @h (which the caller frees): 0 or -errno. The fast
 * part (a share in a slot, or @excl) takes no lock; a queue (@closed)
 * sends it to @m to consider the queue.
 */
static inline __attribute__((always_inline)) int held_release(const struct syncmem_held *h)
{
	struct syncmem_locks *m = h->m;
	uint64_t me = syncmem__process_owner_cached();
	struct locks_cell *c;
	struct locks_req *r;
	int ret = 0;

	c = h->c;
	r = h->r;
	if (__builtin_expect(!c, 0))
		return -EUCLEAN;
	if (__builtin_expect(h->client != me, 0))
		return -EPERM;	/* a forked child's copy of its parent's handle */
	if (__builtin_expect(LD(&r->seq) != h->seq || LD(&r->client) != me, 0))
		return -EUCLEAN;	/* our req was taken: not by this library */
	if (__builtin_expect(h->flags & REQ_SLOW, 0)) {
		ret = slow_release(m, h, c, r);
	} else if (h->flags & REQ_SHARED) {
		ret = share_release(&c->slot[h->slot % LOCKS_SLOTS], h->epoch);
	} else {
		uint64_t x = mk64(h->epoch, h->req + 1);

		/* Sequentially consistent: a queue formed meanwhile is seen below. */
		if (__builtin_expect(!CAS(&c->excl, &x, mk64(h->epoch, 0), __ATOMIC_SEQ_CST), 0))
			ret = hi32(x) != h->epoch || LD(&r->state) == REQ_STOLEN ?
			      -ECONNABORTED : -EUCLEAN;
	}
	if (!ret && !(h->flags & REQ_SLOW) &&
	    __builtin_expect(LDS(&c->closed) & CLOSED_QUEUE, 0))
		kick(m, c);
	/* Kept for the thread's next request (CACHED: query skips it), or freed. */
	if (__builtin_expect(ret != -EUCLEAN, 1))
		req_put(m, h->req, me);
	return ret;
}

int syncmem_locks_release(struct syncmem_held *h)
{
	int ret;

	if (!h)
		return -EINVAL;
	ret = held_release(h);
	held_dispose(h);
	return ret;
}

int syncmem_locks_stolen(const struct syncmem_held *h)
{
	const struct syncmem_locks *m;
	struct locks_cell *c;
	struct locks_req *r;
	uint64_t x;

	if (!h)
		return 0;
	m = h->m;
	c = cell_at(m, h->cell + 1);
	r = req_at(m, h->req + 1);
	if (!c || !r || LD(&r->seq) != h->seq)
		return 1;
	if (LD(&r->state) == REQ_STOLEN)
		return 1;
	x = LD(&c->excl);
	if (hi32(x) != h->epoch)
		return 1;
	return !(h->flags & REQ_SHARED) && lo32(x) != h->req + 1;
}
