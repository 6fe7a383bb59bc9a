// SPDX-License-Identifier: GPL-2.0
/*
 * syncmemctl deadlocks [REGION...]: the wait-for graph of lock waiters and
 * its cycles. Its nodes are owner ids (unique on the machine, so a cycle
 * may run through several regions); a lock waiter adds an edge from the id
 * it waits as to the id of the live holder of its word. Every elementary
 * cycle is reported once, from its smallest id, and only when a second look
 * at each of its words finds the same holder and the same waiter: a cycle
 * read while locks changed hands is not one.
 *
 * Web Locks managers named in the regions add their own edges: a pending
 * request waits for every other process holding its name (the kernel's
 * view of a request, its word naming one of them, is left to the manager's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "syncmemctl.h"

#define CYCLES_MAX	64		/* reported at most */
#define STEPS_MAX	1000000		/* edges the search may follow */
#define DEPTH_MAX	4096		/* owners in one cycle (the search recurses) */

struct edge {
	uint64_t from, to;		/* owner ids: the waiter's, the holder's */
	int u, v;			/* their nodes */
	const struct snapshot *s;	/* the word's region */
	const struct syncmem_waiter_info *w;	/* the waiter; its word (NULL: a manager's) */
	const struct manager *mg;	/* a manager's edge: the manager, */
	const struct syncmem_lock_info *waits;	/* the request, */
	const struct syncmem_lock_info *holds;	/* the hold it waits for */
};

struct graph {
	struct edge *e;
	int ne;
	struct manager *mgrs;		/* the managers read, their snapshots in @mgr_s */
	const struct snapshot **mgr_s;
	int nmgrs;
	uint64_t *ids;			/* node -> owner id, sorted */
	int nn;
	int *first;			/* node -> its first edge (edges sorted by u); [nn] = ne */
	int waiters;			/* lock waiters seen */
};

struct search {
	const struct graph *g;
	int root;
	int *path;			/* edges */
	int depth;
	bool *on_path;
	long steps;
	int (*cycles)[2];		/* start, length into @store */
	int *store;
	int ncycles, nstore;
	bool cut;			/* more cycles (or steps) than searched */
};

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int edge_cmp(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->u != y->u)
		return x->u < y->u ? -1 : 1;
	return x->v < y->v ? -1 : x->v > y->v;
}

static int node_of(const struct graph *g, uint64_t id)
{
	const uint64_t *p = bsearch(&id, g->ids, g->nn, sizeof(*p), id_cmp);

	return (int)(p - g->ids);
}

/* The live holder's id of the owner word at @offset, or 0. */
static uint64_t live_holder(const struct snapshot *s, uint64_t offset)
{
	const uint64_t *word = snap_word(s, offset);
	struct syncmem_holder_info h;

	if (!word || syncmem_holder(s->r, word, &h) || h.state != SYNCMEM_HOLDER_ALIVE)
		return 0;
	return h.word & SYNCMEM_OWNER_ID;
}

/* Read the managers named in @s: 0 or -ENOMEM. */
static int read_managers(struct graph *g, const struct snapshot *s, int n)
{
	int cap = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < s[i].nobjs; k++)
			cap += s[i].objs[k].kind == SYNCMEM_OBJ_LOCKS;
	g->mgrs = calloc(cap ? cap : 1, sizeof(*g->mgrs));
	g->mgr_s = calloc(cap ? cap : 1, sizeof(*g->mgr_s));
	if (!g->mgrs || !g->mgr_s)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < s[i].nobjs; k++) {
			if (s[i].objs[k].kind != SYNCMEM_OBJ_LOCKS)
				continue;
			/* One that cannot be read adds no edge. */
			if (!manager_read(&s[i], &s[i].objs[k], &g->mgrs[g->nmgrs]))
				g->mgr_s[g->nmgrs++] = &s[i];
		}
	return 0;
}

/* The edges of pending request @p of manager @mg: to every other holder of its name. */
static int manager_edges(struct graph *g, const struct manager *mg, const struct snapshot *s,
			 const struct syncmem_lock_info *p, bool count_only)
{
	int n = 0;

	for (size_t h = 0; h < mg->nheld; h++) {
		const struct syncmem_lock_info *l = &mg->held[h];

		if (!lock_info_same_name(l, p) || l->client == p->client)
			continue;
		n++;
		if (count_only)
			continue;
		g->e[g->ne++] = (struct edge){
			.from = p->client, .to = l->client, .s = s, .mg = mg, .waits = p, .holds = l,
		};
		g->ids[g->nn++] = p->client;
		g->ids[g->nn++] = l->client;
	}
	return n;
}

