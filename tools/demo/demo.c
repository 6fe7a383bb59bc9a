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
 *     locking from its event loop (executeLocked);
 *  5. the lock model's readers and writers: 5 writer and 5 reader processes
 *     pass a bounded buffer of triplets around with gates (wait/signal);
 *  6. single-flight: 8 processes ask for the same key at once, the work runs
 *     once and all of them get its result;
 *  7. what syncmemctl shows of the demo's own named objects: a lock held by
 *     one process with two more queued on it, a semaphore, a closed gate;
 *  8. Web Locks: two processes hold one named lock shared, a third steals
 *     it, and the two learn it on release.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool_common.h"
#include "triplets.h"
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
	syncmem_pool_detach(p);
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

static int demo_triplets(void)
{
	enum { READERS = 5, WRITERS = 5, EACH = 100 };
	struct syncmem_region *r;
	struct triplets *t;
	int bad = 0, status;
	pid_t pids[READERS + WRITERS];

	if (syncmem_open(NULL, 4096, 0, 0, &r))
		return 1;
	t = syncmem_base(r);
	triplets_init(t);
	for (int i = 0; i < READERS + WRITERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			for (int k = 0; k < EACH; k++)
				if (i < READERS ? triplets_read(r, t)
						: triplets_write(r, t, (uint32_t)(i * 1000 + k)))
					_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < READERS + WRITERS; i++) {
		waitpid(pids[i], &status, 0);
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	printf("%d writer and %d reader processes: %u triplets read, %u not consecutive, "
	       "%u values left in the buffer\n", WRITERS, READERS, t->triplets_read,
	       t->bad_triplets, t->count);
	bad |= t->triplets_read != READERS * EACH || t->bad_triplets || t->count;
	syncmem_close(r);
	printf("readers/writers: %s\n", bad ? "FAILED" : "ok, every triplet read was one writer's");
	return bad;
}

struct flight_page {
	_Atomic uint32_t runs;
	_Atomic uint32_t arrived;
	uint8_t mem[] __attribute__((aligned(64)));
};

struct flight_job {
	struct flight_page *pg;
	int callers;
};

/* The expensive work: takes until all callers have arrived, then 50 ms more. */
static int expensive(void *arg, void *out, size_t cap, size_t *len)
{
	struct flight_job *job = arg;

	atomic_fetch_add(&job->pg->runs, 1);
	for (int i = 0; i < 2000 && atomic_load(&job->pg->arrived) < (uint32_t)job->callers; i++)
		usleep(1000);
	usleep(50000);
	*len = (size_t)snprintf(out, cap, "computed by pid %d", getpid()) + 1;
	return 0;
}

static int demo_flight(void)
{
	enum { CALLERS = 8, BLOCKS = 16, ENTRIES = 8 };
	size_t pool_len = syncmem_pool_footprint(256, BLOCKS);
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
	struct syncmem_region *r;
	struct flight_page *pg;
	void *table;
	int bad = 0, status, p[2];
	pid_t pids[CALLERS];
	char first[256] = "", got[256];

	if (syncmem_open(NULL, 65536, 0, 0, &r) || pipe(p))
		return 1;
	pg = syncmem_base(r);
	table = pg->mem + ((pool_len + 63) & ~(size_t)63);
	if (syncmem_pool_init(pg->mem, pool_len, 256, BLOCKS, &pool) ||
	    syncmem_flight_init(r, table, syncmem_flight_footprint(ENTRIES), ENTRIES, pool, &f))
		return 1;
	for (int i = 0; i < CALLERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct flight_job job = { pg, CALLERS };
			char buf[256] = "";
			int n;

			atomic_fetch_add(&pg->arrived, 1);
			n = syncmem_flight_do(r, f, "report", 6, expensive, &job, buf, sizeof(buf));
			if (n < 0)
				snprintf(buf, sizeof(buf), "error %s", syncmem_strerror(n));
			_exit(write(p[1], buf, sizeof(buf)) == sizeof(buf) ? 0 : 1);
		}
	}
	for (int i = 0; i < CALLERS; i++) {
		waitpid(pids[i], &status, 0);
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
		if (read(p[0], got, sizeof(got)) != sizeof(got))
			bad = 1;
		if (!i)
			memcpy(first, got, sizeof(got));
		bad |= strcmp(first, got) != 0;
	}
	printf("%d processes asked for \"report\" at once: the work ran %u time(s), "
	       "all got \"%s\"\n", CALLERS, atomic_load(&pg->runs), first);
	bad |= atomic_load(&pg->runs) != 1;
	close(p[0]);
	close(p[1]);
	syncmem_pool_detach(pool);
	syncmem_close(r);
	printf("single-flight: %s\n", bad ? "FAILED" : "ok");
	return bad;
}

