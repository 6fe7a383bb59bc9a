// SPDX-License-Identifier: GPL-2.0
/*
 * pool: alloc+free pairs per second of the lock-free block pool, against
 * glibc malloc/free of the same size and against a free list behind a
 * process-shared pthread mutex, single-threaded and contended (2 threads,
 * 2 processes), and blocks allocated in one process and freed in another,
 * in the same run.
 *
 *   pool_bench                 throughput table
 *   pool_bench pairs KIND N    N pairs of KIND (pool, malloc, mutex) inside
 *                              run_pairs(), for valgrind --tool=callgrind
 *                              --toggle-collect=run_pairs (instructions)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>

#include "bench.h"
#include "syncmem.h"

#define BLOCK 64
#define NBLOCKS 1024
#define SECONDS 1.0

/* The baseline: a free list of indices behind one process-shared mutex. */
struct mutex_list {
	pthread_mutex_t lock;
	uint32_t head;			/* index + 1, 0: empty */
	uint32_t next[NBLOCKS];
	char blocks[NBLOCKS][BLOCK];
};

static struct mutex_list *mutex_list_new(void)
{
	struct mutex_list *l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t a;

	if (l == MAP_FAILED)
		return NULL;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&l->lock, &a);
	for (uint32_t i = 0; i < NBLOCKS; i++)
		l->next[i] = i + 1 < NBLOCKS ? i + 2 : 0;
	l->head = 1;
	return l;
}

__attribute__((noinline)) uint32_t mutex_alloc(struct mutex_list *l);
__attribute__((noinline)) void mutex_free(struct mutex_list *l, uint32_t i);

__attribute__((noinline)) uint32_t mutex_alloc(struct mutex_list *l)
{
	uint32_t i;

	pthread_mutex_lock(&l->lock);
	i = l->head;
	if (i)
		l->head = l->next[i - 1];
	pthread_mutex_unlock(&l->lock);
	return i;
}

__attribute__((noinline)) void mutex_free(struct mutex_list *l, uint32_t i)
{
	pthread_mutex_lock(&l->lock);
	l->next[i - 1] = l->head;
	l->head = i;
	pthread_mutex_unlock(&l->lock);
}

enum kind { POOL, MALLOC, MUTEX };

struct target {
	enum kind kind;
	struct syncmem_pool *pool;
	struct mutex_list *list;
};

/* @n alloc+free pairs, each touching its block. Kept out of line for callgrind. */
__attribute__((noinline)) void run_pairs(const struct target *t, long n);
__attribute__((noinline)) void run_pairs(const struct target *t, long n)
{
	for (long k = 0; k < n; k++) {
		if (t->kind == POOL) {
			uint32_t off = syncmem_pool_alloc(t->pool);

			*(volatile char *)syncmem_pool_ptr(t->pool, off) = 1;
			syncmem_pool_free(t->pool, off);
		} else if (t->kind == MALLOC) {
			char *p = malloc(BLOCK);

			*(volatile char *)p = 1;
			free(p);
		} else {
			uint32_t i = mutex_alloc(t->list);

			*(volatile char *)t->list->blocks[i - 1] = 1;
			mutex_free(t->list, i);
		}
	}
}

/* Pairs per second for SECONDS, run in batches. */
static double pairs_per_second(const struct target *t)
{
	double t0 = bench_now(), t1;
	long n = 0;

	do {
		run_pairs(t, 4096);
		n += 4096;
		t1 = bench_now();
	} while (t1 - t0 < SECONDS);
	return n / (t1 - t0);
}

struct thread_slot {
	const struct target *t;
	double rate;
};

static void *thread_fn(void *arg)
{
	struct thread_slot *slot = arg;

	slot->rate = pairs_per_second(slot->t);
	return NULL;
}

/* Total pairs per second of 2 threads on one target. */
static double two_threads(const struct target *t)
{
	struct thread_slot slot[2] = { { t, 0 }, { t, 0 } };
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, thread_fn, &slot[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return slot[0].rate + slot[1].rate;
}

/* Total pairs per second of 2 processes on one target in shared memory. */
static double two_processes(const struct target *t)
{
	double *rates = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			     -1, 0);
	pid_t pid[2];
	double total;

	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			rates[i] = pairs_per_second(t);
			_exit(0);
		}
	}
	for (int i = 0; i < 2; i++)
		waitpid(pid[i], NULL, 0);
	total = rates[0] + rates[1];
	munmap(rates, 4096);
	return total;
}

