// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * syncmem for Node.js: the native half (Node-API, C). The JavaScript half
 * (lib/ in JavaScript) checks and converts arguments as ECMAScript and Web Locks say,
 * then calls the functions here with plain values. See
 * Documentation/syncmem/node.rst.
 *
 * Memory: a region's mapping is a struct mapping with a reference count.
 * The JavaScript region object holds one reference until close(); every
 * SharedArrayBuffer over the mapping holds one through V8's backing store
 * (its deleter may run on any thread); so does every internal handle that
 * points into it (a lookup, a pool, a pending async wait). The mapping is
 * unmapped and its fd closed when the last goes.
 *
 * Events: each Node environment (the main thread, each worker) has one
 * syncmem_loop, made on first use, whose pollable fd libuv watches with a
 * uv_poll handle. Completions run their callbacks from that handle's
 * callback inside a Node-API callback scope, so the promises they settle
 * run their reactions (microtasks) before control returns to libuv.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "addon.h"
#include "sab.h"

/* ---- Errors -------------------------------------------------------------- */

/* Throw an Error with .code 'EXXX' and .errno -XXX for a negative errno @err. */
void sm_throw_errno(napi_env env, int err, const char *what)
{
	napi_value e = sm_errno_error(env, err, what);

	if (e)
		napi_throw(env, e);
}

napi_value sm_errno_error(napi_env env, int err, const char *what)
{
	const char *code = strerrorname_np(-err);
	char msg[768];
	napi_value e, code_v, msg_v, errno_v;

	if (!code)
		code = "EUNKNOWN";
	if (err == -ENODEV)
		snprintf(msg, sizeof(msg),
			 "%s: /dev/syncmem is missing: the syncmem kernel module is not loaded "
			 "(load it with 'sudo modprobe syncmem', or 'sudo insmod kmod/syncmem.ko' "
			 "in a built checkout), or this process cannot see the device",
			 what);
	else
		snprintf(msg, sizeof(msg), "%s: %s", what, syncmem_strerror(err));
	if (napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_v) != napi_ok ||
	    napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &msg_v) != napi_ok ||
	    napi_create_error(env, code_v, msg_v, &e) != napi_ok)
		return NULL;
	if (napi_create_int32(env, err, &errno_v) == napi_ok)
		napi_set_named_property(env, e, "errno", errno_v);
	return e;
}

/* A TypeError from a broken internal call: the JavaScript half checks arguments. */
static napi_value bad_args(napi_env env, const char *fn)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "syncmem: bad arguments to the native %s()", fn);
	napi_throw_type_error(env, NULL, msg);
	return NULL;
}

/* ---- Mappings -------------------------------------------------------------- */

/*
 * Every live mapping, sorted by base address, so that a SharedArrayBuffer
 * (or a copy of it posted from another thread) finds its region.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapping **registry;
static size_t registry_len, registry_cap;

static int registry_add(struct mapping *m)
{
	size_t i;

	pthread_mutex_lock(&registry_lock);
	if (registry_len == registry_cap) {
		size_t cap = registry_cap ? registry_cap * 2 : 16;
		struct mapping **n = realloc(registry, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&registry_lock);
			return -ENOMEM;
		}
		registry = n;
		registry_cap = cap;
	}
	for (i = registry_len; i > 0 && (uintptr_t)registry[i - 1]->base > (uintptr_t)m->base; i--)
		registry[i] = registry[i - 1];
	registry[i] = m;
	registry_len++;
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

/* Called with registry_lock held. */
static void registry_remove_locked(struct mapping *m)
{
	for (size_t i = 0; i < registry_len; i++) {
		if (registry[i] != m)
			continue;
		memmove(&registry[i], &registry[i + 1], (registry_len - i - 1) * sizeof(*registry));
		registry_len--;
		return;
	}
}

/* The mapping that starts at @base and spans @len bytes, with a reference; else NULL. */
static struct mapping *registry_find(const void *base, size_t len)
{
	struct mapping *found = NULL;
	size_t lo = 0, hi;

	pthread_mutex_lock(&registry_lock);
	hi = registry_len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)registry[mid]->base < (uintptr_t)base)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < registry_len && registry[lo]->base == base && registry[lo]->size == len) {
		found = registry[lo];
		atomic_fetch_add(&found->refs, 1);
	}
	pthread_mutex_unlock(&registry_lock);
	return found;
}

