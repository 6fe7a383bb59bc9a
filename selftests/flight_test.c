// SPDX-License-Identifier: GPL-2.0
/*
 * Single-flight across processes: one run for concurrent callers (blocking
 * and async) who all get the same bytes or the same error, no caching,
 * -EOWNERDEAD when the leader is killed, no count left by killed followers,
 * dead flights never fill the table, result and table limits, errnos.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

/*
 * This test is linked with -Wl,--wrap=ioctl: every ioctl() of the library
 * comes here first. A process that sets kill_at_arm to N dies of SIGKILL
 * at its |N|-th SYNCMEM_IOC_ARM_ON_CLOSE: just before making it (N > 0),
 * or just after it returned (N < 0). A leader so stops at each step of
 * starting its flight, every time at the same one.
 */
static int kill_at_arm;
static int arms_made;

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);

static void die_now(void)
{
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req != SYNCMEM_IOC_ARM_ON_CLOSE || !kill_at_arm)
		return __real_ioctl(fd, req, arg);
	if (++arms_made == kill_at_arm)
		die_now();
	ret = __real_ioctl(fd, req, arg);
	if (arms_made == -kill_at_arm)
		die_now();
	return ret;
}

#define BLOCK		256
#define NBLOCKS		32
#define ENTRIES		8
#define REGION		(256 * 1024)

struct fshared {
	_Atomic uint32_t runs;
	_Atomic uint32_t arrived;
	_Atomic uint32_t leader_pid;
	_Atomic uint32_t go;		/* MODE_GO: the function returns once set */
	int32_t result_mode;		/* what the function does, see flight_fn */
	uint32_t expect_waiters;	/* the function waits for this many followers */
	uint8_t pool[] __attribute__((aligned(64)));
};

FIXTURE(flight) {
	struct syncmem_region *r;
	struct fshared *sh;
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
	void *table;
};

