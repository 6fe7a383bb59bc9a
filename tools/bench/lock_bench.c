// SPDX-License-Identifier: GPL-2.0
/*
 * lock: syncmem_lock against a process-shared pthread mutex, in the same run:
 *  - contended lock+unlock throughput with 2 and 4 processes on one lock
 *    (default and fair mode, and fair against default), medians of
 *    alternating rounds;
 *  - hand-over latency: from an unlock to the moment the waiter that gets
 *    the lock runs, for a blocking waiter and for an async one (its callback
 *    from the io_uring loop), against a pthread waiter, and the async
 *    waiter against the blocking one; and for a ring waiter (a LOCK command
 *    in its own io_uring, syncmem_prep_lock) against the blocking one.
 *
 * Usage: lock_bench [handover] (only the ring waiter's hand-over against
 * the blocking one's); SYNCMEM_RING_FLAGS picks the ring's setup flags
 * (ringflags.h).
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "bench.h"
#include "ringflags.h"
#include "syncmem.h"

#define SECONDS		0.4
#define ROUNDS		5
#define HANDOVERS	200

enum kind { PTHREAD, PTHREAD_ADAPTIVE, SYNCMEM, SYNCMEM_FAIR, SYNCMEM_ASYNC, SYNCMEM_RING };

struct shared {
	struct syncmem_lock lock;
	uint64_t counter;
	_Atomic int go;
	_Atomic int phase;
	_Atomic int64_t t_unlock;
	double rate[8];
	double latency[HANDOVERS];
};

static struct syncmem_region *region;
static struct ring_variant variant[RING_VARIANTS_MAX];
static int cur;			/* the ring waiter's variant */
/*
 * The baselines live in memfd memory (futexes do not work across processes
 * on region pages): a default process-shared mutex, and an adaptive one
 * (it spins a little before sleeping, as syncmem_lock does).
 */
static pthread_mutex_t *mutex, *adaptive;

static void take(struct shared *sh, enum kind k)
{
	if (k == PTHREAD || k == PTHREAD_ADAPTIVE)
		pthread_mutex_lock(k == PTHREAD ? mutex : adaptive);
	else
		syncmem_lock(region, &sh->lock);
}

static void release(struct shared *sh, enum kind k)
{
	if (k == PTHREAD || k == PTHREAD_ADAPTIVE)
		pthread_mutex_unlock(k == PTHREAD ? mutex : adaptive);
	else
		syncmem_unlock(region, &sh->lock);
}

