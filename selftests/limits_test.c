// SPDX-License-Identifier: GPL-2.0
/*
 * Limits: one unprivileged user cannot take what others and root need.
 * Each test charges uids of its own: names left in a dead IPC namespace stay
 * charged to their creator until the namespace is reaped.
 * Regions and their bytes per user (through user namespaces too, and a
 * container as a whole), per IPC namespace and for the system with a
 * reserve for CAP_SYS_RESOURCE; async waits and on-close actions per user
 * across handles. Every limit is a module parameter and a clear errno.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define PG 4096

static const char *const params[] = {
	"max_regions", "max_total_bytes", "reserve_percent", "max_ns_regions",
	"max_ns_bytes", "max_user_regions", "max_user_bytes",
	"max_user_async_waits", "max_user_on_close",
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

FIXTURE(limits) {
	unsigned long long saved[NPARAMS];
	int dev;
	char prefix[32];
};

FIXTURE_SETUP(limits)
{
	for (size_t i = 0; i < NPARAMS; i++) {
		self->saved[i] = get_param(params[i]);
		ASSERT_NE(~0ULL, self->saved[i]) TH_LOG("no parameter %s", params[i]);
	}
	self->dev = dev_open();
	ASSERT_LE(0, self->dev);
	snprintf(self->prefix, sizeof(self->prefix), "lim%d", getpid());
}

FIXTURE_TEARDOWN(limits)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (self->saved[i] != ~0ULL)
			set_param(params[i], self->saved[i]);
	close(self->dev);
}

/* Create named regions PREFIX-TAG-0.. of @size until one fails: its -errno. */
static int create_until_error(const char *prefix, const char *tag, uint64_t size,
			      int *created)
{
	int dev = dev_open(), fd = 0;
	char name[64];

	*created = 0;
	if (dev < 0)
		return -errno;
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "%s-%s-%d", prefix, tag, i);
		fd = raw_region_open(dev, name, SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
				     size, 0666, NULL);
		if (fd < 0)
			break;
		close(fd);	/* the name keeps the region */
		(*created)++;
	}
	close(dev);
	return fd;
}

/* Unlink every name create_until_error() made with @tag. */
static void unlink_all(int dev, const char *prefix, const char *tag)
{
	char name[64];

	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "%s-%s-%d", prefix, tag, i);
		if (raw_unlink(dev, name))
			break;
	}
}

/* In a child as @uid (0: stay root): create until error; exit code is
 * 100 + created when the error is @want, else 1. */
static int child_fills(int uid, const char *prefix, const char *tag, uint64_t size,
		       int want)
{
	pid_t pid = fork();

	if (pid == 0) {
		int created, err;

		if (uid && become_user(uid))
			_exit(2);
		err = create_until_error(prefix, tag, size, &created);
		_exit(err == want ? 100 + created : 1);
	}
	return wait_exit(pid);
}

static int create_one(int dev, const char *prefix, const char *tag, uint64_t size)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "%s-%s", prefix, tag);
	fd = raw_region_open(dev, name, SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
			     size, 0600, NULL);
	if (fd >= 0) {
		close(fd);
		raw_unlink(dev, name);
		return 0;
	}
	return fd;
}

/* As @uid in a child: create_one(); exit 0 on success, else 100 + errno. */
static int child_creates_one(int uid, const char *prefix, const char *tag)
{
	pid_t pid = fork();

	if (pid == 0) {
		int dev, err;

		if (become_user(uid))
			_exit(2);
		dev = dev_open();
		err = create_one(dev, prefix, tag, PG);
		_exit(err ? 100 - err : 0);
	}
	return wait_exit(pid);
}