FIXTURE_SETUP(flight)
{
	size_t pool_len = syncmem_pool_footprint(BLOCK, NBLOCKS);
	size_t table_len = syncmem_flight_footprint(ENTRIES);

	ASSERT_LT(0, pool_len);
	ASSERT_EQ(0, syncmem_open(NULL, REGION, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	ASSERT_EQ(0, syncmem_pool_init(self->sh->pool, pool_len, BLOCK, NBLOCKS, &self->pool));
	self->table = self->sh->pool + ((pool_len + 63) & ~(size_t)63);
	ASSERT_EQ(0, syncmem_flight_init(self->r, self->table, table_len, ENTRIES, self->pool,
					 &self->f));
}

FIXTURE_TEARDOWN(flight)
{
	syncmem_pool_detach(self->pool);
	syncmem_close(self->r);
}

enum { MODE_OK, MODE_ERROR, MODE_HANG, MODE_TOO_BIG, MODE_GO };

struct fn_arg {
	struct syncmem_region *r;
	struct fshared *sh;
};

/* The expensive work: counted, and slow until every follower has joined. */
static int flight_fn(void *arg, void *out, size_t cap, size_t *len)
{
	struct fn_arg *a = arg;
	int64_t t0 = now_ns();

	atomic_fetch_add(&a->sh->runs, 1);
	atomic_store(&a->sh->leader_pid, (uint32_t)getpid());
	while (region_waiters(a->r) < a->sh->expect_waiters && now_ns() - t0 < 20000000000LL)
		usleep(1000);
	switch (a->sh->result_mode) {
	case MODE_ERROR:
		return -EIO;
	case MODE_HANG:
		pause();
		return -EINTR;
	case MODE_TOO_BIG:
		*len = cap + 1;
		return 0;
	case MODE_GO:
		while (!atomic_load(&a->sh->go))
			usleep(1000);
		break;
	}
	*len = (size_t)snprintf(out, cap, "result of pid %d", getpid());
	return 0;
}

struct caller_result {
	int ret;
	char data[BLOCK];
};

static void async_done(void *arg, int result, const void *data, size_t len)
{
	struct caller_result *c = arg;

	c->ret = result;
	if (result > 0 && len <= sizeof(c->data))
		memcpy(c->data, data, len);
}

/* One caller; writes what it got to @fd: {ret, bytes}. */
static int caller(struct syncmem_region *r, struct syncmem_flight *f, struct fshared *sh,
		  int async, int fd)
{
	struct fn_arg a = { r, sh };
	struct caller_result c = { 0 };
	struct syncmem_loop *loop;

	atomic_fetch_add(&sh->arrived, 1);
	if (async) {
		if (syncmem_loop_new(&loop) ||
		    syncmem_flight_do_async(loop, r, f, "key", 3, flight_fn, &a, async_done, &c) ||
		    syncmem_loop_run(loop))
			return 70;
		syncmem_loop_free(loop);
	} else {
		c.ret = syncmem_flight_do(r, f, "key", 3, flight_fn, &a, c.data, sizeof(c.data));
	}
	return write(fd, &c, sizeof(c)) == sizeof(c) ? 0 : 71;
}

/* Start n callers, the first alone (it leads), the rest once it runs. */
static void run_callers(struct __test_metadata *_metadata, struct syncmem_region *r,
			struct syncmem_flight *f, struct fshared *sh, int n,
			struct caller_result *out)
{
	pid_t pids[32];
	int p[2];

	ASSERT_GE(32, n);
	ASSERT_EQ(0, pipe(p));
	sh->expect_waiters = (uint32_t)n - 1;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(caller(r, f, sh, i % 2, p[1]));
		if (i == 0)
			while (!atomic_load(&sh->leader_pid))
				usleep(1000);
	}
	for (int i = 0; i < n; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	for (int i = 0; i < n; i++)
		ASSERT_EQ((ssize_t)sizeof(out[i]), read(p[0], &out[i], sizeof(out[i])));
	close(p[0]);
	close(p[1]);
}

TEST_F_TIMEOUT(flight, twenty_callers_one_run_same_bytes, 300)
{
	struct caller_result res[20];
	char expected[64];
	int n;

	run_callers(_metadata, self->r, self->f, self->sh, 20, res);
	EXPECT_EQ(1, atomic_load(&self->sh->runs));
	n = snprintf(expected, sizeof(expected), "result of pid %u",
		     atomic_load(&self->sh->leader_pid));
	for (int i = 0; i < 20; i++) {
		EXPECT_EQ(n, res[i].ret);
		EXPECT_EQ(0, memcmp(expected, res[i].data, (size_t)n));
	}
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));

	/* No caching: the next call runs again, here, as the leader. */
	self->sh->expect_waiters = 0;
	{
		struct fn_arg a = { self->r, self->sh };
		char buf[BLOCK];

		n = snprintf(expected, sizeof(expected), "result of pid %d", getpid());
		EXPECT_EQ(n, syncmem_flight_do(self->r, self->f, "key", 3, flight_fn, &a, buf,
					       sizeof(buf)));
		EXPECT_EQ(0, memcmp(expected, buf, (size_t)n));
	}
	EXPECT_EQ(2, atomic_load(&self->sh->runs));
}

TEST_F_TIMEOUT(flight, errors_reach_every_caller, 300)
{
	struct caller_result res[6];

	self->sh->result_mode = MODE_ERROR;
	run_callers(_metadata, self->r, self->f, self->sh, 6, res);
	EXPECT_EQ(1, atomic_load(&self->sh->runs));
	for (int i = 0; i < 6; i++)
		EXPECT_EQ(-EIO, res[i].ret);
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
}

TEST_F_TIMEOUT(flight, a_result_larger_than_a_block_is_emsgsize, 300)
{
	struct caller_result res[3];

	self->sh->result_mode = MODE_TOO_BIG;
	run_callers(_metadata, self->r, self->f, self->sh, 3, res);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(-EMSGSIZE, res[i].ret);
}

/* A leader whose function hangs, running once this returns its pid. */
static pid_t start_hanging_leader(struct syncmem_region *r, struct syncmem_flight *f,
				  struct fshared *sh, int fd)
{
	pid_t leader;