/* @procs processes hammer one lock for SECONDS; total operations per second. */
static double contended(struct shared *sh, int procs, enum kind k)
{
	pid_t pid[8];
	double total = 0;

	syncmem_lock_init(&sh->lock, k == SYNCMEM_FAIR ? SYNCMEM_LOCK_FAIR : 0);
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
				for (int j = 0; j < 64; j++) {
					take(sh, k);
					sh->counter++;
					release(sh, k);
				}
				n += 64;
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

static int64_t now_ns(void)
{
	return (int64_t)(bench_now() * 1e9);
}

struct async_waiter {
	struct shared *sh;
	int round;
};

static void async_got_it(void *arg, int result)
{
	struct async_waiter *w = arg;

	if (result)
		return;
	w->sh->latency[w->round] = now_ns() - atomic_load(&w->sh->t_unlock);
	syncmem_unlock(region, &w->sh->lock);
}

/*
 * A ring waiter's turn: submit the LOCK and sleep for its CQE in one
 * system call, as a blocking waiter's one LOCK_WAIT; 0 once it holds the lock.
 */
static int ring_take(struct io_uring *ring, struct shared *sh)
{
	struct io_uring_cqe *cqe;
	int res;

	syncmem_prep_lock(io_uring_get_sqe(ring), region, &sh->lock, -1);
	if (io_uring_submit_and_wait(ring, 1) < 0 || io_uring_wait_cqe(ring, &cqe))
		return -1;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/*
 * Median ns from unlock to the waiter running with the lock. Each round:
 * the parent holds the lock, the child starts waiting (blocking, from its
 * loop, or from its ring) and says so, the parent gives it 2 ms to fall
 * asleep, then stamps the time and unlocks.
 */
static double handover(struct shared *sh, enum kind k)
{
	struct syncmem_loop *loop = NULL;
	struct io_uring ring;
	pid_t pid;

	syncmem_lock_init(&sh->lock, 0);
	atomic_store(&sh->phase, 0);
	pid = fork();
	if (pid == 0) {
		if (k == SYNCMEM_ASYNC && syncmem_loop_new(&loop))
			_exit(1);
		if (k == SYNCMEM_RING && io_uring_queue_init(4, &ring, variant[cur].flags))
			_exit(1);
		for (int i = 0; i < HANDOVERS; i++) {
			struct async_waiter w = { sh, i };

			while (atomic_load(&sh->phase) != 2 * i + 1)
				;
			atomic_store(&sh->phase, 2 * i + 2);
			if (k == SYNCMEM_ASYNC) {
				if (syncmem_lock_async(loop, region, &sh->lock, async_got_it, &w) ||
				    syncmem_loop_run(loop))
					_exit(2);
				continue;
			}
			if (k == SYNCMEM_RING) {
				if (ring_take(&ring, sh))
					_exit(2);
			} else {
				take(sh, k);
			}
			sh->latency[i] = now_ns() - atomic_load(&sh->t_unlock);
			release(sh, k == SYNCMEM_RING ? SYNCMEM : k);
		}
		syncmem_loop_free(loop);
		_exit(0);
	}
	for (int i = 0; i < HANDOVERS; i++) {
		take(sh, k == SYNCMEM_ASYNC || k == SYNCMEM_RING ? SYNCMEM : k);
		atomic_store(&sh->phase, 2 * i + 1);
		while (atomic_load(&sh->phase) != 2 * i + 2)
			;
		usleep(2000);
		atomic_store(&sh->t_unlock, now_ns());
		release(sh, k == SYNCMEM_ASYNC || k == SYNCMEM_RING ? SYNCMEM : k);
		/* Wait until the child had its turn before taking it again. */
		for (double got = 0; i + 1 < HANDOVERS && !got;)
			__atomic_load(&sh->latency[i], &got, __ATOMIC_ACQUIRE);
	}
	waitpid(pid, NULL, 0);
	return bench_median(sh->latency, HANDOVERS);
}

/* Ring waiters (each variant) against blocking ones: alternating rounds, medians of medians. */
static void ring_handover(struct shared *sh, int variants)
{
	double sr[ROUNDS], rg[RING_VARIANTS_MAX][ROUNDS], sm;
	char label[80];

	for (int i = 0; i < ROUNDS; i++) {
		memset(sh->latency, 0, sizeof(sh->latency));
		sr[i] = handover(sh, SYNCMEM);
		for (cur = 0; cur < variants; cur++) {
			memset(sh->latency, 0, sizeof(sh->latency));
			rg[cur][i] = handover(sh, SYNCMEM_RING);
		}
	}
	ring_spread("lock hand-over, blocking waiter", "ns", sr, ROUNDS);
	sm = bench_median(sr, ROUNDS);
	for (cur = 0; cur < variants; cur++) {
		const char *what = ring_label(label, sizeof(label), "lock hand-over, ring waiter",
					      &variant[cur], variants);

		ring_spread(what, "ns", rg[cur], ROUNDS);
		bench_report(what, "ns", bench_median(rg[cur], ROUNDS), "blocking", sm, 0);
	}
}

int main(int argc, char **argv)
{
	int variants = ring_variants("lock", variant);
	bool only_handover = argc > 1 && !strcmp(argv[1], "handover");
	pthread_mutexattr_t a;
	struct shared *sh;
	int err;

	if (variants <= 0)
		return 1;

	err = syncmem_open(NULL, sizeof(struct shared) + 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "lock: %s\n", syncmem_strerror(err));
		return 1;
	}
	sh = syncmem_base(region);
	if (only_handover) {
		ring_handover(sh, variants);
		syncmem_close(region);
		return 0;
	}
	mutex = memfd_shared(4096);
	if (!mutex)
		return 1;
	adaptive = mutex + 1;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(mutex, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(adaptive, &a);
	for (int procs = 2; procs <= 4; procs += 2) {
		double p[ROUNDS], ad[ROUNDS], s[ROUNDS], f[ROUNDS], pm, sm;
		char what[64];

		for (int i = 0; i < ROUNDS; i++) {
			p[i] = contended(sh, procs, PTHREAD);
			ad[i] = contended(sh, procs, PTHREAD_ADAPTIVE);
			s[i] = contended(sh, procs, SYNCMEM);
			f[i] = contended(sh, procs, SYNCMEM_FAIR);
		}
		pm = bench_median(p, ROUNDS);
		sm = bench_median(s, ROUNDS);
		snprintf(what, sizeof(what), "lock contended, %d processes", procs);
		bench_report(what, "ops/s", sm, "pthread", pm, 1);
		bench_report(what, "ops/s", sm, "adaptive", bench_median(ad, ROUNDS), 1);
		snprintf(what, sizeof(what), "fair lock contended, %d processes", procs);
		bench_report(what, "ops/s", bench_median(f, ROUNDS), "pthread", pm, 1);
		bench_report(what, "ops/s", bench_median(f, ROUNDS), "default", sm, 1);
	}
	{
		double pt, sy, as;

		memset(sh->latency, 0, sizeof(sh->latency));
		pt = handover(sh, PTHREAD);
		memset(sh->latency, 0, sizeof(sh->latency));
		sy = handover(sh, SYNCMEM);
		memset(sh->latency, 0, sizeof(sh->latency));
		as = handover(sh, SYNCMEM_ASYNC);
		bench_report("lock hand-over, blocking waiter", "ns", sy, "pthread", pt, 0);
		bench_report("lock hand-over, async waiter", "ns", as, "pthread", pt, 0);
		bench_report("lock hand-over, async waiter", "ns", as, "blocking", sy, 0);
		ring_handover(sh, variants);
	}
	syncmem_close(region);
	return 0;
}