TEST_F(limits, one_user_cannot_exhaust_regions_for_others)
{
	ASSERT_EQ(0, set_param("max_user_regions", 5));
	/* nobody creates until refused, and exits: its names stay, charged. */
	EXPECT_EQ(100 + 5, child_fills(60001, self->prefix, "a", PG, -EDQUOT));
	EXPECT_EQ(100 + 0, child_fills(60001, self->prefix, "b", PG, -EDQUOT));
	/* Another user and root still can. */
	EXPECT_EQ(0, child_creates_one(60002, self->prefix, "other"));
	EXPECT_EQ(0, create_one(self->dev, self->prefix, "root", PG));
	/* Unlinking gives the charge back. */
	unlink_all(self->dev, self->prefix, "a");
	EXPECT_EQ(100 + 5, child_fills(60001, self->prefix, "c", PG, -EDQUOT));
	unlink_all(self->dev, self->prefix, "c");
}

TEST_F(limits, one_user_cannot_pin_all_memory)
{
	struct syncmem_stats before = get_stats(self->dev), after;

	ASSERT_EQ(0, set_param("max_user_bytes", 4 * 16 * PG));
	EXPECT_EQ(100 + 4, child_fills(60003, self->prefix, "m", 16 * PG, -EDQUOT));
	EXPECT_EQ(0, child_creates_one(60004, self->prefix, "other"));
	after = get_stats(self->dev);
	EXPECT_EQ(before.region_bytes + 4 * 16 * PG, after.region_bytes);
	unlink_all(self->dev, self->prefix, "m");
	after = get_stats(self->dev);
	EXPECT_EQ(before.region_bytes, after.region_bytes);
}

TEST_F(limits, root_keeps_a_reserve)
{
	struct syncmem_stats s = get_stats(self->dev);
	int got;

	/* 20 more regions in all, half of them kept for CAP_SYS_RESOURCE. */
	ASSERT_EQ(0, set_param("max_regions", s.regions + 20));
	ASSERT_EQ(0, set_param("reserve_percent", 50));
	/* Unprivileged users together get at most the other half... */
	got = child_fills(60005, self->prefix, "u", PG, -ENOSPC) - 100;
	EXPECT_LE(1, got);
	EXPECT_GE(10, got);
	EXPECT_EQ(100 + ENOSPC, child_creates_one(60006, self->prefix, "other"));
	/* ...and root has the reserve. */
	EXPECT_LE(100 + 5, child_fills(0, self->prefix, "r", PG, -ENOSPC));
	unlink_all(self->dev, self->prefix, "u");
	unlink_all(self->dev, self->prefix, "r");
}

/* In a child: a new IPC namespace, then as @uid fill it: 100 + created. */
static int child_fills_new_ns(int uid, const char *prefix, const char *tag,
			      uint64_t size, int want)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (unshare(CLONE_NEWIPC))
			_exit(3);
		_exit(child_fills(uid, prefix, tag, size, want));
	}
	return wait_exit(pid);
}

TEST_F(limits, each_ipc_namespace_has_its_own_limits)
{
	ASSERT_EQ(0, set_param("max_ns_regions", 3));
	EXPECT_EQ(100 + 3, child_fills_new_ns(60007, self->prefix, "n", PG, -ENOSPC));
	/* Another namespace, another user of the first: their own 3. */
	EXPECT_EQ(100 + 3, child_fills_new_ns(60008, self->prefix, "n", PG, -ENOSPC));
	ASSERT_EQ(0, set_param("max_ns_regions", self->saved[3]));

	ASSERT_EQ(0, set_param("max_ns_bytes", 8 * PG));
	EXPECT_EQ(100 + 2, child_fills_new_ns(60007, self->prefix, "b", 4 * PG, -ENOMEM));
	/* The initial namespace is not touched by either. */
	EXPECT_EQ(0, child_creates_one(60007, self->prefix, "init"));
}