	sh->result_mode = MODE_HANG;
	sh->expect_waiters = 0;
	leader = fork();
	if (leader == 0)
		_exit(caller(r, f, sh, 0, fd));
	while (leader > 0 && !atomic_load(&sh->leader_pid))
		usleep(1000);
	return leader;
}

TEST_F_TIMEOUT(flight, followers_of_a_killed_leader_get_eownerdead, 300)
{
	enum { FOLLOWERS = 5 };
	struct caller_result res;
	pid_t leader, pids[FOLLOWERS];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	leader = start_hanging_leader(self->r, self->f, self->sh, p[1]);
	ASSERT_LT(0, leader);
	for (int i = 0; i < FOLLOWERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(caller(self->r, self->f, self->sh, i % 2, p[1]));
	}
	ASSERT_TRUE(await_waiters(self->r, FOLLOWERS));
	EXPECT_EQ(1, syncmem_flight_in_flight(self->f));
	kill(leader, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(leader));
	for (int i = 0; i < FOLLOWERS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	for (int i = 0; i < FOLLOWERS; i++) {
		ASSERT_EQ((ssize_t)sizeof(res), read(p[0], &res, sizeof(res)));
		EXPECT_EQ(-EOWNERDEAD, res.ret);
	}
	EXPECT_EQ(1, atomic_load(&self->sh->runs));
	/* The dead flight is gone: its entry and block came back. */
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
	/* And the key works again. */
	self->sh->result_mode = MODE_OK;
	{
		struct fn_arg a = { self->r, self->sh };
		char buf[BLOCK];

		EXPECT_LT(0, syncmem_flight_do(self->r, self->f, "key", 3, flight_fn, &a, buf,
					       sizeof(buf)));
	}
	EXPECT_EQ(2, atomic_load(&self->sh->runs));
	close(p[0]);
	close(p[1]);
}

TEST_F_TIMEOUT(flight, followers_that_die_leave_no_count_behind, 300)
{
	enum { FOLLOWERS = 4 };
	struct caller_result res;
	pid_t leader, pids[FOLLOWERS];
	int p[2];

	ASSERT_EQ(0, pipe(p));
	self->sh->result_mode = MODE_GO;
	leader = fork();
	ASSERT_LE(0, leader);
	if (leader == 0)
		_exit(caller(self->r, self->f, self->sh, 0, p[1]));
	while (!atomic_load(&self->sh->leader_pid))
		usleep(1000);
	for (int i = 0; i < FOLLOWERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(caller(self->r, self->f, self->sh, i % 2, p[1]));
	}
	ASSERT_TRUE(await_waiters(self->r, FOLLOWERS));
	/* A blocking and an async follower die while they wait. */
	kill(pids[0], SIGKILL);
	kill(pids[1], SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(pids[0]));
	EXPECT_EQ(128 + SIGKILL, wait_exit(pids[1]));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(leader));
	for (int i = 2; i < FOLLOWERS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ((ssize_t)sizeof(res), read(p[0], &res, sizeof(res)));
		EXPECT_LT(0, res.ret);
	}
	EXPECT_EQ(1, atomic_load(&self->sh->runs));
	/* The last live caller freed the flight: nothing counts the dead. */
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
	close(p[0]);
	close(p[1]);
}

