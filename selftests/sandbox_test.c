// SPDX-License-Identifier: GPL-2.0
/*
 * A sandboxed worker that was given only a region fd: no /dev/syncmem to
 * open (a chroot, a mount namespace without the node, a node whose mode
 * forbids it). Its loop comes from the region fd (SYNCMEM_IOC_HANDLE_OPEN,
 * syncmem_loop_new_region()) and runs async locks, waits and single-flight
 * as any loop does; what the handle may not do (create, unlink or list
 * regions, read the counters) is -EPERM.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define MS		1000000LL
#define REGION_SIZE	65536

struct shared {
	struct syncmem_lock lock;
	struct syncmem_sem sem;
	_Atomic uint32_t step;		/* the worker's progress, for the parent */
	uint32_t word;			/* an Atomics-style word */
	uint8_t pool[] __attribute__((aligned(64)));	/* then the flight table */
};

#define POOL_BLOCKS	4
#define FLIGHT_ENTRIES	4

FIXTURE(sandbox) {
	struct syncmem_region *r;
	struct shared *sh;
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
};

FIXTURE_SETUP(sandbox)
{
	size_t pool_len = syncmem_pool_footprint(64, POOL_BLOCKS);

	ASSERT_EQ(0, syncmem_open(NULL, REGION_SIZE, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	syncmem_lock_init(&self->sh->lock, 0);
	ASSERT_EQ(0, syncmem_sem_init(&self->sh->sem, 0));
	ASSERT_EQ(0, syncmem_pool_init(self->sh->pool, pool_len, 64, POOL_BLOCKS, &self->pool));
	ASSERT_EQ(0, syncmem_flight_init(self->r, self->sh->pool + pool_len,
					 syncmem_flight_footprint(FLIGHT_ENTRIES), FLIGHT_ENTRIES,
					 self->pool, &self->f));
}

FIXTURE_TEARDOWN(sandbox)
{
	syncmem_pool_detach(self->pool);
	syncmem_close(self->r);
}

/* Ways to lose /dev/syncmem. */
enum jail { JAIL_CHROOT, JAIL_NO_DEV, JAIL_NODE_0600 };

/*
 * Make this (child) process unable to open /dev/syncmem: 0 with the
 * errno syncmem_loop_new() must now give in *@want, or -1.
 */
static int jail(enum jail how, long *want)
{
	char dir[] = "/tmp/sandbox-XXXXXX";
	struct stat st;

	if (stat(SYNCMEM_DEV, &st))
		return -1;
	switch (how) {
	case JAIL_CHROOT:
		/* An empty root: no /dev at all. */
		if (!mkdtemp(dir) || chroot(dir) || chdir("/"))
			return -1;
		*want = -ENODEV;
		return 0;
	case JAIL_NO_DEV:
		/* A mount namespace whose /dev is an empty tmpfs. */
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("none", "/dev", "tmpfs", 0, NULL))
			return -1;
		*want = -ENODEV;
		return 0;
	default:
		/* The node is there, but only root may open it, and we are not. */
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("none", "/dev", "tmpfs", 0, NULL) ||
		    mknod(SYNCMEM_DEV, S_IFCHR | 0600, st.st_rdev) || become_nobody())
			return -1;
		*want = -EACCES;
		return 0;
	}
}

struct got {
	int result;
	bool ran;
};

static void got(void *arg, int result)
{
	struct got *g = arg;

	g->result = result;
	g->ran = true;
}

static int leader_fn(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	if (cap < 5)
		return -EMSGSIZE;
	memcpy(out, "jail", 5);
	*len = 5;
	return 0;
}

static struct got flight_got;
static char flight_data[8];

static void flight_done(void *arg, int result, const void *data, size_t len)
{
	(void)arg;
	flight_got.result = result;
	flight_got.ran = true;
	if (result > 0 && len <= sizeof(flight_data))
		memcpy(flight_data, data, len);
}

