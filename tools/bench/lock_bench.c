// SPDX-License-Identifier: GPL-2.0
/*
 * lock: contended lock+unlock throughput of syncmem_lock (default and fair
 * mode) against a process-shared pthread mutex, with 2 and 4 processes on
 * one lock, in the same run. Prints operations per second.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "bench.h"
#include "syncmem.h"

#define SECONDS 1.0

struct shared {
	struct syncmem_lock lock;
	uint64_t counter;
	_Atomic int go;
	double rate[8];
};

static struct syncmem_region *region;
/* The baseline lives in memfd memory: futexes do not work across processes on region pages. */
static pthread_mutex_t *mutex;

/* @procs processes hammer one lock for SECONDS; total operations per second. */
static double contended(struct shared *sh, int procs, int use_mutex, unsigned int flags)
{
	pid_t pid[8];
	double total = 0;

	syncmem_lock_init(&sh->lock, flags);
	atomic_store(&sh->go, 0);
	for (int i = 0; i < procs; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			double t0, t1;
			long n = 0;

			while (!atomic_load(&sh->go))
				;
			t0 = bench_now();
			do {
				for (int k = 0; k < 256; k++) {
					if (use_mutex)
						pthread_mutex_lock(mutex);
					else
						syncmem_lock(region, &sh->lock);
					sh->counter++;
					if (use_mutex)
						pthread_mutex_unlock(mutex);
					else
						syncmem_unlock(region, &sh->lock);
				}
				n += 256;
				t1 = bench_now();
			} while (t1 - t0 < SECONDS);
			sh->rate[i] = n / (t1 - t0);
			_exit(0);
		}
	}
	atomic_store(&sh->go, 1);
	for (int i = 0; i < procs; i++) {
		waitpid(pid[i], NULL, 0);
		total += sh->rate[i];
	}
	return total;
}

int main(void)
{
	pthread_mutexattr_t a;
	struct shared *sh;
	int err;

	err = syncmem_open(NULL, 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "lock: %s\n", syncmem_strerror(err));
		return 1;
	}
	sh = syncmem_base(region);
	mutex = memfd_shared(4096);
	if (!mutex)
		return 1;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(mutex, &a);
	for (int procs = 2; procs <= 4; procs += 2) {
		char what[64];
		double base = contended(sh, procs, 1, 0);

		snprintf(what, sizeof(what), "lock contended, %d processes", procs);
		bench_report(what, "ops/s", contended(sh, procs, 0, 0), "pthread", base, 1);
		snprintf(what, sizeof(what), "fair lock contended, %d processes", procs);
		bench_report(what, "ops/s", contended(sh, procs, 0, SYNCMEM_LOCK_FAIR), "pthread",
			     base, 1);
	}
	syncmem_close(region);
	return 0;
}