TEST_F_TIMEOUT(flight, dead_flights_of_other_keys_never_fill_the_table, 300)
{
	struct fn_arg a = { self->r, self->sh };
	char buf[BLOCK];

	/* Every entry a flight whose leader was killed, each of its own key. */
	for (int i = 0; i < ENTRIES; i++) {
		char key[16];
		pid_t leader;
		int n = snprintf(key, sizeof(key), "dead-%d", i);

		self->sh->result_mode = MODE_HANG;
		atomic_store(&self->sh->leader_pid, 0);
		leader = fork();
		ASSERT_LE(0, leader);
		if (leader == 0)
			_exit(syncmem_flight_do(self->r, self->f, key, (size_t)n, flight_fn, &a,
						buf, sizeof(buf)));
		while (!atomic_load(&self->sh->leader_pid))
			usleep(1000);
		kill(leader, SIGKILL);
		EXPECT_EQ(128 + SIGKILL, wait_exit(leader));
	}
	EXPECT_EQ(ENTRIES, syncmem_flight_in_flight(self->f));
	/* A new key finds the table full of the dead and sweeps it. */
	self->sh->result_mode = MODE_OK;
	EXPECT_LT(0, syncmem_flight_do(self->r, self->f, "alive", 5, flight_fn, &a, buf,
				       sizeof(buf)));
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
}

/* One call of @key in a child, given @ms: its result, or INT_MIN if it did not return. */
static int bounded_flight(struct syncmem_region *r, struct syncmem_flight *f,
			  struct fshared *sh, const char *key, int ms)
{
	struct pollfd pfd;
	int p[2], ret = INT_MIN;
	pid_t pid;

	if (pipe(p))
		return INT_MIN;
	pid = fork();
	if (pid == 0) {
		struct fn_arg a = { r, sh };
		char buf[BLOCK];

		ret = syncmem_flight_do(r, f, key, strlen(key), flight_fn, &a, buf, sizeof(buf));
		_exit(write(p[1], &ret, sizeof(ret)) == sizeof(ret) ? 0 : 1);
	}
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	if (pid < 0 || poll(&pfd, 1, ms) != 1 || read(p[0], &ret, sizeof(ret)) != sizeof(ret)) {
		ret = INT_MIN;
		if (pid > 0)
			kill(pid, SIGKILL);
	}
	if (pid > 0)
		wait_exit(pid);
	close(p[0]);
	close(p[1]);
	return ret;
}

/*
 * Every entry and every result block at once: ENTRIES flights of distinct
 * keys led from one loop. The number of them that failed.
 */
static int fill_table(struct syncmem_region *r, struct syncmem_flight *f, struct fshared *sh)
{
	struct caller_result res[ENTRIES];
	struct fn_arg a = { r, sh };
	struct syncmem_loop *loop;
	int bad = 0;

	if (syncmem_loop_new(&loop))
		return ENTRIES;
	for (int i = 0; i < ENTRIES; i++) {
		char key[16];
		int n = snprintf(key, sizeof(key), "fill-%d", i);

		res[i].ret = 0;
		if (syncmem_flight_do_async(loop, r, f, key, (size_t)n, flight_fn, &a, async_done,
					    &res[i]))
			res[i].ret = -1;
	}
	if (syncmem_loop_run(loop))
		bad++;
	syncmem_loop_free(loop);
	for (int i = 0; i < ENTRIES; i++)
		bad += res[i].ret <= 0;
	return bad;
}

/*
 * A leader killed at each step of starting its flight: before the
 * on-close action of its count, before that of its death guard, after
 * both. The key's next caller leads a new flight (or is told the leader
 * died) at once instead of joining a flight nobody will end, and nothing
 * the dead leader took is lost: every entry and result block can still be
 * had at once.
 */
TEST_F_TIMEOUT(flight, a_leader_killed_while_it_starts_never_wedges_its_key, 300)
{
	static const int steps[] = { 1, 2, -2 };

	self->sh->result_mode = MODE_OK;
	self->sh->expect_waiters = 0;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char key[16];
		pid_t leader;
		int ret;

		snprintf(key, sizeof(key), "key-%d", steps[i]);
		atomic_store(&self->sh->runs, 0);
		leader = fork();
		ASSERT_LE(0, leader);
		if (leader == 0) {
			struct fn_arg a = { self->r, self->sh };
			char buf[BLOCK];

			kill_at_arm = steps[i];
			syncmem_flight_do(self->r, self->f, key, strlen(key), flight_fn, &a, buf,
					  sizeof(buf));
			_exit(1);	/* the step was never reached */
		}
		EXPECT_EQ(128 + SIGKILL, wait_exit(leader));
		EXPECT_EQ(0, atomic_load(&self->sh->runs));
		ret = bounded_flight(self->r, self->f, self->sh, key, 10000);
		EXPECT_TRUE(ret > 0 || ret == -EOWNERDEAD) {
			TH_LOG("killed at step %d: the next caller got %d%s", steps[i], ret,
			       ret == INT_MIN ? " (still waiting after 10 s)" : "");
		}
		EXPECT_EQ(0, fill_table(self->r, self->f, self->sh)) {
			TH_LOG("killed at step %d", steps[i]);
		}
		EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
		EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
	}
}