/* As nobody: @n async waits on each of two handles; the first error. */
static int child_async_waits(int per_handle, uint64_t *queued)
{
	struct syncmem_region *r;
	int dev[2], err = 0;

	*queued = 0;
	if (become_nobody() || syncmem_open(NULL, PG, 0, 0, &r))
		return -EPERM;
	for (int h = 0; h < 2; h++) {
		dev[h] = dev_open();
		for (int i = 0; i < per_handle && !err; i++) {
			struct syncmem_wait_async w = {
				.region_fd = syncmem_region_fd(r),
				.size = 4,
				.offset = 4 * i,
				.deadline_ns = SYNCMEM_NO_DEADLINE,
				.user_data = i + 1,
			};
			int ret = raw_ioctl(dev[h], SYNCMEM_IOC_WAIT_ASYNC, &w);

			if (ret == SYNCMEM_WAIT_QUEUED)
				(*queued)++;
			else
				err = ret < 0 ? ret : -EIO;
		}
	}
	return err;
}

TEST_F(limits, async_waits_are_limited_per_user_across_handles)
{
	ASSERT_EQ(0, set_param("max_user_async_waits", 5));
	pid_t pid = fork();

	if (pid == 0) {
		uint64_t queued;
		int err = child_async_waits(3, &queued);
		struct syncmem_stats s;
		int dev = dev_open();

		s = get_stats(dev);
		_exit(err == -EDQUOT && queued == 5 && s.user_async_waits == 5 ? 0 : 1);
	}
	EXPECT_EQ(0, wait_exit(pid));
	/* Its handles are gone: so are the charges. */
	pid = fork();
	if (pid == 0) {
		uint64_t queued;
		int err = child_async_waits(2, &queued);

		_exit(err == 0 && queued == 4 ? 0 : 1);
	}
	EXPECT_EQ(0, wait_exit(pid));
}

/* A Web Locks callback: keeps its result, releases a grant. */
static void keep_result(void *arg, int result, struct syncmem_held *h)
{
	*(int *)arg = result;
	if (h)
		syncmem_locks_release(h);
}

TEST_F(limits, a_web_locks_request_past_the_async_limit_gets_edquot)
{
	ASSERT_EQ(0, set_param("max_user_async_waits", 2));
	pid_t pid = fork();

	if (pid == 0) {
		size_t size = syncmem_locks_footprint(4, 16);
		int res[3] = { 1, 1, 1 }, i;
		struct syncmem_region *r;
		struct syncmem_loop *loop;
		struct syncmem_locks *m;
		struct syncmem_held *h;

		if (become_nobody() || syncmem_open(NULL, size, 0, 0, &r) ||
		    syncmem_locks_init(r, syncmem_base(r), size, &m) ||
		    syncmem_loop_new_region(r, &loop) ||
		    syncmem_locks_request(m, "n", 1, 0, -1, &h))
			_exit(2);
		/* Each queued request waits asynchronously: the third is one too many. */
		for (i = 0; i < 3; i++)
			if (syncmem_locks_request_async(loop, m, "n", 1, 0, keep_result,
							&res[i], NULL))
				_exit(3);
		for (i = 0; i < 100 && res[2] == 1; i++)
			syncmem_loop_run_once(loop, 10000000);
		if (res[0] != 1 || res[1] != 1 || res[2] != -EDQUOT)
			_exit(4);
		/* The two queued ones go on: the first is granted at the release. */
		if (syncmem_locks_release(h))
			_exit(5);
		for (i = 0; i < 100 && res[0] == 1; i++)
			syncmem_loop_run_once(loop, 10000000);
		_exit(res[0] == 0 ? 0 : 6);
	}
	EXPECT_EQ(0, wait_exit(pid));
}

TEST_F(limits, on_close_actions_are_limited_per_user_across_handles)
{
	ASSERT_EQ(0, set_param("max_user_on_close", 3));
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_region *r;
		int n = 0, err = 0;

		if (become_nobody() || syncmem_open(NULL, PG, 0, 0, &r))
			_exit(2);
		for (int h = 0; h < 2 && !err; h++) {
			int dev = dev_open();

			for (int i = 0; i < 2 && !err; i++) {
				struct syncmem_on_close a = {
					.region_fd = syncmem_region_fd(r),
					.size = 4,
					.offset = 4 * i,
					.value = 1,
					.user_data = i + 1,
				};

				err = raw_ioctl(dev, SYNCMEM_IOC_ARM_ON_CLOSE, &a);
				n += !err;
			}
		}
		_exit(err == -EDQUOT && n == 3 ? 0 : 1);
	}
	EXPECT_EQ(0, wait_exit(pid));
}