void sm_mapping_get(struct mapping *m)
{
	atomic_fetch_add(&m->refs, 1);
}

/* Drop a reference; the last one unmaps (from any thread). */
void sm_mapping_put(struct mapping *m)
{
	/* Lookups take references under the registry's lock: decide under it too. */
	pthread_mutex_lock(&registry_lock);
	if (atomic_fetch_sub(&m->refs, 1) != 1) {
		pthread_mutex_unlock(&registry_lock);
		return;
	}
	registry_remove_locked(m);
	pthread_mutex_unlock(&registry_lock);
	syncmem_close(m->r);
	free(m);
}

static int mapping_new(struct syncmem_region *r, bool rdonly, struct mapping **out)
{
	struct mapping *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	atomic_init(&m->refs, 1);
	m->r = r;
	m->base = syncmem_base(r);
	m->size = syncmem_size(r);
	m->rdonly = rdonly;
	err = registry_add(m);
	if (err) {
		free(m);
		return err;
	}
	*out = m;
	return 0;
}

/* ---- Handles: externals with a type tag ----------------------------------- */

static const napi_type_tag region_tag = { 0x73796e636d656d31ULL, 0x726567696f6e0001ULL };
static const napi_type_tag pool_tag = { 0x73796e636d656d31ULL, 0x706f6f6c00000001ULL };

/* A reference to a mapping, held by a JavaScript handle. */
struct region_ref {
	struct mapping *m;	/* NULL once closed */
};

static void region_ref_finalize(napi_env env, void *data, void *hint)
{
	struct region_ref *ref = data;

	(void)env;
	(void)hint;
	if (ref->m)
		sm_mapping_put(ref->m);
	free(ref);
}

/* A handle on @m that owns one reference (taken over from the caller). */
static napi_value region_handle(napi_env env, struct mapping *m)
{
	struct region_ref *ref = malloc(sizeof(*ref));
	napi_value v;

	if (!ref) {
		sm_mapping_put(m);
		sm_throw_errno(env, -ENOMEM, "syncmem");
		return NULL;
	}
	ref->m = m;
	if (napi_create_external(env, ref, region_ref_finalize, NULL, &v) != napi_ok) {
		region_ref_finalize(env, ref, NULL);
		return NULL;
	}
	napi_type_tag_object(env, v, &region_tag);
	return v;
}

/* The mapping of a region handle; NULL (and a pending exception) if closed or bad. */
static struct mapping *handle_mapping(napi_env env, napi_value v, struct region_ref **refp)
{
	struct region_ref *ref;
	bool ok = false;

	if (napi_check_object_type_tag(env, v, &region_tag, &ok) != napi_ok || !ok ||
	    napi_get_value_external(env, v, (void **)&ref) != napi_ok) {
		napi_throw_type_error(env, NULL, "syncmem: not a region handle");
		return NULL;
	}
	if (refp)
		*refp = ref;
	if (!ref->m) {
		napi_value code, msg, e;

		napi_create_string_utf8(env, "ERR_SYNCMEM_CLOSED", NAPI_AUTO_LENGTH, &code);
		napi_create_string_utf8(env, "syncmem: the region is closed", NAPI_AUTO_LENGTH, &msg);
		napi_create_error(env, code, msg, &e);
		napi_throw(env, e);
		return NULL;
	}
	return ref->m;
}

/* The mapping of a region handle, for locks.c; NULL with an exception pending. */
struct mapping *sm_region_mapping(napi_env env, napi_value v)
{
	return handle_mapping(env, v, NULL);
}

/* ---- Argument helpers ------------------------------------------------------ */

#define ARGS(n)                                                              \
	size_t argc = (n);                                                   \
	napi_value argv[(n) > 0 ? (n) : 1];                                  \
	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) \
		return NULL

static bool get_u64(napi_env env, napi_value v, uint64_t max, uint64_t *out)
{
	double d;

	if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0) || d > (double)max ||
	    d != floor(d))
		return false;
	*out = (uint64_t)d;
	return true;
}

/* A relative timeout in milliseconds (+Infinity: none) as nanoseconds. */
static bool get_timeout(napi_env env, napi_value v, int64_t *ns)
{
	double ms;

	if (napi_get_value_double(env, v, &ms) != napi_ok || isnan(ms) || ms < 0)
		return false;
	if (ms * 1e6 >= 9.2e18)
		*ns = SYNCMEM_FOREVER;
	else
		*ns = (int64_t)ceil(ms * 1e6);
	return true;
}