/* Run @loop until @g's callback ran (10 s at most): 0, or -1. */
static int run_until(struct syncmem_loop *loop, struct got *g)
{
	int64_t end = now_ns() + 10000 * MS;

	while (!g->ran && now_ns() < end)
		if (syncmem_loop_run_once(loop, 100 * MS) < 0)
			return -1;
	return g->ran ? 0 : -1;
}

/*
 * The worker: jailed as @how, holding nothing of syncmem but @fd (a region
 * fd). Exit status 0 when everything worked; else the step that failed.
 */
static int worker(enum jail how, int fd)
{
	struct syncmem_region *r;
	struct syncmem_loop *loop = (void *)1;
	struct syncmem_flight *f;
	struct shared *sh;
	struct got g = { 0 };
	size_t pool_len = syncmem_pool_footprint(64, POOL_BLOCKS);
	long want;

	if (jail(how, &want))
		return 1;
	if (open(SYNCMEM_DEV, O_RDWR) >= 0)
		return 2;
	if (syncmem_open_fd(fd, &r))
		return 3;
	sh = syncmem_base(r);
	/* The device's loop is not to be had, and the error says why... */
	if (syncmem_loop_new(&loop) != want || loop)
		return 4;
	if (want == -ENODEV && !strstr(syncmem_strerror(-ENODEV), "syncmem_loop_new_region()"))
		return 5;
	if (want == -EACCES && !strstr(syncmem_strerror(-EACCES), "syncmem_loop_new_region()"))
		return 6;
	/* ...the region fd's is. */
	if (syncmem_loop_new_region(r, &loop) || !loop)
		return 7;
	/* An async lock of a lock the parent holds: queued, then handed over. */
	if (syncmem_lock_async(loop, r, &sh->lock, got, &g))
		return 8;
	atomic_store(&sh->step, 1);
	if (run_until(loop, &g) || g.result)
		return 9;
	if (syncmem_unlock(r, &sh->lock))
		return 10;
	/* An async semaphore wait, and an Atomics-style async wait. */
	g = (struct got){ 0 };
	if (syncmem_sem_wait_async(loop, r, &sh->sem, got, &g))
		return 11;
	atomic_store(&sh->step, 2);
	if (run_until(loop, &g) || g.result)
		return 12;
	g = (struct got){ 0 };
	if (syncmem_wait_async32(loop, r, &sh->word, 0, SYNCMEM_FOREVER, got, &g, NULL) !=
	    SYNCMEM_PENDING)
		return 13;
	atomic_store(&sh->step, 3);
	if (run_until(loop, &g) || g.result != SYNCMEM_OK)
		return 14;
	/* Single-flight, whose leader arms its guards on a handle of its own. */
	if (syncmem_flight_attach(r, sh->pool + pool_len, syncmem_flight_footprint(FLIGHT_ENTRIES),
				  &f))
		return 15;
	if (syncmem_flight_do_async(loop, r, f, "k", 1, leader_fn, NULL, flight_done, NULL))
		return 16;
	while (!flight_got.ran)
		if (syncmem_loop_run_once(loop, 100 * MS) < 0)
			return 17;
	if (flight_got.result != 5 || strcmp(flight_data, "jail"))
		return 18;
	syncmem_loop_free(loop);
	syncmem_close(r);
	return 0;
}

