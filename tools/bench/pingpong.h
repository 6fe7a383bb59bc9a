/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A ping-pong between this process and a forked child over two words: the
 * parent posts ping = i and waits for pong = i; the child mirrors it. Each
 * side brings its own way of waiting for a word and of waking its peer.
 */
#ifndef SYNCMEM_BENCH_PINGPONG_H
#define SYNCMEM_BENCH_PINGPONG_H

#include <stdatomic.h>
#include <sys/wait.h>

#include "bench.h"

struct pp_words {
	_Atomic uint32_t ping;
	uint32_t pad[15];		/* separate cache lines */
	_Atomic uint32_t pong;
};

struct pp_ops {
	/* Sleep until *word may differ from @current (spurious returns are fine). */
	void (*wait)(_Atomic uint32_t *word, uint32_t current);
	/* Wake the peer sleeping on @word. */
	void (*wake)(_Atomic uint32_t *word);
	/* If set, after the last round: send what wake() left for the next wait. */
	void (*flush)(void);
};

static inline void pp_await(const struct pp_ops *o, _Atomic uint32_t *w, uint32_t want)
{
	uint32_t v;

	while ((v = atomic_load(w)) != want)
		o->wait(w, v);
}

static inline void pp_post(const struct pp_ops *o, _Atomic uint32_t *w, uint32_t v)
{
	atomic_store(w, v);
	o->wake(w);
}

/* Round trips per second over @n rounds. */
static inline double pingpong(const struct pp_ops *parent, const struct pp_ops *child,
			      struct pp_words *w, uint32_t n)
{
	double t0, t1;
	pid_t pid;

	atomic_store(&w->ping, 0);
	atomic_store(&w->pong, 0);
	pid = fork();
	if (pid == 0) {
		for (uint32_t i = 1; i <= n; i++) {
			pp_await(child, &w->ping, i);
			pp_post(child, &w->pong, i);
		}
		if (child->flush)
			child->flush();
		_exit(0);
	}
	t0 = bench_now();
	for (uint32_t i = 1; i <= n; i++) {
		pp_post(parent, &w->ping, i);
		pp_await(parent, &w->pong, i);
	}
	t1 = bench_now();
	if (parent->flush)
		parent->flush();
	waitpid(pid, NULL, 0);
	return n / (t1 - t0);
}

/* The process-shared futex baseline. */
static inline void pp_futex_wait(_Atomic uint32_t *w, uint32_t cur)
{
	futex_wait((uint32_t *)w, cur);
}

static inline void pp_futex_wake(_Atomic uint32_t *w)
{
	futex_wake((uint32_t *)w, 1);
}

static const struct pp_ops pp_futex = { .wait = pp_futex_wait, .wake = pp_futex_wake };

#endif /* SYNCMEM_BENCH_PINGPONG_H */