/* Map @uid to 0 in a new user namespace of the caller. */
static int enter_user_ns(int uid)
{
	char map[64];
	int fd;

	/* A process that changed uids is not dumpable: its maps are root's. */
	if (prctl(PR_SET_DUMPABLE, 1))
		return -EIO;
	if (unshare(CLONE_NEWUSER))
		return -errno;
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd < 0 || write(fd, "deny", 4) != 4)
		return -EIO;
	close(fd);
	snprintf(map, sizeof(map), "0 %d 1", uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return -EIO;
	close(fd);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
		return -EIO;
	close(fd);
	return 0;
}

TEST_F(limits, user_namespaces_share_their_owners_limit)
{
	ASSERT_EQ(0, set_param("max_user_regions", 4));
	pid_t pid = fork();

	if (pid == 0) {
		int created, err, ns;

		if (become_user(60009))
			_exit(2);
		err = create_until_error(self->prefix, "o", PG, &created);
		if (err != -EDQUOT || created != 4)
			_exit(3);
		/* "root" of its own namespace is still 60009's quota. */
		ns = enter_user_ns(60009);
		if (ns == -EINVAL || ns == -EPERM || ns == -ENOSPC)
			_exit(4);	/* no user namespaces in this kernel */
		if (ns)
			_exit(5);
		err = create_until_error(self->prefix, "i", PG, &created);
		_exit(err == -EDQUOT && created == 0 ? 0 : 6);
	}
	int status = wait_exit(pid);

	if (status == 4)
		SKIP(goto out, "this kernel has no user namespaces");
	EXPECT_EQ(0, status);
out:
	unlink_all(self->dev, self->prefix, "o");
	unlink_all(self->dev, self->prefix, "i");
}

/* In a container: create regions of a page until refused. */
static int fill_pages(const char *prefix, const char *tag)
{
	int created, err = create_until_error(prefix, tag, PG, &created);

	return err == -EDQUOT ? 100 + created : 1;
}

/*
 * A "container" made by root: a child in a new user namespace whose uids
 * 0-999 are @host_uid and up outside (root writes the map, as container
 * runtimes do). As its root it runs @body(@prefix, @tag) and exits with
 * what that returns; 4 without user namespaces.
 */
static int in_container(int host_uid, int (*body)(const char *prefix, const char *tag),
			const char *prefix, const char *tag)
{
	int ready[2], go[2];
	char c, path[64], map[64];
	pid_t pid;

	if (pipe(ready) || pipe(go))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		if (unshare(CLONE_NEWUSER))
			_exit(4);
		if (write(ready[1], "u", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(5);
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
			_exit(6);
		_exit(body(prefix, tag));
	}
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) == 1) {
		snprintf(map, sizeof(map), "0 %d 1000", host_uid);
		snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
		write_file(path, map);
		snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
		write_file(path, map);
		if (write(go[1], "g", 1) != 1)
			return -1;
	}
	close(ready[0]);
	close(go[1]);
	return wait_exit(pid);
}

TEST_F(limits, containers_made_by_root_do_not_share_a_quota)
{
	int a, b;

	ASSERT_EQ(0, set_param("max_user_regions", 8));
	a = in_container(100000, fill_pages, self->prefix, "ca");
	if (a == 4)
		SKIP(return, "this kernel has no user namespaces");
	EXPECT_EQ(100 + 8, a);
	/* Another tenant is not held to the first one's quota. */
	b = in_container(200000, fill_pages, self->prefix, "cb");
	EXPECT_EQ(100 + 8, b);
	unlink_all(self->dev, self->prefix, "ca");
	unlink_all(self->dev, self->prefix, "cb");
}