static void jailed_worker_runs_a_loop(struct __test_metadata *_metadata,
				      FIXTURE_DATA(sandbox) *self, enum jail how)
{
	struct shared *sh = self->sh;
	int64_t t0;
	pid_t pid;

	atomic_store(&sh->step, 0);
	sh->word = 0;
	ASSERT_EQ(0, syncmem_lock(self->r, &sh->lock));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = dup(syncmem_region_fd(self->r));

		alarm(60);
		/* Nothing of syncmem but that one region fd. */
		for (int i = 3; i < 1024; i++)
			if (i != fd)
				close(i);
		_exit(worker(how, fd));
	}
	t0 = now_ns();
	while (atomic_load(&sh->step) < 1 && now_ns() - t0 < 20000 * MS)
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&sh->step));
	/* Its async lock is queued on the word: unlock hands it over. */
	ASSERT_TRUE(await_waiters(self->r, 1));
	EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	while (atomic_load(&sh->step) < 2 && now_ns() - t0 < 20000 * MS)
		usleep(1000);
	EXPECT_EQ(0, syncmem_sem_post(self->r, &sh->sem));
	while (atomic_load(&sh->step) < 3 && now_ns() - t0 < 20000 * MS)
		usleep(1000);
	ASSERT_TRUE(await_waiters(self->r, 1));
	sh->word = 1;
	EXPECT_EQ(1, syncmem_notify(self->r, &sh->word, 1));
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(0, sh->lock.word);
}

TEST_F(sandbox, a_chrooted_worker_runs_a_loop_from_its_region_fd)
{
	jailed_worker_runs_a_loop(_metadata, self, JAIL_CHROOT);
}

TEST_F(sandbox, a_worker_whose_dev_lacks_the_node_runs_a_loop_from_its_region_fd)
{
	jailed_worker_runs_a_loop(_metadata, self, JAIL_NO_DEV);
}

TEST_F(sandbox, a_worker_the_node_forbids_runs_a_loop_from_its_region_fd)
{
	jailed_worker_runs_a_loop(_metadata, self, JAIL_NODE_0600);
}

static int handle_open(int fd, uint32_t flags, uint32_t pad)
{
	struct syncmem_handle_open arg = { .flags = flags, .pad = pad };

	return raw_ioctl(fd, SYNCMEM_IOC_HANDLE_OPEN, &arg);
}

/*
 * The handle HANDLE_OPEN gives: O_CLOEXEC, charged to the caller's
 * namespace like an open, what a handle does but for the calls the node
 * would have to allow, which are -EPERM.
 */
