// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Web Locks over syncmem_locks_*: the native half. The JavaScript half
 * (lib/locks.js) checks arguments as Web Locks says and runs callbacks.
 *
 * A manager handle (struct sm_mgr) is reference counted: the JavaScript
 * handle, every pending request and every held lock hold one, so the
 * library's handle is detached only after the last lock taken through it is
 * released (syncmem_locks_detach() wants it so).
 *
 * Pending requests keep the process alive (uv_ref of the environment's
 * poll handle while any is pending): a script that only awaits a lock gets
 * it. Their callbacks come from the environment's syncmem_loop, whose fd
 * libuv watches; no thread waits.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addon.h"

#ifdef SM_HAVE_LOCKS_ASYNC

struct sm_mgr {
	atomic_int refs;
	struct syncmem_locks *m;
	struct mapping *map;
};

static void mgr_put(struct sm_mgr *g)
{
	if (atomic_fetch_sub(&g->refs, 1) != 1)
		return;
	syncmem_locks_detach(g->m);
	sm_mapping_put(g->map);
	free(g);
}

static const napi_type_tag mgr_tag = { 0x73796e636d656d31ULL, 0x6c6f636b6d677201ULL };
static const napi_type_tag held_tag = { 0x73796e636d656d31ULL, 0x6c6f636b68656c64ULL };
static const napi_type_tag req_tag = { 0x73796e636d656d31ULL, 0x6c6f636b72657101ULL };

/* A granted lock, owned by a JavaScript handle until released. */
struct sm_held {
	struct syncmem_held *h;		/* NULL once released */
	struct sm_mgr *g;
};

/* A pending request. Freed by its callback; the JS handle only points at it. */
struct sm_lock_req {
	struct env_state *st;
	struct sm_mgr *g;
	napi_ref fn;
	uint64_t id;
	bool done;
	napi_ref self;			/* the JS handle (weak), to mark it done */
};

struct req_ref {
	struct sm_lock_req *req;	/* NULL once the request finished */
};

static void mgr_finalize(napi_env env, void *data, void *hint)
{
	(void)env;
	(void)hint;
	mgr_put(data);
}

static void held_finalize(napi_env env, void *data, void *hint)
{
	struct sm_held *hd = data;

	(void)env;
	(void)hint;
	/* Garbage-collected without release(): release it now. */
	if (hd->h)
		syncmem_locks_release(hd->h);
	mgr_put(hd->g);
	free(hd);
}

static void req_ref_finalize(napi_env env, void *data, void *hint)
{
	struct req_ref *rr = data;

	(void)env;
	(void)hint;
	if (rr->req)
		rr->req->self = NULL;	/* the request outlives its handle */
	free(rr);
}

static void *tagged(napi_env env, napi_value v, const napi_type_tag *tag, const char *what)
{
	void *p = NULL;
	bool ok = false;

	if (napi_check_object_type_tag(env, v, tag, &ok) != napi_ok || !ok ||
	    napi_get_value_external(env, v, &p) != napi_ok) {
		napi_throw_type_error(env, NULL, what);
		return NULL;
	}
	return p;
}

static napi_value num(napi_env env, double d)
{
	napi_value v;

	napi_create_double(env, d, &v);
	return v;
}

/* locksFootprint(names, requests) -> bytes */
static napi_value js_footprint(napi_env env, napi_callback_info info)
{
	uint32_t n, q;
	size_t argc = 2;
	napi_value argv[2];

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
	    napi_get_value_uint32(env, argv[0], &n) != napi_ok ||
	    napi_get_value_uint32(env, argv[1], &q) != napi_ok) {
		napi_throw_type_error(env, NULL, "syncmem: bad arguments to locksFootprint()");
		return NULL;
	}
	return num(env, (double)syncmem_locks_footprint(n, q));
}

/*
 * locksOpen(regionHandle, size) -> manager handle: the manager at the
 * region's start, built by whoever comes first (init), used by the others
 * (attach; it waits while the builder is still at work).
 */