static napi_value str(napi_env env, const char *s)
{
	napi_value v;

	napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
	return v;
}

static napi_value num(napi_env env, double d)
{
	napi_value v;

	napi_create_double(env, d, &v);
	return v;
}

static const char *wait_result_name(int result)
{
	switch (result) {
	case SYNCMEM_OK:
		return "ok";
	case SYNCMEM_NOT_EQUAL:
		return "not-equal";
	case SYNCMEM_TIMED_OUT:
		return "timed-out";
	}
	return NULL;
}

/* ---- Regions ----------------------------------------------------------- */

/* open(name | null, size, flags, mode) -> handle */
static napi_value js_open(napi_env env, napi_callback_info info)
{
	char name[SYNCMEM_NAME_MAX + 2];
	struct syncmem_region *r;
	struct mapping *m;
	napi_valuetype t;
	uint64_t size, flags, mode;
	size_t len = 0;
	bool named;
	int err;
	ARGS(4);

	if (argc < 4 || napi_typeof(env, argv[0], &t) != napi_ok)
		return bad_args(env, "open");
	named = t == napi_string;
	if (named && napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &len) != napi_ok)
		return bad_args(env, "open");
	if ((!named && t != napi_null) || !get_u64(env, argv[1], SIZE_MAX, &size) ||
	    !get_u64(env, argv[2], 7, &flags) || !get_u64(env, argv[3], 0777, &mode))
		return bad_args(env, "open");
	if (named && (len == 0 || strlen(name) != len)) {
		/* Empty, or a NUL inside: the C library takes NUL-terminated names. */
		sm_throw_errno(env, -EINVAL, "open");
		return NULL;
	}
	if (named && len > SYNCMEM_NAME_MAX) {
		sm_throw_errno(env, -ENAMETOOLONG, "open");
		return NULL;
	}
	err = syncmem_open(named ? name : NULL, size, (unsigned)flags, (mode_t)mode, &r);
	if (err) {
		sm_throw_errno(env, err, "open");
		return NULL;
	}
	err = mapping_new(r, flags & SYNCMEM_RDONLY, &m);
	if (err) {
		syncmem_close(r);
		sm_throw_errno(env, err, "open");
		return NULL;
	}
	return region_handle(env, m);
}

/* fromFd(fd) -> handle; the caller keeps @fd (a duplicate is adopted). */
static napi_value js_from_fd(napi_env env, napi_callback_info info)
{
	struct syncmem_region_info ri;
	struct syncmem_region *r;
	struct mapping *m;
	uint64_t fd;
	int dup_fd, err;
	ARGS(1);

	if (argc < 1 || !get_u64(env, argv[0], INT32_MAX, &fd))
		return bad_args(env, "fromFd");
	dup_fd = fcntl((int)fd, F_DUPFD_CLOEXEC, 3);
	if (dup_fd < 0) {
		sm_throw_errno(env, -errno, "fromFd");
		return NULL;
	}
	memset(&ri, 0, sizeof(ri));
	if (ioctl(dup_fd, SYNCMEM_IOC_REGION_INFO, &ri) < 0) {
		err = errno == ENOTTY ? -EINVAL : -errno;
		close(dup_fd);
		sm_throw_errno(env, err, "fromFd");
		return NULL;
	}
	err = syncmem_open_fd(dup_fd, &r);
	if (err) {
		close(dup_fd);
		sm_throw_errno(env, err, "fromFd");
		return NULL;
	}
	err = mapping_new(r, ri.flags & SYNCMEM_INFO_RDONLY, &m);
	if (err) {
		syncmem_close(r);
		sm_throw_errno(env, err, "fromFd");
		return NULL;
	}
	return region_handle(env, m);
}

static void sab_deleter(void *data, size_t len, void *deleter_data)
{
	(void)data;
	(void)len;
	sm_mapping_put(deleter_data);
}