/*
 * In a container, as its @uid (in a user namespace of its own mapping 0 to
 * @uid when @nested): regions of 4 pages until refused. 100 + created when
 * refused with -EDQUOT, else below 100.
 */
static int container_user_fills(int uid, bool nested, const char *prefix, const char *tag)
{
	pid_t pid = fork();

	if (pid == 0) {
		int created, err;

		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(2);
		if (nested && (enter_user_ns(uid) || unshare(CLONE_NEWIPC)))
			_exit(3);
		err = create_until_error(prefix, tag, 4 * PG, &created);
		_exit(err == -EDQUOT ? 100 + created : 1);
	}
	return wait_exit(pid);
}

/*
 * A container's root: two IPC namespaces, in each two uids fill what they
 * may (the fourth from a user namespace of its own). 100 + regions they
 * made in all, or below 100 when one failed otherwise.
 */
static int four_users_fill(const char *prefix, const char *tag)
{
	int total = 0;

	for (int ipc = 0; ipc < 2; ipc++) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			int sum = 0;

			if (unshare(CLONE_NEWIPC))
				_exit(7);
			for (int j = 0; j < 2; j++) {
				int uid = 1 + 2 * ipc + j;
				char t[32];

				snprintf(t, sizeof(t), "%s%d", tag, uid);
				status = container_user_fills(uid, uid == 4, prefix, t);
				if (status < 100)
					_exit(status);
				sum += status - 100;
			}
			_exit(100 + sum);
		}
		status = wait_exit(pid);
		if (status < 100)
			return status;
		total += status - 100;
	}
	return 100 + total;
}

TEST_F(limits, a_container_is_limited_as_a_whole)
{
	int got;

	/* Room for 4 regions of 4 pages per user, and per container. */
	ASSERT_EQ(0, set_param("max_user_bytes", 16 * PG));
	got = in_container(300000, four_users_fill, self->prefix, "w");
	if (got == 4)
		SKIP(return, "this kernel has no user namespaces");
	/* Four uids, two IPC namespaces, a nested user namespace: one quota. */
	EXPECT_EQ(100 + 4, got);
	/* A host user, and a second container, still have theirs. */
	EXPECT_EQ(0, child_creates_one(60011, self->prefix, "host"));
	EXPECT_EQ(100 + 4, in_container(310000, four_users_fill, self->prefix, "x"));
}

TEST_F(limits, max_total_bytes_zero_means_half_of_ram_at_any_time)
{
	struct syncmem_version v;

	ASSERT_EQ(0, set_param("max_total_bytes", 1 << 20));
	ASSERT_EQ(0, raw_ioctl(self->dev, SYNCMEM_IOC_VERSION, &v));
	EXPECT_EQ(1 << 20, v.max_total_bytes);
	ASSERT_EQ(0, set_param("max_total_bytes", 0));
	ASSERT_EQ(0, raw_ioctl(self->dev, SYNCMEM_IOC_VERSION, &v));
	EXPECT_EQ(sysconf(_SC_PHYS_PAGES) / 2 * sysconf(_SC_PAGESIZE), v.max_total_bytes);
	EXPECT_EQ(0, create_one(self->dev, self->prefix, "zero", 64 * PG));
}

TEST_F(limits, errnos_name_the_limit)
{
	/* A region beyond max_region_size is -E2BIG, whoever asks. */
	EXPECT_EQ(-E2BIG, raw_region_open(self->dev, NULL, 0,
					  get_param("max_region_size") + 1, 0, NULL));
	/* One page fits a one-page quota, two do not: -EDQUOT, not -ENOMEM. */
	ASSERT_EQ(0, set_param("max_user_bytes", PG));
	EXPECT_EQ(0, child_creates_one(60010, self->prefix, "one"));
	EXPECT_EQ(100 + 0, child_fills(60010, self->prefix, "two", 2 * PG, -EDQUOT));
}

TEST_HARNESS_MAIN