static napi_value js_open(napi_env env, napi_callback_info info)
{
	struct mapping *map;
	struct sm_mgr *g;
	napi_value argv[2], v;
	size_t argc = 2;
	uint32_t size;
	int err;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2)
		return NULL;
	map = sm_region_mapping(env, argv[0]);
	if (!map)
		return NULL;
	if (napi_get_value_uint32(env, argv[1], &size) != napi_ok || size > map->size) {
		napi_throw_range_error(env, NULL, "syncmem: the manager does not fit in the region");
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		sm_throw_errno(env, -ENOMEM, "LockManager");
		return NULL;
	}
	err = syncmem_locks_init(map->r, map->base, size, &g->m);
	if (err == -EEXIST)
		err = syncmem_locks_attach(map->r, map->base, &g->m);
	if (err == -ESRCH)	/* its builder died part-way: build it again */
		err = syncmem_locks_init(map->r, map->base, size, &g->m);
	if (err) {
		free(g);
		sm_throw_errno(env, err, "LockManager");
		return NULL;
	}
	atomic_init(&g->refs, 1);
	sm_mapping_get(map);
	g->map = map;
	if (napi_create_external(env, g, mgr_finalize, NULL, &v) != napi_ok) {
		mgr_put(g);
		return NULL;
	}
	napi_type_tag_object(env, v, &mgr_tag);
	return v;
}

static void req_free(struct sm_lock_req *req)
{
	struct env_state *st = req->st;

	if (!st->closing) {
		if (req->fn)
			napi_delete_reference(st->env, req->fn);
		if (req->self) {
			napi_value self;
			struct req_ref *rr;

			if (napi_get_reference_value(st->env, req->self, &self) == napi_ok && self &&
			    napi_get_value_external(st->env, self, (void **)&rr) == napi_ok)
				rr->req = NULL;
			napi_delete_reference(st->env, req->self);
		}
	}
	mgr_put(req->g);
	free(req);
}

/* A held lock's JavaScript handle: NULL (with an error pending) on failure. */
static napi_value held_wrap(napi_env env, struct sm_mgr *g, struct syncmem_held *h)
{
	struct sm_held *hd = calloc(1, sizeof(*hd));
	napi_value v;

	if (!hd) {
		syncmem_locks_release(h);
		sm_throw_errno(env, -ENOMEM, "locks.request");
		return NULL;
	}
	hd->h = h;
	hd->g = g;
	atomic_fetch_add(&g->refs, 1);
	if (napi_create_external(env, hd, held_finalize, NULL, &v) != napi_ok) {
		held_finalize(env, hd, NULL);
		return NULL;
	}
	napi_type_tag_object(env, v, &held_tag);
	return v;
}

/* From the loop: the request's outcome. */
static void request_done(void *arg, int result, struct syncmem_held *h)
{
	struct sm_lock_req *req = arg;
	struct env_state *st = req->st;
	napi_env env = st->env;
	napi_value fn, argv[2], global, exc;

	st->keepalive--;
	if (!st->closing)
		sm_env_update_ref(st);
	if (st->closing) {
		if (h)
			syncmem_locks_release(h);
		req_free(req);
		return;
	}
	napi_get_undefined(env, &argv[1]);
	if (h) {
		argv[1] = held_wrap(env, req->g, h);
		if (!argv[1]) {
			napi_get_and_clear_last_exception(env, &exc);
			napi_get_undefined(env, &argv[1]);
			result = -ENOMEM;
		}
	}
	napi_create_int32(env, result, &argv[0]);
	napi_get_global(env, &global);
	if (napi_get_reference_value(env, req->fn, &fn) == napi_ok && fn &&
	    napi_call_function(env, global, fn, 2, argv, NULL) != napi_ok &&
	    napi_get_and_clear_last_exception(env, &exc) == napi_ok)
		napi_fatal_exception(env, exc);
	req_free(req);
}

/*
 * A request's arguments (mgr, nameBuffer, flags, ...): the manager, or
 * NULL with an error thrown.
 */