/* ---- 7. syncmemctl locks on the demo's own objects ---- */

#define LOCKS_REGION "syncmem-demo-locks"

struct locks_page {
	struct syncmem_lock jobs;
	struct syncmem_sem slots;
	struct syncmem_gate ready;
};

/* Run build/tools/syncmemctl (beside this program) with @args; its status. */
static int run_syncmemctl(char *const args[])
{
	char self[PATH_MAX], ctl[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	int status;
	pid_t pid;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(ctl, sizeof(ctl), "%s/syncmemctl", self);
	pid = fork();
	if (pid == 0) {
		execv(ctl, args);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Take the lock, then (the first one) hold it until the gate opens. */
static int locks_child(bool holder)
{
	struct syncmem_region *r;
	struct locks_page *pg;

	if (syncmem_open(LOCKS_REGION, 0, 0, 0, &r))
		return 1;
	pg = syncmem_base(r);
	if (syncmem_lock_timed(r, &pg->jobs, 30000000000LL))
		return 1;
	if (holder && syncmem_gate_wait(r, &pg->ready, 30000000000LL))
		return 1;
	syncmem_unlock(r, &pg->jobs);
	syncmem_close(r);
	return 0;
}

static int demo_syncmemctl(void)
{
	char *args[] = { "syncmemctl", "locks", LOCKS_REGION, NULL };
	struct syncmem_region *r;
	struct locks_page *pg;
	pid_t kids[3];
	int err, failed = 0;

	syncmem_unlink(LOCKS_REGION);
	err = syncmem_open(LOCKS_REGION, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r);
	if (err) {
		fprintf(stderr, "demo: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	syncmem_lock_init(&pg->jobs, 0);
	syncmem_sem_init(&pg->slots, 2);
	syncmem_gate_init(&pg->ready, false);
	/* Names the kernel keeps with the region, for tools to show. */
	if (syncmem_name_object(r, &pg->jobs, sizeof(pg->jobs), SYNCMEM_OBJ_LOCK, "jobs") ||
	    syncmem_name_object(r, &pg->slots, sizeof(pg->slots), SYNCMEM_OBJ_SEM, "slots") ||
	    syncmem_name_object(r, &pg->ready, sizeof(pg->ready), SYNCMEM_OBJ_GATE, "ready"))
		failed = 1;
	/* One holder (waiting on the gate), then two queued behind it. */
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(locks_child(i == 0));
		for (int t = 0; t < 10000 && syncmem_waiters(r, NULL, NULL, 0) < i + 1; t++)
			usleep(1000);
	}
	printf("$ syncmemctl locks %s\n", LOCKS_REGION);
	if (run_syncmemctl(args))
		failed = 1;
	/* The gate opens: the holder unlocks, the queue drains in order. */
	syncmem_gate_signal(r, &pg->ready);
	for (int i = 0; i < 3; i++) {
		int status;

		waitpid(kids[i], &status, 0);
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	syncmem_close(r);
	syncmem_unlink(LOCKS_REGION);
	printf("syncmemctl: %s\n", failed ? "FAILED" : "ok, the holder and its queue in order");
	return failed;
}

/* ---- 8. Web Locks: a name held shared by two processes, then stolen ---- */

#define WEBLOCKS_REGION "syncmem-demo-weblocks"
#define WEBLOCKS_MANAGER 64		/* the manager's offset in the region */

struct weblocks_page {
	_Atomic uint32_t holding;	/* processes holding "db" shared */
	_Atomic uint32_t stolen;	/* 1 once the steal was granted */
};

/* Sleep until *@word reaches @want (10 s at most). */
static int await_word(struct syncmem_region *r, _Atomic uint32_t *word, uint32_t want)
{
	for (;;) {
		uint32_t v = atomic_load_explicit(word, memory_order_acquire);

		if (v >= want)
			return 0;
		if (syncmem_wait32(r, (uint32_t *)word, v, 10000000000LL) == SYNCMEM_TIMED_OUT)
			return -1;
	}
}

/* A process of its own: open the region by name, hold "db" shared. */
static int weblocks_child(void)
{
	struct weblocks_page *pg;
	struct syncmem_region *r;
	struct syncmem_locks *m;
	struct syncmem_held *h;
	int stolen, err;

	if (syncmem_open(WEBLOCKS_REGION, 0, 0, 0, &r))
		return 1;
	pg = syncmem_base(r);
	if (syncmem_locks_attach(r, (char *)pg + WEBLOCKS_MANAGER, &m) ||
	    syncmem_locks_request(m, "db", 2, SYNCMEM_LOCKS_SHARED, 10000000000LL, &h))
		return 1;
	printf("pid %d: holds \"db\" shared\n", getpid());
	atomic_fetch_add(&pg->holding, 1);
	syncmem_notify(r, (uint32_t *)&pg->holding, SYNCMEM_ALL);
	if (await_word(r, &pg->stolen, 1))
		return 1;
	stolen = syncmem_locks_stolen(h);
	err = syncmem_locks_release(h);
	printf("pid %d: stolen: %s, release: %s\n", getpid(), stolen ? "yes" : "no",
	       err == -ECONNABORTED ? "-ECONNABORTED (the lock was stolen)" :
	       syncmem_strerror(err));
	syncmem_locks_detach(m);
	syncmem_close(r);
	return !(stolen && err == -ECONNABORTED);
}

/* What the manager holds, as syncmem_locks_query() reports it. */
static size_t print_held(struct syncmem_locks *m)
{
	static struct syncmem_lock_info held[4];
	size_t nheld = 4, npending = 0;

	if (syncmem_locks_query(m, held, &nheld, NULL, &npending))
		return 0;
	printf("  query: \"db\" held");
	for (size_t i = 0; i < nheld && i < 4; i++)
		printf("%s %s by pid %d", i ? "," : "",
		       held[i].mode == SYNCMEM_LOCKS_SHARED ? "shared" : "exclusive", held[i].pid);
	printf("\n");
	return nheld;
}

static int demo_weblocks(void)
{
	size_t need = syncmem_locks_footprint(4, 16);
	struct weblocks_page *pg;
	struct syncmem_region *r;
	struct syncmem_locks *m;
	struct syncmem_held *h = NULL;
	int err, failed = 0;
	pid_t kids[2];

	syncmem_unlink(WEBLOCKS_REGION);
	err = syncmem_open(WEBLOCKS_REGION, WEBLOCKS_MANAGER + need,
			   SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r);
	if (!err)
		err = syncmem_locks_init(r, (char *)syncmem_base(r) + WEBLOCKS_MANAGER, need, &m);
	if (err) {
		fprintf(stderr, "demo: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(weblocks_child());
	}
	failed |= await_word(r, &pg->holding, 2) != 0;
	failed |= print_held(m) != 2;
	/* Granted at once, ahead of the queue: both shared holders lose it. */
	err = syncmem_locks_request(m, "db", 2, SYNCMEM_LOCKS_STEAL, 0, &h);
	printf("pid %d: steals \"db\": %s\n", getpid(), syncmem_strerror(err));
	failed |= err != 0 || print_held(m) != 1;
	atomic_store_explicit(&pg->stolen, 1, memory_order_release);
	syncmem_notify(r, (uint32_t *)&pg->stolen, SYNCMEM_ALL);
	for (int i = 0; i < 2; i++) {
		int status;

		waitpid(kids[i], &status, 0);
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	if (h)
		failed |= syncmem_locks_release(h) != 0;
	syncmem_locks_detach(m);
	syncmem_close(r);
	syncmem_unlink(WEBLOCKS_REGION);
	printf("web locks: %s\n", failed ? "FAILED" : "ok, shared by two, stolen by a third");
	return failed;
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
	printf("== 5. readers and writers of triplets, passing gates (wait/signal)\n");
	failed |= demo_triplets();
	printf("== 6. single-flight: one run for eight concurrent callers\n");
	failed |= demo_flight();
	printf("== 7. what syncmemctl shows of the demo's own locks\n");
	failed |= demo_syncmemctl();
	printf("== 8. Web Locks: a named lock shared by two processes, then stolen\n");
	failed |= demo_weblocks();
	printf("demo: %s\n", failed ? "FAILED" : "all scenes ok");
	return failed;
}