/*
 * One process allocates and another frees: the producer hands each block's
 * index to the consumer through a single-producer single-consumer ring in
 * shared memory (the same ring for both targets), the consumer frees it.
 * Blocks per second that went through, over SECONDS.
 */
#define RING 256
struct handover {
	_Atomic uint32_t head, tail;	/* consumer's, producer's count */
	_Atomic int stop;
	uint32_t ring[RING];
};

static uint32_t take_block(const struct target *t)
{
	if (t->kind == POOL)
		return syncmem_pool_alloc(t->pool);
	return mutex_alloc(t->list);
}

static void give_block(const struct target *t, uint32_t b)
{
	if (t->kind == POOL)
		syncmem_pool_free(t->pool, b);
	else
		mutex_free(t->list, b);
}

static double across_processes(const struct target *t)
{
	struct handover *h = mmap(NULL, sizeof(*h) + sizeof(double), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *rate = (double *)(h + 1), total;
	pid_t pid[2];

	pid[0] = fork();
	if (pid[0] == 0) {		/* producer */
		while (!atomic_load_explicit(&h->stop, memory_order_relaxed)) {
			uint32_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
			uint32_t b;

			if (tail - atomic_load_explicit(&h->head, memory_order_acquire) == RING)
				continue;	/* ring full */
			b = take_block(t);
			if (!b)
				continue;	/* every block is in the ring */
			h->ring[tail % RING] = b;
			/* Release: the index is written before it is published. */
			atomic_store_explicit(&h->tail, tail + 1, memory_order_release);
		}
		_exit(0);
	}
	pid[1] = fork();
	if (pid[1] == 0) {		/* consumer */
		double t0 = bench_now(), t1;
		long n = 0;

		do {
			for (int k = 0; k < 4096; k++) {
				uint32_t head = atomic_load_explicit(&h->head, memory_order_relaxed);

				while (atomic_load_explicit(&h->tail, memory_order_acquire) == head)
					;
				give_block(t, h->ring[head % RING]);
				/* Release: the slot was read before it is reused. */
				atomic_store_explicit(&h->head, head + 1, memory_order_release);
			}
			n += 4096;
			t1 = bench_now();
		} while (t1 - t0 < SECONDS);
		*rate = n / (t1 - t0);
		atomic_store(&h->stop, 1);
		_exit(0);
	}
	waitpid(pid[1], NULL, 0);
	waitpid(pid[0], NULL, 0);
	/* Give back what the ring still holds, for the next run. */
	while (atomic_load(&h->head) != atomic_load(&h->tail)) {
		give_block(t, h->ring[atomic_load(&h->head) % RING]);
		atomic_fetch_add(&h->head, 1);
	}
	total = *rate;
	munmap(h, sizeof(*h) + sizeof(double));
	return total;
}

static struct syncmem_pool *pool_new(void)
{
	size_t len = syncmem_pool_footprint(BLOCK, NBLOCKS);
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct syncmem_pool *p;

	if (mem == MAP_FAILED || syncmem_pool_init(mem, len, BLOCK, NBLOCKS, &p))
		return NULL;
	return p;
}

int main(int argc, char **argv)
{
	struct target pool = { POOL, pool_new(), NULL };
	struct target mal = { MALLOC, NULL, NULL };
	struct target mtx = { MUTEX, NULL, mutex_list_new() };

	if (!pool.pool || !mtx.list)
		return 1;
	if (argc == 4 && !strcmp(argv[1], "pairs")) {
		const struct target *t = !strcmp(argv[2], "pool") ? &pool :
					 !strcmp(argv[2], "malloc") ? &mal : &mtx;

		run_pairs(t, 1000);	/* warm up: malloc's arena, first faults */
		run_pairs(t, atol(argv[3]));
		return 0;
	}
	bench_report("pool pairs, 1 thread", "per s", pairs_per_second(&pool), "malloc",
		     pairs_per_second(&mal), 1);
	bench_report("pool pairs, 1 thread", "per s", pairs_per_second(&pool), "mutex",
		     pairs_per_second(&mtx), 1);
	bench_report("pool pairs, 2 threads", "per s", two_threads(&pool), "malloc",
		     two_threads(&mal), 1);
	bench_report("pool pairs, 2 threads", "per s", two_threads(&pool), "mutex",
		     two_threads(&mtx), 1);
	bench_report("pool pairs, 2 processes", "per s", two_processes(&pool), "mutex",
		     two_processes(&mtx), 1);
	bench_report("alloc in one process, free in another", "per s", across_processes(&pool),
		     "mutex", across_processes(&mtx), 1);
	return 0;
}