static struct sm_mgr *request_args(napi_env env, napi_callback_info info, napi_value *argv,
				   size_t n, void **name, size_t *len, uint32_t *flags)
{
	struct sm_mgr *g;
	size_t argc = n;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < n)
		return NULL;
	g = tagged(env, argv[0], &mgr_tag, "syncmem: not a lock manager");
	if (g && (napi_get_buffer_info(env, argv[1], name, len) != napi_ok ||
		  napi_get_value_uint32(env, argv[2], flags) != napi_ok)) {
		napi_throw_type_error(env, NULL, "syncmem: bad arguments to a lock request");
		return NULL;
	}
	return g;
}

/*
 * locksTry(mgr, nameBuffer, flags) -> held handle, or a negative errno:
 * -ETIMEDOUT when the request would have to queue (nothing was queued),
 * -EBUSY for IF_AVAILABLE. A grant from a dead holder is a grant.
 * A request that needs no wait is settled here, without the event loop.
 */
static napi_value js_try(napi_env env, napi_callback_info info)
{
	struct syncmem_held *h = NULL;
	struct sm_mgr *g;
	napi_value argv[3];
	uint32_t flags;
	void *name;
	size_t len;
	int err;

	g = request_args(env, info, argv, 3, &name, &len, &flags);
	if (!g)
		return NULL;
	err = syncmem_locks_request(g->m, name, len, flags, 0, &h);
	if (err && err != -EOWNERDEAD)
		return num(env, err);
	return held_wrap(env, g, h);
}

/* locksRequest(mgr, nameBuffer, flags, fn(result, held)) -> request handle */
static napi_value js_request(napi_env env, napi_callback_info info)
{
	struct env_state *st = sm_env(env);
	struct sm_lock_req *req;
	struct req_ref *rr;
	struct sm_mgr *g;
	napi_value argv[4], v;
	uint32_t flags;
	void *name;
	size_t len;
	int err;

	g = request_args(env, info, argv, 4, &name, &len, &flags);
	if (!g)
		return NULL;
	err = sm_env_loop(st);
	if (err) {
		sm_throw_errno(env, err, "locks.request");
		return NULL;
	}
	req = calloc(1, sizeof(*req));
	rr = calloc(1, sizeof(*rr));
	if (!req || !rr) {
		free(req);
		free(rr);
		sm_throw_errno(env, -ENOMEM, "locks.request");
		return NULL;
	}
	req->st = st;
	req->g = g;
	if (napi_create_reference(env, argv[3], 1, &req->fn) != napi_ok ||
	    napi_create_external(env, rr, req_ref_finalize, NULL, &v) != napi_ok) {
		if (req->fn)
			napi_delete_reference(env, req->fn);
		free(req);
		free(rr);
		return NULL;
	}
	napi_type_tag_object(env, v, &req_tag);
	atomic_fetch_add(&g->refs, 1);
	err = syncmem_locks_request_async(st->loop, g->m, name, len, flags, request_done, req,
					  &req->id);
	if (err) {
		napi_delete_reference(env, req->fn);
		mgr_put(g);
		free(req);
		sm_throw_errno(env, err, "locks.request");
		return NULL;
	}
	rr->req = req;
	napi_create_reference(env, v, 0, &req->self);
	st->keepalive++;
	sm_env_update_ref(st);
	return v;
}

/* locksAbort(request handle) -> 0 (its callback will say -ECANCELED) or -ENOENT */
static napi_value js_abort(napi_env env, napi_callback_info info)
{
	struct env_state *st = sm_env(env);
	struct req_ref *rr;
	napi_value argv[1];
	size_t argc = 1;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1)
		return NULL;
	rr = tagged(env, argv[0], &req_tag, "syncmem: not a lock request");
	if (!rr)
		return NULL;
	if (!rr->req || !st->loop)
		return num(env, -ENOENT);
	return num(env, syncmem_locks_abort(st->loop, rr->req->id));
}

/* locksRelease(held) -> 0, or -ECONNABORTED when it was stolen (released either way) */
static napi_value js_release(napi_env env, napi_callback_info info)
{
	struct sm_held *hd;
	napi_value argv[1];
	size_t argc = 1;
	int err;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1)
		return NULL;
	hd = tagged(env, argv[0], &held_tag, "syncmem: not a held lock");
	if (!hd)
		return NULL;
	if (!hd->h)
		return num(env, -EALREADY);
	err = syncmem_locks_release(hd->h);
	hd->h = NULL;
	return num(env, err);
}

