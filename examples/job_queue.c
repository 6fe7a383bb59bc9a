// SPDX-License-Identifier: MIT
/*
 * A job queue shared by processes. The producer takes a block from a pool
 * in the shared region, writes a job into it and queues the block's offset;
 * workers take jobs in arrival order, do them and give the blocks back.
 * Two semaphores count the queued jobs and the free slots, a lock guards
 * the ring of offsets and the total. Offsets, not pointers: every process
 * may map the region at another address.
 *
 *   cc -o job_queue job_queue.c $(pkg-config --cflags --libs syncmem)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <syncmem.h>

#define WORKERS	3
#define JOBS	2000
#define SLOTS	32			/* pool blocks, and ring entries */

struct job {
	uint32_t n;			/* 0: stop */
};

struct queue {
	struct syncmem_lock lock;	/* head, tail, ring, total */
	struct syncmem_sem queued;	/* jobs in the ring */
	struct syncmem_sem room;	/* free slots */
	uint32_t head, tail;
	uint32_t ring[SLOTS];		/* pool offsets of queued jobs */
	uint64_t total;
	uint8_t pool[] __attribute__((aligned(64)));
};

static int check(int err, const char *what)
{
	if (err < 0)
		fprintf(stderr, "job_queue: %s: %s\n", what, syncmem_strerror(err));
	return err;
}

static void push(struct syncmem_region *r, struct queue *q, struct syncmem_pool *pool,
		 uint32_t n)
{
	uint32_t off;

	check(syncmem_sem_wait(r, &q->room), "wait for room");
	off = syncmem_pool_alloc(pool);		/* a slot is ours: a block is free */
	((struct job *)syncmem_pool_ptr(pool, off))->n = n;
	check(syncmem_lock(r, &q->lock), "lock");
	q->ring[q->tail++ % SLOTS] = off;
	syncmem_unlock(r, &q->lock);
	check(syncmem_sem_post(r, &q->queued), "post");
}

static int worker(struct syncmem_region *r, struct queue *q, struct syncmem_pool *pool)
{
	for (;;) {
		uint32_t off, n;

		if (check(syncmem_sem_wait(r, &q->queued), "wait for a job") < 0)
			return 1;
		if (check(syncmem_lock(r, &q->lock), "lock") < 0)
			return 1;
		off = q->ring[q->head++ % SLOTS];
		syncmem_unlock(r, &q->lock);
		n = ((struct job *)syncmem_pool_ptr(pool, off))->n;
		syncmem_pool_free(pool, off);
		syncmem_sem_post(r, &q->room);
		if (!n)
			return 0;
		syncmem_lock(r, &q->lock);
		q->total += (uint64_t)n * n;	/* the work */
		syncmem_unlock(r, &q->lock);
	}
}

int main(void)
{
	size_t pool_len = syncmem_pool_footprint(sizeof(struct job) < 64 ? 64 : sizeof(struct job),
						 SLOTS);
	struct syncmem_region *r;
	struct syncmem_pool *pool;
	struct queue *q;
	uint64_t want = 0;
	int failed = 0;

	/* An anonymous region, shared with the workers by fork(). */
	if (check(syncmem_open(NULL, sizeof(*q) + pool_len, 0, 0, &r), "open") < 0)
		return 1;
	q = syncmem_base(r);
	syncmem_lock_init(&q->lock, 0);
	syncmem_sem_init(&q->queued, 0);
	syncmem_sem_init(&q->room, SLOTS);
	if (check(syncmem_pool_init(q->pool, pool_len, 64, SLOTS, &pool), "pool") < 0)
		return 1;
	for (int i = 0; i < WORKERS; i++)
		if (fork() == 0)
			_exit(worker(r, q, pool));
	for (uint32_t n = 1; n <= JOBS; n++) {
		push(r, q, pool, n);
		want += (uint64_t)n * n;
	}
	for (int i = 0; i < WORKERS; i++)
		push(r, q, pool, 0);
	for (int i = 0, st; i < WORKERS; i++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	printf("job_queue: %d jobs by %d worker processes, sum of squares %llu (%s), "
	       "%u of %u blocks free\n", JOBS, WORKERS, (unsigned long long)q->total,
	       q->total == want ? "right" : "WRONG", syncmem_pool_free_count(pool), SLOTS);
	failed |= q->total != want || syncmem_pool_free_count(pool) != SLOTS;
	syncmem_pool_detach(pool);
	syncmem_close(r);
	return failed;
}
