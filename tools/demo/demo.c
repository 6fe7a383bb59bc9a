// SPDX-License-Identifier: GPL-2.0
/*
 * The syncmem demo, one scene per feature:
 *  1. two processes share a named region and see each other's writes,
 *     sleeping on a word with wait/notify instead of polling;
 *  2. a process waits asynchronously (event loop on io_uring) on a word
 *     that another process notifies;
 *  3. the lock-free allocator's seed test: 50 processes allocate and free
 *     the 20 blocks of one pool in a region for 3 s, stamping every block;
 *  4. one AsyncLock shared by a process locking blocking and a process
 *     locking from its event loop (executeLocked).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool_common.h"
#include "syncmem.h"

#define REGION_NAME "syncmem-demo"

struct demo_page {
	_Atomic uint32_t stage;		/* 0 start, 1 parent wrote, 2 child replied */
	char parent_msg[64];
	char child_msg[64];
};

/* Sleep until the stage word reaches @want (10 s at most). */
static int await_stage(struct syncmem_region *r, struct demo_page *pg, uint32_t want)
{
	for (;;) {
		uint32_t v = atomic_load_explicit(&pg->stage, memory_order_acquire);

		if (v == want)
			return 0;
		if (syncmem_wait32(r, (uint32_t *)&pg->stage, v, 10000000000LL) ==
		    SYNCMEM_TIMED_OUT)
			return -1;
	}
}

static void set_stage(struct syncmem_region *r, struct demo_page *pg, uint32_t v)
{
	atomic_store_explicit(&pg->stage, v, memory_order_release);
	syncmem_notify(r, (uint32_t *)&pg->stage, SYNCMEM_ALL);
}