/* buffer(handle) -> a new SharedArrayBuffer over the whole mapping */
static napi_value js_buffer(napi_env env, napi_callback_info info)
{
	struct mapping *m;
	ARGS(1);

	if (argc < 1 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	sm_mapping_get(m);
	return sm_sab_new(m->base, m->size, sab_deleter, m);
}

/* info(handle) -> [size, fd, readOnly, uid, mode] (uid and mode: -1 if unknown) */
static napi_value js_info(napi_env env, napi_callback_info info)
{
	struct syncmem_region_info ri;
	struct mapping *m;
	napi_value arr, v;
	bool known;
	ARGS(1);

	if (argc < 1 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	memset(&ri, 0, sizeof(ri));
	known = ioctl(syncmem_region_fd(m->r), SYNCMEM_IOC_REGION_INFO, &ri) == 0;
	napi_create_array_with_length(env, 5, &arr);
	napi_set_element(env, arr, 0, num(env, (double)m->size));
	napi_set_element(env, arr, 1, num(env, syncmem_region_fd(m->r)));
	napi_get_boolean(env, m->rdonly, &v);
	napi_set_element(env, arr, 2, v);
	napi_set_element(env, arr, 3, num(env, known ? (double)ri.uid : -1));
	napi_set_element(env, arr, 4, num(env, known ? (double)ri.mode : -1));
	return arr;
}

/* close(handle): the handle lets go of its mapping (buffers keep theirs). */
static napi_value js_close(napi_env env, napi_callback_info info)
{
	struct region_ref *ref;
	bool ok = false;
	ARGS(1);

	if (argc < 1 || napi_check_object_type_tag(env, argv[0], &region_tag, &ok) != napi_ok ||
	    !ok || napi_get_value_external(env, argv[0], (void **)&ref) != napi_ok)
		return bad_args(env, "close");
	if (ref->m) {
		sm_mapping_put(ref->m);
		ref->m = NULL;
	}
	return NULL;
}

/* unlink(name) */
static napi_value js_unlink(napi_env env, napi_callback_info info)
{
	char name[SYNCMEM_NAME_MAX + 2];
	size_t len;
	int err;
	ARGS(1);

	if (argc < 1 || napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &len) != napi_ok)
		return bad_args(env, "unlink");
	if (len > SYNCMEM_NAME_MAX)
		err = -ENAMETOOLONG;
	else if (len == 0 || strlen(name) != len)
		err = -EINVAL;
	else
		err = syncmem_unlink(name);
	if (err)
		sm_throw_errno(env, err, "unlink");
	return NULL;
}

/*
 * lookup(sab) -> handle or null: the region a SharedArrayBuffer (made here or
 * posted from another thread) is the whole mapping of.
 */
static napi_value js_lookup(napi_env env, napi_callback_info info)
{
	struct mapping *m;
	napi_value null;
	void *data;
	size_t len;
	ARGS(1);

	napi_get_null(env, &null);
	if (argc < 1 || sm_sab_info(argv[0], &data, &len) || !data)
		return null;
	m = registry_find(data, len);
	if (!m)
		return null;
	return region_handle(env, m);
}

/* ---- Blocking wait and notify ---------------------------------------------- */

/* The word at @off (of @width bytes) in @m: NULL, with a RangeError thrown, if outside. */
static void *word_at(napi_env env, struct mapping *m, napi_value off_v, size_t width)
{
	uint64_t off;

	if (!get_u64(env, off_v, SIZE_MAX, &off) || off % width || off > m->size ||
	    m->size - off < width) {
		napi_throw_range_error(env, NULL, "syncmem: word outside the region");
		return NULL;
	}
	return (char *)m->base + off;
}

static bool get_expected(napi_env env, napi_value v, bool is64, uint64_t *out)
{
	if (is64) {
		int64_t i;
		bool lossless;

		if (napi_get_value_bigint_int64(env, v, &i, &lossless) != napi_ok)
			return false;
		*out = (uint64_t)i;
	} else {
		int32_t i;

		if (napi_get_value_int32(env, v, &i) != napi_ok)
			return false;
		*out = (uint32_t)i;
	}
	return true;
}

/* wait(handle, byteOffset, value, is64, timeoutMs) -> "ok" | "not-equal" | "timed-out" */
static napi_value js_wait(napi_env env, napi_callback_info info)
{
	struct mapping *m;
	uint64_t expected;
	int64_t ns;
	bool is64;
	void *addr;
	int ret;
	ARGS(5);

	if (argc < 5 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	if (napi_get_value_bool(env, argv[3], &is64) != napi_ok ||
	    !get_expected(env, argv[2], is64, &expected) || !get_timeout(env, argv[4], &ns))
		return bad_args(env, "wait");
	addr = word_at(env, m, argv[1], is64 ? 8 : 4);
	if (!addr)
		return NULL;
	if (is64)
		ret = syncmem_wait64(m->r, addr, expected, ns);
	else
		ret = syncmem_wait32(m->r, addr, (uint32_t)expected, ns);
	if (ret < 0 || !wait_result_name(ret)) {
		sm_throw_errno(env, ret < 0 ? ret : -EPROTO, "Atomics.wait");
		return NULL;
	}
	return str(env, wait_result_name(ret));
}

/* notify(handle, byteOffset, count | Infinity) -> woken */
static napi_value js_notify(napi_env env, napi_callback_info info)
{
	struct mapping *m;
	uint32_t count;
	double c;
	void *addr;
	int ret;
	ARGS(3);

	if (argc < 3 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	if (napi_get_value_double(env, argv[2], &c) != napi_ok || isnan(c) || c < 0)
		return bad_args(env, "notify");
	count = c >= (double)SYNCMEM_ALL ? SYNCMEM_ALL : (uint32_t)c;
	addr = word_at(env, m, argv[1], 4);
	if (!addr)
		return NULL;
	ret = syncmem_notify(m->r, addr, count);
	if (ret < 0) {
		sm_throw_errno(env, ret, "Atomics.notify");
		return NULL;
	}
	return num(env, ret);
}

/*
 * waiters(handle, byteOffset) -> [[pid, tid, async, size], ...]: who waits on
 * the word, oldest first (the kernel's snapshot; at most 4096).
 */
static napi_value js_waiters(napi_env env, napi_callback_info info)
{
	enum { CAP = 4096 };
	struct syncmem_waiter_info *wi;
	struct mapping *m;
	napi_value arr, row, v;
	void *addr;
	int n;
	ARGS(2);

	if (argc < 2 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	addr = word_at(env, m, argv[1], 4);
	if (!addr)
		return NULL;
	wi = calloc(CAP, sizeof(*wi));
	if (!wi) {
		sm_throw_errno(env, -ENOMEM, "waiters");
		return NULL;
	}
	n = syncmem_waiters(m->r, addr, wi, CAP);
	if (n < 0) {
		free(wi);
		sm_throw_errno(env, n, "waiters");
		return NULL;
	}
	if (n > CAP)
		n = CAP;
	napi_create_array_with_length(env, (size_t)n, &arr);
	for (int i = 0; i < n; i++) {
		napi_create_array_with_length(env, 4, &row);
		napi_set_element(env, row, 0, num(env, wi[i].pid));
		napi_set_element(env, row, 1, num(env, wi[i].tid));
		napi_get_boolean(env, wi[i].flags & SYNCMEM_WAITER_ASYNC, &v);
		napi_set_element(env, row, 2, v);
		napi_set_element(env, row, 3, num(env, wi[i].size));
		napi_set_element(env, arr, (uint32_t)i, row);
	}
	free(wi);
	return arr;
}

/* ---- The event loop ---------------------------------------------------- */

static void env_cleanup(void *arg);

static void on_ready(uv_poll_t *poll, int status, int events)
{
	struct env_state *st = poll->data;
	napi_handle_scope hs;
	napi_callback_scope cs;
	napi_value resource;
	bool scoped;

	(void)status;
	(void)events;
	if (!st || st->closing || !st->loop)
		return;
	if (napi_open_handle_scope(st->env, &hs) != napi_ok)
		return;
	scoped = napi_get_reference_value(st->env, st->resource, &resource) == napi_ok &&
		 napi_open_callback_scope(st->env, resource, st->actx, &cs) == napi_ok;
	st->running++;
	syncmem_loop_run_once(st->loop, 0);
	st->running--;
	/* Closing the callback scope runs the microtasks the callbacks queued. */
	if (scoped)
		napi_close_callback_scope(st->env, cs);
	napi_close_handle_scope(st->env, hs);
}

/* Keep the process alive exactly while something that should is pending. */
void sm_env_update_ref(struct env_state *st)
{
	if (!st->poll)
		return;
	if (st->keepalive > 0)
		uv_ref((uv_handle_t *)st->poll);
	else
		uv_unref((uv_handle_t *)st->poll);
}

/* This environment's loop, made and watched on first use: 0 or -errno. */
int sm_env_loop(struct env_state *st)
{
	struct uv_loop_s *uvl;
	napi_value resource, name;
	int err;

	if (st->loop)
		return 0;
	if (st->closing)
		return -ECANCELED;
	err = syncmem_loop_new(&st->loop);
	if (err)
		return err;
	if (napi_get_uv_event_loop(st->env, &uvl) != napi_ok)
		goto fail;
	if (napi_create_object(st->env, &resource) != napi_ok ||
	    napi_create_string_utf8(st->env, "syncmem", NAPI_AUTO_LENGTH, &name) != napi_ok ||
	    napi_async_init(st->env, resource, name, &st->actx) != napi_ok)
		goto fail;
	if (napi_create_reference(st->env, resource, 1, &st->resource) != napi_ok)
		goto fail_actx;
	st->poll = calloc(1, sizeof(*st->poll));
	if (!st->poll)
		goto fail_ref;
	if (uv_poll_init(uvl, st->poll, syncmem_loop_fd(st->loop)) != 0) {
		free(st->poll);
		st->poll = NULL;
		goto fail_ref;
	}
	st->poll->data = st;
	uv_poll_start(st->poll, UV_READABLE, on_ready);
	sm_env_update_ref(st);
	return 0;

fail_ref:
	napi_delete_reference(st->env, st->resource);
	st->resource = NULL;
fail_actx:
	napi_async_destroy(st->env, st->actx);
	st->actx = NULL;
fail:
	syncmem_loop_free(st->loop);
	st->loop = NULL;
	return -ENOMEM;
}

static void poll_closed(uv_handle_t *h)
{
	free(h);
}

/*
 * The environment goes away (its thread ends, or the process exits): no
 * JavaScript runs any more. Pending waits are cancelled, held locks
 * released, the loop freed.
 */
static void env_cleanup(void *arg)
{
	struct env_state *st = arg;

	st->closing = true;
	sm_locks_env_cleanup(st);
	if (st->poll) {
		uv_poll_stop(st->poll);
		st->poll->data = NULL;
		uv_close((uv_handle_t *)st->poll, poll_closed);
		st->poll = NULL;
	}
	/* Runs every pending callback at once: each sees st->closing. */
	syncmem_loop_free(st->loop);
	st->loop = NULL;
	if (st->resource) {
		napi_delete_reference(st->env, st->resource);
		st->resource = NULL;
	}
	if (st->actx) {
		napi_async_destroy(st->env, st->actx);
		st->actx = NULL;
	}
}

static void env_finalize(napi_env env, void *data, void *hint)
{
	(void)env;
	(void)hint;
	free(data);
}

struct env_state *sm_env(napi_env env)
{
	struct env_state *st = NULL;

	napi_get_instance_data(env, (void **)&st);
	return st;
}

/* ---- Async waits ------------------------------------------------------- */

struct wait_req {
	struct env_state *st;
	napi_deferred deferred;
	struct mapping *m;
};

static void wait_done(void *arg, int result)
{
	struct wait_req *w = arg;
	struct env_state *st = w->st;

	if (!st->closing && w->deferred) {
		const char *name = wait_result_name(result);

		if (name && result != SYNCMEM_NOT_EQUAL)
			napi_resolve_deferred(st->env, w->deferred, str(st->env, name));
		else
			napi_reject_deferred(st->env, w->deferred,
					     sm_errno_error(st->env, result < 0 ? result : -EPROTO,
							    "Atomics.waitAsync"));
	}
	sm_mapping_put(w->m);
	free(w);
}

/*
 * waitAsync(handle, byteOffset, value, is64, timeoutMs)
 *   -> "not-equal" | "timed-out" (nothing queued) | a promise of "ok" | "timed-out"
 */
static napi_value js_wait_async(napi_env env, napi_callback_info info)
{
	struct env_state *st = sm_env(env);
	struct wait_req *w;
	struct mapping *m;
	napi_value promise;
	uint64_t expected, id;
	int64_t ns;
	bool is64;
	void *addr;
	int ret;
	ARGS(5);

	if (argc < 5 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	if (napi_get_value_bool(env, argv[3], &is64) != napi_ok ||
	    !get_expected(env, argv[2], is64, &expected) || !get_timeout(env, argv[4], &ns))
		return bad_args(env, "waitAsync");
	addr = word_at(env, m, argv[1], is64 ? 8 : 4);
	if (!addr)
		return NULL;
	ret = sm_env_loop(st);
	if (ret) {
		sm_throw_errno(env, ret, "Atomics.waitAsync");
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		sm_throw_errno(env, -ENOMEM, "Atomics.waitAsync");
		return NULL;
	}
	w->st = st;
	w->m = m;
	sm_mapping_get(m);
	if (is64)
		ret = syncmem_wait_async64(st->loop, m->r, addr, expected, ns, wait_done, w, &id);
	else
		ret = syncmem_wait_async32(st->loop, m->r, addr, (uint32_t)expected, ns,
					   wait_done, w, &id);
	/*
	 * Queued: its callback runs from the loop, never before this returns,
	 * so the promise it settles is made now, and only for a queued wait.
	 */
	if (ret == SYNCMEM_PENDING) {
		if (napi_create_promise(env, &w->deferred, &promise) == napi_ok)
			return promise;
		/* Its callback (-ECANCELED) settles nothing. */
		w->deferred = NULL;
		syncmem_wait_cancel(st->loop, id);
		return NULL;
	}
	sm_mapping_put(m);
	free(w);
	if (ret < 0 || !wait_result_name(ret)) {
		sm_throw_errno(env, ret < 0 ? ret : -EPROTO, "Atomics.waitAsync");
		return NULL;
	}
	return str(env, wait_result_name(ret));
}

/* ---- Pools --------------------------------------------------------------- */

struct pool_ref {
	struct syncmem_pool *p;
	struct mapping *m;
};

static void pool_finalize(napi_env env, void *data, void *hint)
{
	struct pool_ref *pr = data;

	(void)env;
	(void)hint;
	syncmem_pool_detach(pr->p);
	sm_mapping_put(pr->m);
	free(pr);
}

static struct pool_ref *get_pool(napi_env env, napi_value v)
{
	struct pool_ref *pr;
	bool ok = false;

	if (napi_check_object_type_tag(env, v, &pool_tag, &ok) != napi_ok || !ok ||
	    napi_get_value_external(env, v, (void **)&pr) != napi_ok) {
		napi_throw_type_error(env, NULL, "syncmem: not a pool handle");
		return NULL;
	}
	return pr;
}

/* poolFootprint(blockSize, nblocks) -> bytes (0: impossible) */
static napi_value js_pool_footprint(napi_env env, napi_callback_info info)
{
	uint64_t bs, n;
	ARGS(2);

	if (argc < 2 || !get_u64(env, argv[0], UINT32_MAX, &bs) ||
	    !get_u64(env, argv[1], UINT32_MAX, &n))
		return bad_args(env, "poolFootprint");
	return num(env, (double)syncmem_pool_footprint((uint32_t)bs, (uint32_t)n));
}

/*
 * poolOpen(handle, offset, init, blockSize, nblocks)
 *   -> [pool handle, block stride, nblocks], as the pool's header said when
 *      init or attach validated it
 */
static napi_value js_pool_open(napi_env env, napi_callback_info info)
{
	const struct syncmem_pool_header *h;
	struct pool_ref *pr;
	struct mapping *m;
	uint64_t off, bs = 0, n = 0;
	uint32_t stride, count;
	bool init;
	napi_value v, arr;
	int err;
	ARGS(5);

	if (argc < 5 || !(m = handle_mapping(env, argv[0], NULL)))
		return NULL;
	if (!get_u64(env, argv[1], SIZE_MAX, &off) ||
	    napi_get_value_bool(env, argv[2], &init) != napi_ok ||
	    (init && (!get_u64(env, argv[3], UINT32_MAX, &bs) ||
		      !get_u64(env, argv[4], UINT32_MAX, &n))))
		return bad_args(env, "poolOpen");
	if (off >= m->size) {
		napi_throw_range_error(env, NULL, "syncmem: pool offset outside the region");
		return NULL;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr) {
		sm_throw_errno(env, -ENOMEM, "Pool");
		return NULL;
	}
	if (init)
		err = syncmem_pool_init((char *)m->base + off, m->size - off, (uint32_t)bs,
					(uint32_t)n, &pr->p);
	else
		err = syncmem_pool_attach((char *)m->base + off, m->size - off, &pr->p);
	if (err) {
		free(pr);
		sm_throw_errno(env, err, init ? "Pool.init" : "Pool.attach");
		return NULL;
	}
	h = (const void *)((char *)m->base + off);
	stride = atomic_load_explicit((_Atomic uint32_t *)&h->block_size, memory_order_relaxed);
	count = atomic_load_explicit((_Atomic uint32_t *)&h->nblocks, memory_order_relaxed);
	sm_mapping_get(m);
	pr->m = m;
	if (napi_create_external(env, pr, pool_finalize, NULL, &v) != napi_ok) {
		pool_finalize(env, pr, NULL);
		return NULL;
	}
	napi_type_tag_object(env, v, &pool_tag);
	napi_create_array_with_length(env, 3, &arr);
	napi_set_element(env, arr, 0, v);
	napi_set_element(env, arr, 1, num(env, stride));
	napi_set_element(env, arr, 2, num(env, count));
	return arr;
}

/* poolAlloc(pool) -> offset from the pool's start, or null when none is free */
static napi_value js_pool_alloc(napi_env env, napi_callback_info info)
{
	struct pool_ref *pr;
	uint32_t off;
	napi_value null;
	int err;
	ARGS(1);

	if (argc < 1 || !(pr = get_pool(env, argv[0])))
		return NULL;
	err = syncmem_pool_alloc_checked(pr->p, &off);
	if (err == -ENOMEM) {
		napi_get_null(env, &null);
		return null;
	}
	if (err) {
		sm_throw_errno(env, err, "pool.alloc");
		return NULL;
	}
	return num(env, off);
}

/* poolFree(pool, offset) */
static napi_value js_pool_free(napi_env env, napi_callback_info info)
{
	struct pool_ref *pr;
	uint64_t off;
	int err;
	ARGS(2);

	if (argc < 2 || !(pr = get_pool(env, argv[0])))
		return NULL;
	if (!get_u64(env, argv[1], UINT32_MAX, &off))
		err = -EINVAL;
	else
		err = syncmem_pool_free(pr->p, (uint32_t)off);
	if (err)
		sm_throw_errno(env, err, "pool.free");
	return NULL;
}

/* poolFreeCount(pool) -> free blocks */
static napi_value js_pool_free_count(napi_env env, napi_callback_info info)
{
	struct pool_ref *pr;
	ARGS(1);

	if (argc < 1 || !(pr = get_pool(env, argv[0])))
		return NULL;
	return num(env, syncmem_pool_free_count(pr->p));
}

/* ---- Misc ------------------------------------------------------------------ */

/* strerror(-errno) -> text */
static napi_value js_strerror(napi_env env, napi_callback_info info)
{
	int32_t e;
	ARGS(1);

	if (argc < 1 || napi_get_value_int32(env, argv[0], &e) != napi_ok)
		return bad_args(env, "strerror");
	return str(env, syncmem_strerror(e));
}

/* pending() -> [loop pending, keepalive] (tests) */
static napi_value js_pending(napi_env env, napi_callback_info info)
{
	struct env_state *st = sm_env(env);
	napi_value arr;

	(void)info;
	napi_create_array_with_length(env, 2, &arr);
	napi_set_element(env, arr, 0, num(env, (double)syncmem_loop_pending(st->loop)));
	napi_set_element(env, arr, 1, num(env, st->keepalive));
	return arr;
}

NAPI_MODULE_INIT()
{
	static const struct {
		const char *name;
		napi_callback fn;
	} fns[] = {
		{ "open", js_open },
		{ "fromFd", js_from_fd },
		{ "buffer", js_buffer },
		{ "info", js_info },
		{ "close", js_close },
		{ "unlink", js_unlink },
		{ "lookup", js_lookup },
		{ "wait", js_wait },
		{ "notify", js_notify },
		{ "waitAsync", js_wait_async },
		{ "waiters", js_waiters },
		{ "poolFootprint", js_pool_footprint },
		{ "poolOpen", js_pool_open },
		{ "poolAlloc", js_pool_alloc },
		{ "poolFree", js_pool_free },
		{ "poolFreeCount", js_pool_free_count },
		{ "strerror", js_strerror },
		{ "pending", js_pending },
	};
	struct env_state *st = calloc(1, sizeof(*st));
	napi_value fn, v;

	if (!st) {
		napi_throw_error(env, NULL, "syncmem: out of memory");
		return NULL;
	}
	st->env = env;
	if (napi_set_instance_data(env, st, env_finalize, NULL) != napi_ok) {
		free(st);
		return NULL;
	}
	napi_add_env_cleanup_hook(env, env_cleanup, st);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL,
					 &fn) != napi_ok ||
		    napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok)
			return NULL;
	}
	if (sm_locks_init(env, exports) != 0)
		return NULL;
	napi_create_string_utf8(env, syncmem_version(), NAPI_AUTO_LENGTH, &v);
	napi_set_named_property(env, exports, "libraryVersion", v);
	return exports;
}