/* The blocks of @p that are held, and how many of those are held by @holder. */
static int held_blocks(struct syncmem_pool *p, uint64_t holder, int *by_holder)
{
	int held = 0;
	uint64_t h;

	*by_holder = 0;
	/* Every 64-byte step: offsets that are not blocks are -EINVAL. */
	for (uint32_t off = 0; off < syncmem_pool_footprint(BLOCK, NBLOCKS); off += 64) {
		if (syncmem_pool_holder(p, off, &h) < 0)
			continue;
		held++;
		*by_holder += h == holder;
	}
	return held;
}

/*
 * The result block belongs to the flight, not to the leader's process: a
 * reclaim after the leader died leaves it to the flight, which the next
 * caller of the key cleans up.
 */
TEST_F_TIMEOUT(flight, reclaim_leaves_a_dead_leaders_result_block_to_the_flight, 300)
{
	struct fn_arg a = { self->r, self->sh };
	char buf[BLOCK];
	int p[2], table;
	pid_t leader;

	ASSERT_EQ(0, pipe(p));
	leader = start_hanging_leader(self->r, self->f, self->sh, p[1]);
	ASSERT_LT(0, leader);
	kill(leader, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(leader));
	EXPECT_EQ(1, held_blocks(self->pool, SYNCMEM_POOL_TABLE, &table));
	EXPECT_EQ(1, table);
	EXPECT_EQ(0, syncmem_pool_reclaim(self->pool));
	EXPECT_EQ(NBLOCKS - 1, syncmem_pool_free_count(self->pool));
	/* The next caller reaps the dead flight, runs its own, frees both blocks. */
	self->sh->result_mode = MODE_OK;
	EXPECT_LT(0, syncmem_flight_do(self->r, self->f, "key", 3, flight_fn, &a, buf,
				       sizeof(buf)));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	close(p[0]);
	close(p[1]);
}

/* A leader whose function starts another flight for each level of @depth. */
struct nest {
	struct syncmem_region *r;
	struct syncmem_flight *f;
	int depth;
};

static int nested_fn(void *arg, void *out, size_t cap, size_t *len)
{
	struct nest *n = arg;
	char key[16];
	int ret;

	if (n->depth == 0) {
		*len = 1;
		return cap ? (((char *)out)[0] = 'x', 0) : -ENOSPC;
	}
	n->depth--;
	snprintf(key, sizeof(key), "n%d", n->depth);
	ret = syncmem_flight_do(n->r, n->f, key, strlen(key), nested_fn, n, out, cap);
	if (ret < 0)
		return ret;
	*len = (size_t)ret;
	return 0;
}

/* A function that asks for its own flight's key. */
static int recursive_fn(void *arg, void *out, size_t cap, size_t *len)
{
	struct nest *n = arg;
	int ret = syncmem_flight_do(n->r, n->f, "self", 4, recursive_fn, n, out, cap);

	*len = 0;
	return ret < 0 ? ret : -EIO;
}

TEST_F(flight, a_function_asking_for_its_own_key_is_edeadlk)
{
	struct nest n = { self->r, self->f, 0 };
	char buf[BLOCK];

	EXPECT_EQ(-EDEADLK, syncmem_flight_do(self->r, self->f, "self", 4, recursive_fn, &n, buf,
					      sizeof(buf)));
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));
}

