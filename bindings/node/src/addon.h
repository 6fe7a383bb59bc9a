/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* syncmem for Node.js: what the native files share. */
#ifndef SM_ADDON_H
#define SM_ADDON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define NAPI_VERSION 8
#include <node_api.h>
#include <uv.h>

#include <syncmem.h>

/* A region's mapping, shared by every thread of the process (addon.c). */
struct mapping {
	atomic_int refs;
	struct syncmem_region *r;
	void *base;
	size_t size;
	bool rdonly;
};

void sm_mapping_get(struct mapping *m);
void sm_mapping_put(struct mapping *m);

/* One Node environment (the main thread or a worker): instance data. */
struct env_state {
	napi_env env;
	struct syncmem_loop *loop;	/* made on first use */
	uv_poll_t *poll;		/* watches syncmem_loop_fd(loop) */
	napi_ref resource;		/* async resource of the callback scope */
	napi_async_context actx;
	int keepalive;			/* pending lock requests: they keep the process alive */
	int running;
	bool closing;			/* the environment is being torn down */
};

struct env_state *sm_env(napi_env env);
int sm_env_loop(struct env_state *st);
struct mapping *sm_region_mapping(napi_env env, napi_value v);
void sm_env_update_ref(struct env_state *st);

napi_value sm_errno_error(napi_env env, int err, const char *what);
void sm_throw_errno(napi_env env, int err, const char *what);

/* locks.c */
int sm_locks_init(napi_env env, napi_value exports);
void sm_locks_env_cleanup(struct env_state *st);

#endif
