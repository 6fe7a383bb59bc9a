// SPDX-License-Identifier: LGPL-2.1-or-later
/* The calling thread's id, cached so that lock fast paths make no system call. */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "internal.h"

__thread uint32_t syncmem__cached_tid __attribute__((tls_model("initial-exec")));

/* A forked child is a new thread with the same TLS: look again. */
static void forget_tid(void)
{
	syncmem__cached_tid = 0;
}

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

uint32_t syncmem__tid_slow(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, register_fork_handler);
	syncmem__cached_tid = (uint32_t)gettid();
	return syncmem__cached_tid;
}