static int add_edges(struct graph *g, const struct snapshot *s, int n)
{
	int cap = 0, err = read_managers(g, s, n);

	if (err)
		return err;
	for (int i = 0; i < n; i++)
		cap += s[i].nw;
	for (int i = 0; i < g->nmgrs; i++)
		for (size_t k = 0; k < g->mgrs[i].npending; k++)
			cap += manager_edges(g, &g->mgrs[i], g->mgr_s[i], &g->mgrs[i].pending[k], true);
	g->e = calloc(cap ? cap : 1, sizeof(*g->e));
	g->ids = calloc(2 * (size_t)(cap ? cap : 1), sizeof(*g->ids));
	if (!g->e || !g->ids)
		return -ENOMEM;
	for (int i = 0; i < g->nmgrs; i++) {
		g->waiters += (int)g->mgrs[i].npending;
		for (size_t k = 0; k < g->mgrs[i].npending; k++)
			manager_edges(g, &g->mgrs[i], g->mgr_s[i], &g->mgrs[i].pending[k], false);
	}
	for (int i = 0; i < n; i++) {
		uint64_t last_off = 0, holder = 0;
		bool have = false;

		for (int k = 0; k < s[i].nw; k++) {
			const struct syncmem_waiter_info *w = &s[i].w[k];
			const struct syncmem_object_info *in = snap_object_at(&s[i], w->offset);

			if (!(w->flags & SYNCMEM_WAITER_OWNER) || !w->owner)
				continue;
			/* A Web Locks request: its manager said whom it waits for. */
			if (in && in->kind == SYNCMEM_OBJ_LOCKS)
				continue;
			g->waiters++;
			/* A word's waiters come together: ask for its holder once. */
			if (!have || w->offset != last_off)
				holder = live_holder(&s[i], w->offset);
			have = true;
			last_off = w->offset;
			if (!holder)
				continue;
			g->e[g->ne++] = (struct edge){
				.from = w->owner, .to = holder, .s = &s[i], .w = w,
			};
			g->ids[g->nn++] = w->owner;
			g->ids[g->nn++] = holder;
		}
	}
	return 0;
}

/*
 * Nodes from the ids, edges sorted by their nodes, and one edge kept per
 * pair of nodes (an async waiter may wait for two words of one holder).
 */
static int index_graph(struct graph *g)
{
	int nn = 0, ne = 0;

	qsort(g->ids, g->nn, sizeof(*g->ids), id_cmp);
	for (int i = 0; i < g->nn; i++)
		if (!i || g->ids[i] != g->ids[nn - 1])
			g->ids[nn++] = g->ids[i];
	g->nn = nn;
	for (int i = 0; i < g->ne; i++) {
		g->e[i].u = node_of(g, g->e[i].from);
		g->e[i].v = node_of(g, g->e[i].to);
	}
	/* Stable for equal pairs would keep the first; any one of them will do. */
	qsort(g->e, g->ne, sizeof(*g->e), edge_cmp);
	for (int i = 0; i < g->ne; i++)
		if (!i || edge_cmp(&g->e[i], &g->e[ne - 1]))
			g->e[ne++] = g->e[i];
	g->ne = ne;
	g->first = calloc((size_t)nn + 1, sizeof(*g->first));
	if (!g->first)
		return -ENOMEM;
	for (int i = 0, k = 0; i <= nn; i++) {
		while (k < ne && g->e[k].u < i)
			k++;
		g->first[i] = k;
	}
	return 0;
}

/* A manager's edge on a second look: the request still pending, the hold still held. */
static bool manager_edge_holds(const struct edge *e)
{
	struct manager again;
	bool waits = false, holds = false;

	if (manager_read(e->s, e->mg->obj, &again))
		return false;
	for (size_t i = 0; i < again.npending && !waits; i++)
		waits = again.pending[i].client == e->from &&
			lock_info_same_name(&again.pending[i], e->waits);
	for (size_t i = 0; i < again.nheld && !holds; i++)
		holds = again.held[i].client == e->to &&
			lock_info_same_name(&again.held[i], e->holds);
	manager_free(&again);
	return waits && holds;
}