static int child(void)
{
	struct syncmem_region *r;
	struct demo_page *pg;
	int err;

	err = syncmem_open(REGION_NAME, 0, 0, 0, &r);
	if (err) {
		fprintf(stderr, "child: open: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	if (await_stage(r, pg, 1))
		return 1;
	printf("child  (pid %d): opened \"%s\" by name and read: \"%s\"\n",
	       getpid(), REGION_NAME, pg->parent_msg);
	snprintf(pg->child_msg, sizeof(pg->child_msg), "hello back from pid %d", getpid());
	set_stage(r, pg, 2);
	syncmem_close(r);
	return 0;
}

static int demo_shared_region(void)
{
	struct syncmem_region *r;
	struct demo_page *pg;
	pid_t pid;
	int err, status;

	syncmem_unlink(REGION_NAME);
	err = syncmem_open(REGION_NAME, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r);
	if (err) {
		fprintf(stderr, "demo: cannot create region: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	printf("parent (pid %d): created region \"%s\" (%zu bytes)\n", getpid(),
	       REGION_NAME, syncmem_size(r));
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child());
	snprintf(pg->parent_msg, sizeof(pg->parent_msg), "hello from pid %d", getpid());
	set_stage(r, pg, 1);
	err = await_stage(r, pg, 2);
	if (!err)
		printf("parent (pid %d): read the child's reply: \"%s\"\n", getpid(),
		       pg->child_msg);
	waitpid(pid, &status, 0);
	syncmem_unlink(REGION_NAME);
	syncmem_close(r);
	if (err || !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("shared region: FAILED\n");
		return 1;
	}
	printf("shared region: ok, both processes saw each other's writes\n");
	return 0;
}

struct async_result {
	int calls;
	int result;
	uint32_t value;
	uint32_t *word;
};

static void on_woken(void *arg, int result)
{
	struct async_result *res = arg;

	res->calls++;
	res->result = result;
	res->value = atomic_load((_Atomic uint32_t *)res->word);
	printf("parent (pid %d): callback ran from the event loop: %s, word = %u\n",
	       getpid(), syncmem_strerror(result), res->value);
}

static int demo_async_wait(void)
{
	struct async_result res = { 0 };
	struct syncmem_region *r;
	struct syncmem_loop *loop;
	uint32_t *word;
	int err, status;
	pid_t pid;

	err = syncmem_open(NULL, 4096, 0, 0, &r);
	if (!err)
		err = syncmem_loop_new(&loop);
	if (err) {
		fprintf(stderr, "demo: %s\n", syncmem_strerror(err));
		return 1;
	}
	word = syncmem_base(r);
	res.word = word;
	err = syncmem_wait_async32(loop, r, word, 0, 10000000000LL, on_woken, &res, NULL);
	printf("parent (pid %d): queued an async wait on the word: %s\n", getpid(),
	       syncmem_strerror(err));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		usleep(200000);
		atomic_store((_Atomic uint32_t *)word, 42);
		printf("child  (pid %d): stored 42 and notified %d waiter(s)\n", getpid(),
		       syncmem_notify(r, word, 1));
		_exit(0);
	}
	printf("parent (pid %d): running the event loop (io_uring) until it completes\n",
	       getpid());
	err = syncmem_loop_run(loop);
	waitpid(pid, &status, 0);
	syncmem_loop_free(loop);
	syncmem_close(r);
	if (err || res.calls != 1 || res.result != SYNCMEM_OK || res.value != 42) {
		printf("async wait: FAILED\n");
		return 1;
	}
	printf("async wait: ok, another process's notify completed it through the event loop\n");
	return 0;
}

static int demo_pool(void)
{
	size_t len = syncmem_pool_footprint(64, 20);
	struct syncmem_region *r;
	struct syncmem_pool *p;
	struct churn_stats *st;
	int bad, err;

	err = syncmem_open(NULL, len + 4096, 0, 0, &r);
	if (!err)
		err = syncmem_pool_init(syncmem_base(r), len, 64, 20, &p);
	if (err) {
		fprintf(stderr, "demo: %s\n", syncmem_strerror(err));
		return 1;
	}
	st = (void *)((char *)syncmem_base(r) + len);
	printf("50 processes churn the 20 blocks of one pool for 3 s...\n");
	bad = churn_processes(p, st, 50, 3, 3.0);
	printf("allocations %llu, frees %llu, pool found empty %llu times\n",
	       (unsigned long long)st->allocs, (unsigned long long)st->frees,
	       (unsigned long long)st->exhausted);
	printf("double allocations %llu, corrupted stamps %llu, failed frees %llu, "
	       "lost blocks %u\n", (unsigned long long)st->double_allocs,
	       (unsigned long long)st->bad_stamps, (unsigned long long)st->errors,
	       20 - syncmem_pool_free_count(p));
	bad |= st->double_allocs || st->bad_stamps || st->errors ||
	       syncmem_pool_free_count(p) != 20 || !st->allocs;
	syncmem_close(r);
	printf("pool: %s\n", bad ? "FAILED" : "ok, no block was ever owned twice and none was lost");
	return bad ? 1 : 0;
}

struct lock_page {
	struct syncmem_lock lock;
	uint64_t counter;	/* guarded by lock */
};

struct lock_job {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct lock_page *pg;
	int left;
};

/* executeLocked's body; it queues the next round until done. */
static void locked_increment(void *arg)
{
	struct lock_job *job = arg;

	job->pg->counter++;
	if (--job->left > 0)
		syncmem_execute_locked(job->loop, job->r, &job->pg->lock, locked_increment, job);
}

static int demo_lock(void)
{
	enum { ROUNDS = 5000 };
	struct syncmem_region *r;
	struct lock_page *pg;
	int status, err;
	pid_t pid;

	err = syncmem_open(NULL, 4096, 0, 0, &r);
	if (err) {
		fprintf(stderr, "demo: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	pid = fork();
	if (pid == 0) {
		struct lock_job job = { .r = r, .pg = pg, .left = ROUNDS };

		if (syncmem_loop_new(&job.loop) ||
		    syncmem_execute_locked(job.loop, r, &pg->lock, locked_increment, &job) ||
		    syncmem_loop_run(job.loop))
			_exit(1);
		syncmem_loop_free(job.loop);
		_exit(0);
	}
	for (int i = 0; i < ROUNDS; i++) {
		syncmem_lock(r, &pg->lock);
		pg->counter++;
		syncmem_unlock(r, &pg->lock);
	}
	waitpid(pid, &status, 0);
	printf("blocking locker (pid %d) and async locker (pid %d): %d increments each, "
	       "counter = %llu\n", getpid(), pid, ROUNDS, (unsigned long long)pg->counter);
	err = !WIFEXITED(status) || WEXITSTATUS(status) || pg->counter != 2 * ROUNDS;
	syncmem_close(r);
	printf("lock: %s\n", err ? "FAILED" : "ok, no increment was lost");
	return err;
}

int main(void)
{
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("== 1. a named region shared by two processes, wait/notify\n");
	failed |= demo_shared_region();
	printf("== 2. an async wait completed by another process\n");
	failed |= demo_async_wait();
	printf("== 3. the lock-free block allocator, 50 processes\n");
	failed |= demo_pool();
	printf("== 4. one lock, a blocking locker and an async locker (executeLocked)\n");
	failed |= demo_lock();
	printf("demo: %s\n", failed ? "FAILED" : "all scenes ok");
	return failed;
}