TEST_F(sandbox, a_handle_from_a_region_fd_does_what_a_handle_does_but_make_regions)
{
	int dev = dev_open(), rfd = syncmem_region_fd(self->r), ro, h, h2;
	struct syncmem_version v;
	struct syncmem_stats before, s;
	struct syncmem_region_open open_arg = { .size = 4096 };
	struct syncmem_region_unlink unlink_arg = { .name = (uintptr_t)"sandbox", .name_len = 7 };
	struct syncmem_region_entry e;
	struct syncmem_region_list list = { .entries = (uintptr_t)&e, .count = 1 };
	struct syncmem_eventfd efd = { .fd = -1 };
	struct syncmem_post post = { .user_data = 7, .result = 42 };
	struct syncmem_completion rec;
	struct syncmem_owner own = { .flags = SYNCMEM_OWNER_PROCESS };
	struct syncmem_on_close store = { .size = 4, .offset = 0, .value = 1, .user_data = 1 };
	struct syncmem_wait_async owner_wait = {
		.size = 8, .offset = 8, .expected = 0, .deadline_ns = SYNCMEM_NO_DEADLINE,
		.user_data = 2, .flags = SYNCMEM_WAIT_ASYNC_OWNER,
	};
	struct syncmem_waiter_entry we;
	struct syncmem_waiter_list wl = { .entries = (uintptr_t)&we, .count = 1 };
	char name[64];

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_VERSION, &v));
	EXPECT_TRUE(v.features & SYNCMEM_FEAT_HANDLE_OPEN);
	before = get_stats(dev);
	h = handle_open(rfd, 0, 0);
	ASSERT_LE(0, h);
	EXPECT_EQ(FD_CLOEXEC, fcntl(h, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(h, F_GETFL) & O_ACCMODE);
	s = get_stats(dev);
	EXPECT_EQ(before.handles + 1, s.handles);
	/* What the device node would have to allow. */
	EXPECT_EQ(-EPERM, raw_ioctl(h, SYNCMEM_IOC_REGION_OPEN, &open_arg));
	EXPECT_EQ(-EPERM, raw_ioctl(h, SYNCMEM_IOC_REGION_UNLINK, &unlink_arg));
	EXPECT_EQ(-EPERM, raw_ioctl(h, SYNCMEM_IOC_REGION_LIST, &list));
	EXPECT_EQ(-EPERM, raw_ioctl(h, SYNCMEM_IOC_STATS, &s));
	/* Everything else. */
	EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_VERSION, &v));
	EXPECT_EQ(SYNCMEM_ABI_VERSION, v.abi_version);
	EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_SET_EVENTFD, &efd));
	EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_OWNER, &own));
	EXPECT_NE(0, own.id);
	EXPECT_EQ(SYNCMEM_WAIT_QUEUED, raw_wait_async(h, rfd, 64, 0, SYNCMEM_NO_DEADLINE, 1));
	EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_POST, &post));
	EXPECT_EQ(1, fd_waiters(rfd));
	EXPECT_EQ(1, syncmem_notify(self->r, (char *)self->sh + 64, 1));
	EXPECT_EQ((ssize_t)sizeof(rec), read(h, &rec, sizeof(rec)));
	EXPECT_EQ((ssize_t)sizeof(rec), read(h, &rec, sizeof(rec)));
	/* Defects: -EINVAL; the call is the region fd's, not the handle's. */
	EXPECT_EQ(-EINVAL, handle_open(rfd, 1, 0));
	EXPECT_EQ(-EINVAL, handle_open(rfd, 0, 1));
	EXPECT_EQ(-EINVAL, handle_open(rfd, 0x80000000u, 0));
	EXPECT_EQ(-EFAULT, raw_ioctl(rfd, SYNCMEM_IOC_HANDLE_OPEN, NULL));
	EXPECT_EQ(-ENOTTY, handle_open(dev, 0, 0));
	EXPECT_EQ(-ENOTTY, handle_open(h, 0, 0));
	/* A read-only region fd gives one too; its waits observe. */
	snprintf(name, sizeof(name), "sandbox-%d", getpid());
	ASSERT_LE(0, raw_region_open(dev, name, SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
				     4096, 0600, NULL));
	ro = raw_region_open(dev, name, SYNCMEM_REGION_RDONLY, 0, 0, NULL);
	ASSERT_LE(0, ro);
	store.region_fd = ro;
	owner_wait.region_fd = ro;
	EXPECT_EQ(0, raw_unlink(dev, name));
	h2 = handle_open(ro, 0, 0);
	ASSERT_LE(0, h2);
	EXPECT_EQ(SYNCMEM_WAIT_NOT_EQUAL, raw_wait_async(h2, ro, 0, 1, SYNCMEM_NO_DEADLINE, 1));
	/* It gives no writes: an on-close store through the read-only fd is refused... */
	EXPECT_EQ(-EBADF, raw_ioctl(h2, SYNCMEM_IOC_ARM_ON_CLOSE, &store));
	/* ...and no ownership: its owner wait on that fd only observes. */
	EXPECT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(h2, SYNCMEM_IOC_WAIT_ASYNC, &owner_wait));
	EXPECT_EQ(0, raw_ioctl(ro, SYNCMEM_IOC_WAITERS, &wl));
	ASSERT_EQ(1, wl.count);
	EXPECT_EQ(SYNCMEM_WAITER_ASYNC | SYNCMEM_WAITER_OBSERVER, we.flags);
	EXPECT_EQ(0, we.owner);
	close(h2);
	EXPECT_EQ(0, fd_waiters(ro));
	close(ro);
	/* Closing it gives its charge back. */
	close(h);
	s = get_stats(dev);
	EXPECT_EQ(before.handles, s.handles);
	close(dev);
}

TEST_HARNESS_MAIN