/* Still there on a second look: the same holder, the same waiter queued. */
static bool edge_holds(const struct edge *e)
{
	struct syncmem_waiter_info w[64];
	const struct snapshot *s = e->s;
	const uint64_t *word;
	int n;

	if (!e->w)
		return manager_edge_holds(e);
	word = snap_word(s, e->w->offset);
	if (!word || live_holder(s, e->w->offset) != e->to)
		return false;
	n = syncmem_waiters(s->r, word, w, 64);
	for (int i = 0; i < n && i < 64; i++)
		if (w[i].owner == e->from && (w[i].flags & SYNCMEM_WAITER_OWNER))
			return true;
	/* A longer queue than we read: take the first look's word for it. */
	return n > 64;
}

static void record(struct search *x)
{
	for (int i = 0; i < x->depth; i++)
		if (!edge_holds(&x->g->e[x->path[i]]))
			return;
	if (x->ncycles == CYCLES_MAX) {
		x->cut = true;
		return;
	}
	x->cycles[x->ncycles][0] = x->nstore;
	x->cycles[x->ncycles][1] = x->depth;
	memcpy(x->store + x->nstore, x->path, x->depth * sizeof(*x->path));
	x->nstore += x->depth;
	x->ncycles++;
}

/* Paths from the root through nodes above it, back to the root. */
static void dfs(struct search *x, int u)
{
	const struct graph *g = x->g;

	for (int k = g->first[u]; k < g->first[u + 1]; k++) {
		int v = g->e[k].v;

		if (++x->steps > STEPS_MAX || x->ncycles == CYCLES_MAX) {
			x->cut = true;
			return;
		}
		if (v < x->root || (v != x->root && x->on_path[v]))
			continue;
		if (x->depth == DEPTH_MAX) {
			x->cut = true;
			continue;
		}
		x->path[x->depth++] = k;
		if (v == x->root) {
			record(x);
		} else {
			x->on_path[v] = true;
			dfs(x, v);
			x->on_path[v] = false;
		}
		x->depth--;
	}
}

static int find_cycles(const struct graph *g, struct search *x)
{
	memset(x, 0, sizeof(*x));
	x->g = g;
	x->path = calloc((size_t)g->nn + 1, sizeof(*x->path));
	x->on_path = calloc((size_t)g->nn + 1, sizeof(*x->on_path));
	x->cycles = calloc(CYCLES_MAX, sizeof(*x->cycles));
	x->store = calloc((size_t)CYCLES_MAX * (g->nn + 1), sizeof(*x->store));
	if (!x->path || !x->on_path || !x->cycles || !x->store)
		return -ENOMEM;
	for (x->root = 0; x->root < g->nn && !x->cut; x->root++)
		dfs(x, x->root);
	return 0;
}

static void search_free(struct search *x)
{
	free(x->path);
	free(x->on_path);
	free(x->cycles);
	free(x->store);
}

/* ---- output ---- */

/*
 * "lock 'a' (region r1, 0x0)": the word an edge waits for; "name "db" in
 * locks 'web' (region r1, 0x40)" for a manager's edge.
 */
static const char *word_text(char *buf, size_t cap, const struct edge *e)
{
	const struct syncmem_object_info *obj;
	char region[NAME_TEXT_MAX], what[128];
	uint64_t off;

	if (!e->w) {
		char name[LOCK_NAME_TEXT_MAX];

		obj = e->mg->obj;
		snprintf(buf, cap, "name \"%s\" in %s (region %s, 0x%" PRIx64 ")",
			 lock_name_text(name, sizeof(name), e->waits),
			 object_text(what, sizeof(what), obj, obj->offset),
			 name_text(region, sizeof(region), e->s->name, strlen(e->s->name)),
			 obj->offset);
		return buf;
	}
	obj = snap_object_at(e->s, e->w->offset);
	off = e->w->offset;
	if (!obj)
		snprintf(what, sizeof(what), "lock");
	else if (obj->offset == off)
		object_text(what, sizeof(what), obj, off);
	else
		snprintf(what, sizeof(what), "lock in %s",
			 object_text(buf, cap, obj, obj->offset));
	snprintf(buf, cap, "%s (region %s, 0x%" PRIx64 ")", what,
		 name_text(region, sizeof(region), e->s->name, strlen(e->s->name)), off);
	return buf;
}

