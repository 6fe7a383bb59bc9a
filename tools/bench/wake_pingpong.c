// SPDX-License-Identifier: GPL-2.0
/*
 * wake-pingpong: two processes bounce a value through two words with
 * wait/notify. syncmem (a region) against a process-shared futex (memfd
 * memory), measured in the same run. Prints round trips per second.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <sys/wait.h>

#include "bench.h"
#include "syncmem.h"

struct words {
	_Atomic uint32_t ping;
	uint32_t pad[15];
	_Atomic uint32_t pong;
};

struct ops {
	void (*wait)(_Atomic uint32_t *word, uint32_t current);
	void (*wake)(_Atomic uint32_t *word);
};

#define ROUNDS 5

static struct syncmem_region *region;

static void sm_wait(_Atomic uint32_t *w, uint32_t cur)
{
	syncmem_wait32(region, (uint32_t *)w, cur, SYNCMEM_FOREVER);
}

static void sm_wake(_Atomic uint32_t *w)
{
	syncmem_notify(region, (uint32_t *)w, 1);
}

static void fx_wait(_Atomic uint32_t *w, uint32_t cur)
{
	futex_wait((uint32_t *)w, cur);
}

static void fx_wake(_Atomic uint32_t *w)
{
	futex_wake((uint32_t *)w, 1);
}

static void await_value(const struct ops *o, _Atomic uint32_t *w, uint32_t want)
{
	uint32_t v;

	while ((v = atomic_load(w)) != want)
		o->wait(w, v);
}

static void post_value(const struct ops *o, _Atomic uint32_t *w, uint32_t v)
{
	atomic_store(w, v);
	o->wake(w);
}

/* Round trips per second over @n rounds between this process and a child. */
static double pingpong(const struct ops *o, struct words *w, uint32_t n)
{
	double t0, t1;
	pid_t pid;

	atomic_store(&w->ping, 0);
	atomic_store(&w->pong, 0);
	pid = fork();
	if (pid == 0) {
		for (uint32_t i = 1; i <= n; i++) {
			await_value(o, &w->ping, i);
			post_value(o, &w->pong, i);
		}
		_exit(0);
	}
	t0 = bench_now();
	for (uint32_t i = 1; i <= n; i++) {
		post_value(o, &w->ping, i);
		await_value(o, &w->pong, i);
	}
	t1 = bench_now();
	waitpid(pid, NULL, 0);
	return n / (t1 - t0);
}

int main(int argc, char **argv)
{
	static const struct ops sm = { sm_wait, sm_wake }, fx = { fx_wait, fx_wake };
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 10000;
	struct words *fw;
	double a[ROUNDS], b[ROUNDS];
	int err;

	err = syncmem_open(NULL, 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "wake-pingpong: %s\n", syncmem_strerror(err));
		return 1;
	}
	fw = memfd_shared(4096);
	if (!fw)
		return 1;
	/* Warm up both, then alternate rounds so drift hits both alike. */
	pingpong(&sm, syncmem_base(region), n / 10);
	pingpong(&fx, fw, n / 10);
	for (int i = 0; i < ROUNDS; i++) {
		a[i] = pingpong(&sm, syncmem_base(region), n);
		b[i] = pingpong(&fx, fw, n);
	}
	bench_report("wake-pingpong round trips (median)", "per s",
		     bench_median(a, ROUNDS), "futex", bench_median(b, ROUNDS), 1);
	syncmem_close(region);
	return 0;
}