/* locksStolen(held) -> bool */
static napi_value js_stolen(napi_env env, napi_callback_info info)
{
	struct sm_held *hd;
	napi_value argv[1], v;
	size_t argc = 1;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1)
		return NULL;
	hd = tagged(env, argv[0], &held_tag, "syncmem: not a held lock");
	if (!hd)
		return NULL;
	napi_get_boolean(env, hd->h && syncmem_locks_stolen(hd->h), &v);
	return v;
}

static napi_value info_array(napi_env env, const struct syncmem_lock_info *in, size_t n)
{
	napi_value arr, row, v;

	napi_create_array_with_length(env, n, &arr);
	for (size_t i = 0; i < n; i++) {
		void *data;

		napi_create_array_with_length(env, 4, &row);
		napi_create_buffer_copy(env, in[i].len <= SYNCMEM_LOCKS_NAME_MAX ? in[i].len : 0,
					in[i].name, &data, &v);
		napi_set_element(env, row, 0, v);
		napi_get_boolean(env, in[i].mode & SYNCMEM_LOCKS_SHARED, &v);
		napi_set_element(env, row, 1, v);
		napi_set_element(env, row, 2, num(env, in[i].pid));
		napi_create_bigint_uint64(env, in[i].client, &v);
		napi_set_element(env, row, 3, v);
		napi_set_element(env, arr, (uint32_t)i, row);
	}
	return arr;
}

/* locksQuery(mgr) -> [held, pending], each [[nameBuffer, shared, pid, client], ...] */
static napi_value js_query(napi_env env, napi_callback_info info)
{
	struct syncmem_lock_info *held = NULL, *pending = NULL;
	size_t nheld = 0, npending = 0, cap_h = 0, cap_p = 0;
	struct sm_mgr *g;
	napi_value argv[1], out;
	size_t argc = 1;
	int err;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1)
		return NULL;
	g = tagged(env, argv[0], &mgr_tag, "syncmem: not a lock manager");
	if (!g)
		return NULL;
	/* Ask for the counts, then for that many (and again if they grew). */
	for (int tries = 0;; tries++) {
		nheld = cap_h;
		npending = cap_p;
		err = syncmem_locks_query(g->m, held, &nheld, pending, &npending);
		if (err || (nheld <= cap_h && npending <= cap_p) || tries == 8)
			break;
		free(held);
		free(pending);
		cap_h = nheld + 16;
		cap_p = npending + 16;
		held = calloc(cap_h, sizeof(*held));
		pending = calloc(cap_p, sizeof(*pending));
		if (!held || !pending) {
			err = -ENOMEM;
			break;
		}
	}
	if (err) {
		free(held);
		free(pending);
		sm_throw_errno(env, err, "locks.query");
		return NULL;
	}
	if (nheld > cap_h)
		nheld = cap_h;
	if (npending > cap_p)
		npending = cap_p;
	napi_create_array_with_length(env, 2, &out);
	napi_set_element(env, out, 0, info_array(env, held, nheld));
	napi_set_element(env, out, 1, info_array(env, pending, npending));
	free(held);
	free(pending);
	return out;
}

int sm_locks_init(napi_env env, napi_value exports)
{
	static const struct {
		const char *name;
		napi_callback fn;
	} fns[] = {
		{ "locksFootprint", js_footprint },
		{ "locksOpen", js_open },
		{ "locksTry", js_try },
		{ "locksRequest", js_request },
		{ "locksAbort", js_abort },
		{ "locksRelease", js_release },
		{ "locksStolen", js_stolen },
		{ "locksQuery", js_query },
	};
	napi_value fn;

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL,
					 &fn) != napi_ok ||
		    napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok)
			return -1;
	}
	return 0;
}

#else /* !SM_HAVE_LOCKS_ASYNC */

/* A library without syncmem_locks_request_async(): no LockManager. */
int sm_locks_init(napi_env env, napi_value exports)
{
	(void)env;
	(void)exports;
	return 0;
}

#endif

void sm_locks_env_cleanup(struct env_state *st)
{
	(void)st;
}
