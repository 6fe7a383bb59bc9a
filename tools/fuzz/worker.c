// SPDX-License-Identifier: GPL-2.0
/*
 * Worker processes and their forked children. A worker runs several
 * fuzzing threads on one object table (and maybe a scribbler); a child
 * forked by any of them keeps fuzzing (one thread and a collision partner) with what it
 * inherited, for a while. Some workers and children run as nobody
 * (65534): any local user may call every ioctl. Children may also move to
 * a new IPC namespace, whose names die with it.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz.h"

#define MAX_THREADS 8

static pid_t thread_tids[MAX_THREADS];
static atomic_int nthreads;
static char process_who[96];	/* the process part of fz_who */

bool should_stop(void)
{
	uint64_t budget = atomic_load_explicit(&shared->ops_budget, memory_order_relaxed);

	return atomic_load_explicit(&shared->stop, memory_order_relaxed) ||
	       (budget && atomic_load_explicit(&shared->ioctls, memory_order_relaxed) >= budget);
}

pid_t random_thread(struct rng *r)
{
	int n = atomic_load(&nthreads);

	return n ? thread_tids[rng_below(r, n)] : 0;
}

__thread sigjmp_buf forever_env;
__thread volatile sig_atomic_t forever_armed;

static void on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&shared->signals, 1, memory_order_relaxed);
}

/* The stop: leave a call that may never return (see FOREVER_BEGIN). */
static void on_sigusr2(int sig)
{
	(void)sig;
	if (forever_armed) {
		forever_armed = 0;
		siglongjmp(forever_env, 1);
	}
}

void signals_init(void)
{
	struct sigaction sa = { .sa_handler = on_sigusr1, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_sigusr2;
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void drop_privileges(void)
{
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534)) {
		perror("fuzz: dropping to 65534");
		_exit(3);
	}
}

static void thread_register(struct thread_ctx *t)
{
	int i = atomic_fetch_add(&nthreads, 1);

	t->tid = (pid_t)syscall(SYS_gettid);
	if (i < MAX_THREADS)
		thread_tids[i] = t->tid;
	else
		atomic_fetch_sub(&nthreads, 1);
}

/* Every thread starts with a handle and a region or two. */
static void stock_table(struct thread_ctx *t)
{
	if (obj_count(K_HANDLE) < 2)
		open_handle(t);
	for (int i = 0; i < 2 && obj_count(K_REGION) < 4; i++)
		open_region(t, NULL, 0);
}

void thread_loop(struct thread_ctx *t, uint64_t max_ops)
{
	uint64_t ledger_ops = 0;

	stock_table(t);
	for (uint64_t n = 0; !should_stop() && (!max_ops || n < max_ops); n++) {
		unsigned int k = (unsigned int)rng_below(&t->rng, 100);

		if (k < 26) {
			proc_doing("region ioctls");
			op_region(t);
		} else if (k < 42) {
			proc_doing("async ioctls");
			op_async(t);
		} else if (k < 46) {
			proc_doing("io_uring commands");
			op_uring(t);
		} else if (k < 56) {
			proc_doing("handle ioctls");
			op_handle(t);
		} else if (k < 63) {
			proc_doing("files");
			op_files(t);
		} else if (k < 69) {
			proc_doing("memory");
			op_memory(t);
		} else if (k < 77) {
			proc_doing("invalid calls");
			op_invalid(t);
		} else if (k < 79) {
			proc_doing("processes");
			op_process(t);
		} else if (k < 85) {
			proc_doing("collisions");
			op_collide(t);
		} else if (t->ledger) {
			proc_doing("ledger step");
			ledger_step(t, t->ledger);
			if (++ledger_ops % 300 == 0) {
				ledger_check(t, t->ledger);
				if (rng_chance(&t->rng, 1, 4)) {
					ledger_close(t, t->ledger);
					t->ledger = ledger_new(t);
				}
			}
		}
	}
	proc_doing("stopping");
	reap_children();
	if (t->ledger) {
		ledger_check(t, t->ledger);
		ledger_close(t, t->ledger);
		t->ledger = NULL;
	}
	if (t->scratch_handle >= 0)
		close(t->scratch_handle);
	t->scratch_handle = -1;
}

struct thread_arg {
	struct thread_ctx ctx;
	pthread_t thread;
};

static void *thread_main(void *p)
{
	struct thread_ctx *t = p;

	thread_register(t);
	snprintf(fz_who, sizeof(fz_who), "%.80s thread %d", process_who, t->index);
	t->ledger = ledger_new(t);
	thread_loop(t, 0);
	return NULL;
}

void worker_main(int index, uint64_t seed, bool unprivileged)
{
	struct rng rng;
	struct thread_arg threads[MAX_THREADS];
	int n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!proc_register())
		_exit(0);
	if (unprivileged)
		drop_privileges();
	snprintf(process_who, sizeof(process_who), "worker %d seed %#llx%s", index,
		 (unsigned long long)seed, unprivileged ? " uid 65534" : "");
	rng_seed(&rng, seed);
	args_init();
	signals_init();
	n = 2 + (int)rng_below(&rng, 3);
	if (rng_chance(&rng, 1, 2))
		scribbler_start(rng_next(&rng));
	collide_start(rng_next(&rng), process_who);
	for (int i = 0; i < n; i++) {
		threads[i].ctx = (struct thread_ctx){
			.index = i, .unprivileged = unprivileged, .scratch_handle = -1,
		};
		rng_seed(&threads[i].ctx.rng, seed_derive(seed, 1, i));
	}
	/* Thread 0 is this one; its name is the worker's. */
	for (int i = 1; i < n; i++)
		if (pthread_create(&threads[i].thread, NULL, thread_main, &threads[i].ctx))
			n = i;
	thread_main(&threads[0].ctx);
	for (int i = 1; i < n; i++)
		pthread_join(threads[i].thread, NULL);
	obj_close_all();
	_exit(0);
}

void child_main(struct thread_ctx *parent, uint64_t seed)
{
	struct thread_ctx t = {
		.index = 0, .unprivileged = parent->unprivileged,
		.scratch_handle = -1,
	};
	/*
	 * The fds of the parent's threads' ledgers and scratch handles are not
	 * ours, nor those other threads were creating at the fork: holding them
	 * would keep those files from being released.
	 */
	close_range(PRIVATE_FD_BASE, INFRA_FD_BASE - 1, 0);
	obj_after_fork();
	uring_after_fork();
	collide_after_fork();
	atomic_store(&nthreads, 0);
	if (!proc_register())
		_exit(0);
	rng_seed(&t.rng, seed);
	if (!t.unprivileged && rng_chance(&t.rng, 1, 6) && unshare(CLONE_NEWIPC) == 0)
		atomic_fetch_add(&shared->namespaces, 1);
	if (!t.unprivileged && rng_chance(&t.rng, 1, 8)) {
		drop_privileges();
		t.unprivileged = true;
	}
	snprintf(process_who, sizeof(process_who), "child seed %#llx%s of %.50s",
		 (unsigned long long)seed, t.unprivileged ? " uid 65534" : "", fz_who);
	snprintf(fz_who, sizeof(fz_who), "%s", process_who);
	thread_register(&t);
	collide_start(rng_next(&t.rng), process_who);
	t.ledger = ledger_new(&t);
	thread_loop(&t, 200 + rng_below(&t.rng, 3000));
	obj_close_all();
	_exit(0);
}