/* A function that reports what syncmem_execute_result() says inside it. */
static int execute_result_fn(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	(void)out;
	(void)cap;
	*len = 0;
#ifdef EXECUTE_RESULT_MISSING
	return 0;
#else
	return syncmem_execute_result() ? -EIO : 0;
#endif
}

TEST_F(flight, limits_and_errors)
{
	size_t table_len = syncmem_flight_footprint(ENTRIES);
	struct nest n = { self->r, self->f, ENTRIES };
	struct syncmem_flight *other;
	struct syncmem_loop *loop;
	char buf[BLOCK], small[4];
	struct fn_arg a = { self->r, self->sh };

	/* Nested flights hold one entry each: ENTRIES of them fit, not more. */
	n.depth = ENTRIES - 1;
	EXPECT_EQ(1, syncmem_flight_do(self->r, self->f, "top", 3, nested_fn, &n, buf,
				       sizeof(buf)));
	n.depth = ENTRIES;
	EXPECT_EQ(-ENOSPC, syncmem_flight_do(self->r, self->f, "top", 3, nested_fn, &n, buf,
					     sizeof(buf)));
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
	EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(self->pool));

	/* No free block for the result: -ENOMEM before running anything. */
	{
		uint32_t blocks[NBLOCKS];

		for (int i = 0; i < NBLOCKS; i++)
			blocks[i] = syncmem_pool_alloc(self->pool);
		EXPECT_EQ(-ENOMEM, syncmem_flight_do(self->r, self->f, "key", 3, flight_fn, &a,
						     buf, sizeof(buf)));
		EXPECT_EQ(0, atomic_load(&self->sh->runs));
		for (int i = 0; i < NBLOCKS; i++)
			syncmem_pool_free(self->pool, blocks[i]);
	}
	/* A leader takes over nothing: its function is never told of a death. */
	EXPECT_EQ(0, syncmem_flight_do(self->r, self->f, "er", 2, execute_result_fn, NULL, buf,
				       sizeof(buf)));
	/* The caller's buffer too small for the result. */
	EXPECT_EQ(-EMSGSIZE, syncmem_flight_do(self->r, self->f, "key", 3, flight_fn, &a, small,
					       sizeof(small)));
	EXPECT_EQ(-E2BIG, syncmem_flight_do(self->r, self->f, buf, SYNCMEM_KEY_MAX + 1, flight_fn,
					    &a, buf, sizeof(buf)));
	EXPECT_EQ(-EINVAL, syncmem_flight_do(self->r, self->f, "", 0, flight_fn, &a, buf, 1));
	EXPECT_EQ(-EINVAL, syncmem_flight_do(self->r, self->f, "k", 1, NULL, &a, buf, 1));
	EXPECT_EQ(-EINVAL, syncmem_flight_do(NULL, self->f, "k", 1, flight_fn, &a, buf, 1));
	EXPECT_EQ(-EINVAL, syncmem_flight_do(self->r, (struct syncmem_flight *)self->sh->pool,
					     "k", 1, flight_fn, &a, buf, 1));

	/* Init and attach. */
	EXPECT_EQ(-EEXIST, syncmem_flight_init(self->r, self->table, table_len, ENTRIES,
					       self->pool, &other));
	EXPECT_EQ(-ERANGE, syncmem_flight_init(self->r, buf, sizeof(buf), 1, self->pool, &other));
	/* The result pool must lie in the region. */
	{
		static char outside[4096] __attribute__((aligned(64)));
		struct syncmem_pool *elsewhere;

		ASSERT_EQ(0, syncmem_pool_init(outside, sizeof(outside), 64, 4, &elsewhere));
		EXPECT_EQ(-ERANGE, syncmem_flight_init(self->r, self->table, table_len, ENTRIES,
						       elsewhere, &other));
		syncmem_pool_detach(elsewhere);
	}
	EXPECT_EQ(-EINVAL, syncmem_flight_init(self->r, self->table, table_len, ENTRIES, NULL,
					       &other));
	EXPECT_EQ(0, syncmem_flight_attach(self->r, self->table, table_len, &other));
	EXPECT_EQ(self->f, other);
	EXPECT_EQ(-EPROTO, syncmem_flight_attach(self->r, (char *)self->sh + REGION - 65536,
						 table_len, &other));

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	EXPECT_EQ(-EINVAL, syncmem_flight_do_async(loop, self->r, self->f, "k", 1, flight_fn, &a,
						   NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_flight_do_async(NULL, self->r, self->f, "k", 1, flight_fn, &a,
						   async_done, NULL));
	syncmem_loop_free(loop);
	EXPECT_EQ(0, syncmem_flight_in_flight(self->f));
}