static void print_cycle_text(const struct graph *g, const int *c, int len)
{
	printf("deadlock: %d owner%s\n", len, len == 1 ? "" : "s");
	for (int i = 0; i < len; i++) {
		const struct edge *waits = &g->e[c[i]], *holds = &g->e[c[(i + len - 1) % len]];
		char a[NAME_TEXT_MAX + 160], b[NAME_TEXT_MAX + 160];

		if (!waits->w)
			printf("  pid %d (the process)", (int)waits->waits->pid);
		else if (waits->w->tid)
			printf("  pid %d tid %d", (int)waits->w->pid, (int)waits->w->tid);
		else
			printf("  pid %d (the process, async)", (int)waits->w->pid);
		printf(" holds %s and waits for %s\n", word_text(a, sizeof(a), holds),
		       word_text(b, sizeof(b), waits));
	}
}

static void json_word(struct json *j, const char *key, const struct edge *e)
{
	json_object(j, key);
	json_str(j, "region", e->s->name);
	if (!e->w) {
		json_uint(j, "offset", e->mg->obj->offset);
		json_object_ref(j, "object", e->mg->obj);
		json_bytes(j, "name", e->waits->name, e->waits->len);
	} else {
		json_uint(j, "offset", e->w->offset);
		json_object_ref(j, "object", snap_object_at(e->s, e->w->offset));
	}
	json_object_end(j);
}

static void json_cycle(struct json *j, const struct graph *g, const int *c, int len)
{
	json_object(j, NULL);
	json_array(j, "owners");
	for (int i = 0; i < len; i++) {
		const struct edge *waits = &g->e[c[i]], *holds = &g->e[c[(i + len - 1) % len]];

		json_object(j, NULL);
		json_uint(j, "owner", waits->from);
		json_int(j, "pid", waits->w ? waits->w->pid : waits->waits->pid);
		json_int(j, "tid", waits->w ? waits->w->tid : 0);
		json_word(j, "holds", holds);
		json_word(j, "waits_for", waits);
		json_int(j, "waited_ns", waits->s->when_ns -
			 (waits->w ? waits->w->since_ns : waits->waits->since_ns));
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

static void report(const struct options *o, const struct graph *g, const struct search *x,
		   int nregions, int unopened)
{
	struct json j;

	if (!o->json) {
		for (int i = 0; i < x->ncycles; i++)
			print_cycle_text(g, x->store + x->cycles[i][0], x->cycles[i][1]);
		if (x->cut)
			printf("(the search stopped early: there may be more)\n");
		if (!x->ncycles)
			printf("no deadlock: %d lock waiter%s in %d region%s\n", g->waiters,
			       g->waiters == 1 ? "" : "s", nregions, nregions == 1 ? "" : "s");
		return;
	}
	json_start(&j, stdout);
	json_object(&j, NULL);
	json_int(&j, "regions", nregions);
	json_int(&j, "unopened", unopened);
	json_int(&j, "lock_waiters", g->waiters);
	json_bool(&j, "truncated", x->cut);
	json_array(&j, "deadlocks");
	for (int i = 0; i < x->ncycles; i++)
		json_cycle(&j, g, x->store + x->cycles[i][0], x->cycles[i][1]);
	json_array_end(&j);
	json_object_end(&j);
	json_finish(&j);
}

int cmd_deadlocks(const struct options *o)
{
	struct graph g = { 0 };
	struct search x = { 0 };
	struct snapshot *s;
	int n, unopened, err;

	err = snap_open_many("deadlocks", o->args, o->nargs, &s, &n, &unopened);
	if (err)
		return err;
	if (unopened)
		fprintf(stderr, "syncmemctl: deadlocks: %d region%s could not be opened read-only"
			" and %s not looked at\n", unopened, unopened == 1 ? "" : "s",
			unopened == 1 ? "was" : "were");
	err = add_edges(&g, s, n);
	if (!err)
		err = index_graph(&g);
	if (!err)
		err = find_cycles(&g, &x);
	if (err)
		err = fail("deadlocks", err, "building the wait-for graph");
	else
		report(o, &g, &x, n, unopened);
	if (!err && x.ncycles)
		err = EXIT_FOUND;
	search_free(&x);
	for (int i = 0; i < g.nmgrs; i++)
		manager_free(&g.mgrs[i]);
	free(g.mgrs);
	free(g.mgr_s);
	free(g.e);
	free(g.ids);
	free(g.first);
	snap_close_many(s, n);
	return err;
}