/* Many keys: their index as the result, from the loop. */
static int index_fn(void *arg, void *out, size_t cap, size_t *len)
{
	*len = (size_t)snprintf(out, cap, "value %d", (int)(intptr_t)arg);
	return 0;
}

/* Per key: 1 once its callback got its own result, -1 for a wrong one. */
static int many_results[256];

static void many_cb(void *arg, int result, const void *data, size_t len)
{
	int *res = arg;
	char want[32];
	int n = snprintf(want, sizeof(want), "value %d", (int)(res - many_results));

	*res = result == n && len == (size_t)n && !memcmp(data, want, len) ? 1 : -1;
}

/*
 * As nobody (the default per-user limits, no CAP_SYS_RESOURCE), lead @n
 * flights of distinct keys from one event loop at once, then run it: 0 when
 * every one completed with its own result; with @over (the last), that
 * leader is past the user's max_user_on_close and gets -EDQUOT, the others
 * complete.
 */
static int lead_many(int n, int over)
{
	size_t pool_len = syncmem_pool_footprint(64, 256);
	size_t table_len = syncmem_flight_footprint(256);
	struct syncmem_region *r;
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
	struct syncmem_loop *loop;
	char *base;
	int err;

	if (become_nobody())
		return 2;
	if (syncmem_open(NULL, 1 << 20, 0, 0, &r))
		return 3;
	base = syncmem_base(r);
	if (syncmem_pool_init(base, pool_len, 64, 256, &pool) ||
	    syncmem_flight_init(r, base + ((pool_len + 63) & ~(size_t)63), table_len, 256, pool,
				&f) ||
	    syncmem_loop_new(&loop))
		return 4;
	for (int i = 0; i < n; i++) {
		char key[16];

		many_results[i] = 0;
		snprintf(key, sizeof(key), "key %d", i);
		err = syncmem_flight_do_async(loop, r, f, key, strlen(key), index_fn,
					      (void *)(intptr_t)i, many_cb, &many_results[i]);
		if (over && i == over) {
			if (err != -EDQUOT)
				return 5;
			many_results[i] = 1;	/* nothing will run */
		} else if (err) {
			fprintf(stderr, "# flight %d of %d: %d\n", i, n, err);
			return 6;
		}
	}
	/* Every leader's flight is in flight at once. */
	if (syncmem_flight_in_flight(f) != (uint32_t)(over ? n - 1 : n))
		return 7;
	if (syncmem_loop_run(loop))
		return 8;
	for (int i = 0; i < n; i++)
		if (many_results[i] != 1)
			return 9;
	if (syncmem_flight_in_flight(f))
		return 10;
	syncmem_loop_free(loop);
	return 0;
}

TEST_F_TIMEOUT(flight, two_hundred_flights_led_from_one_loop, 300)
{
	unsigned long long saved = get_param("max_user_on_close");
	pid_t pid;

	ASSERT_NE(~0ULL, saved);
	pid = fork();
	if (pid == 0)
		_exit(lead_many(200, 0));
	EXPECT_EQ(0, wait_exit(pid));
	/* Room for 10 leaders (two actions each): the 11th is -EDQUOT. */
	ASSERT_EQ(0, set_param("max_user_on_close", 21));
	pid = fork();
	if (pid == 0)
		_exit(lead_many(11, 10));
	EXPECT_EQ(0, wait_exit(pid));
	set_param("max_user_on_close", saved);
}

TEST_HARNESS_MAIN
