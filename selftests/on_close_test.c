// SPDX-License-Identifier: GPL-2.0
/*
 * On-close actions (SYNCMEM_IOC_ARM_ON_CLOSE / SYNCMEM_IOC_DISARM): a handle
 * that goes away, by close or by the death of its process, stores the armed
 * value and wakes the word's waiters; a disarmed or outdated action does
 * nothing; counting actions add at once and take it back at close or undo;
 * every errno.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

FIXTURE(on_close) {
	struct syncmem_region *r;
	uint32_t *words;
	int fd;
};

FIXTURE_SETUP(on_close)
{
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->words = syncmem_base(self->r);
	self->fd = syncmem_region_fd(self->r);
}

FIXTURE_TEARDOWN(on_close)
{
	syncmem_close(self->r);
}

static int arm(int dev, int region_fd, uint64_t offset, uint32_t flags, uint64_t expected,
	       uint64_t value, uint64_t user_data)
{
	struct syncmem_on_close a = {
		.region_fd = region_fd, .size = 4, .offset = offset, .expected = expected,
		.value = value, .user_data = user_data, .flags = flags,
	};

	return raw_ioctl(dev, SYNCMEM_IOC_ARM_ON_CLOSE, &a);
}

static int disarm(int dev, uint64_t user_data)
{
	struct syncmem_disarm d = { .user_data = user_data };

	return raw_ioctl(dev, SYNCMEM_IOC_DISARM, &d);
}

TEST_F(on_close, a_killed_process_stores_and_wakes_every_waiter)
{
	struct syncmem_wait w = { .offset = 0, .size = 4, .expected = 0,
				  .deadline_ns = SYNCMEM_NO_DEADLINE };
	pid_t waiters[3], owner;
	int ready[2];
	char c;

	for (int i = 0; i < 3; i++) {
		waiters[i] = fork();
		ASSERT_LE(0, waiters[i]);
		if (waiters[i] == 0)
			_exit(raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &w));
	}
	ASSERT_TRUE(await_waiters(self->r, 3));
	ASSERT_EQ(0, pipe(ready));
	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		int dev = dev_open();

		if (arm(dev, self->fd, 0, 0, 0, 0xdead, 1))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		pause();
		_exit(3);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(0, self->words[0]);
	kill(owner, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(owner));
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(SYNCMEM_WAIT_WOKEN, wait_exit(waiters[i]));
	EXPECT_EQ(0xdead, self->words[0]);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F(on_close, disarmed_and_outdated_actions_do_nothing)
{
	int dev = dev_open();

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, arm(dev, self->fd, 0, 0, 0, 7, 1));
	ASSERT_EQ(0, arm(dev, self->fd, 4, SYNCMEM_ON_CLOSE_IF_EQUAL, 0, 8, 2));
	ASSERT_EQ(0, arm(dev, self->fd, 8, SYNCMEM_ON_CLOSE_IF_EQUAL, 0, 9, 3));
	EXPECT_EQ(0, disarm(dev, 1));
	EXPECT_EQ(-ENOENT, disarm(dev, 1));
	self->words[1] = 5;	/* no longer the expected 0: not stored */
	close(dev);
	EXPECT_EQ(0, self->words[0]);
	EXPECT_EQ(5, self->words[1]);
	EXPECT_EQ(9, self->words[2]);	/* still 0 at close: stored */
}

TEST_F(on_close, a_handle_shared_by_fork_fires_when_the_last_holder_closes)
{
	int dev = dev_open();
	pid_t child;

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, arm(dev, self->fd, 0, 0, 0, 1, 1));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(dev);
		_exit(self->words[0] != 0);	/* the parent still holds it */
	}
	EXPECT_EQ(0, wait_exit(child));
	EXPECT_EQ(0, self->words[0]);
	close(dev);
	EXPECT_EQ(1, self->words[0]);
}

TEST_F(on_close, the_action_keeps_its_region_alive)
{
	struct syncmem_region *other;
	struct syncmem_stats before;
	int dev = dev_open(), fd;

	ASSERT_LE(0, dev);
	before = get_stats(dev);
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &other));
	fd = dup(syncmem_region_fd(other));
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, arm(dev, fd, 0, 0, 0, 1, 1));
	close(fd);
	syncmem_close(other);
	/* Unmapped and closed by everyone: only the action holds it now. */
	EXPECT_EQ(before.regions + 1, get_stats(dev).regions);
	close(dev);
	dev = dev_open();
	EXPECT_EQ(before.regions, get_stats(dev).regions);
	close(dev);
}

/* ARM() below overrides its defaults field by field, on purpose. */
#pragma GCC diagnostic ignored "-Woverride-init"

static int undo(int dev, uint64_t user_data)
{
	struct syncmem_disarm d = { .user_data = user_data, .flags = SYNCMEM_DISARM_UNDO };

	return raw_ioctl(dev, SYNCMEM_IOC_DISARM, &d);
}

TEST_F(on_close, counting_actions_add_now_and_take_it_back_at_close_or_undo)
{
	struct syncmem_wait w = { .offset = 4, .size = 4, .expected = 3,
				  .deadline_ns = SYNCMEM_NO_DEADLINE };
	int dev = dev_open(), ready[2];
	pid_t owner, waiter;
	char c;

	ASSERT_LE(0, dev);
	/* Undo subtracts and says whether the word reached 0. */
	EXPECT_EQ(0, arm(dev, self->fd, 0, SYNCMEM_ON_CLOSE_ADD, 0, 1, 1));
	EXPECT_EQ(0, arm(dev, self->fd, 0, SYNCMEM_ON_CLOSE_ADD, 0, 1, 2));
	EXPECT_EQ(2, self->words[0]);
	EXPECT_EQ(0, undo(dev, 1));
	EXPECT_EQ(1, self->words[0]);
	EXPECT_EQ(-ENOENT, undo(dev, 1));
	EXPECT_EQ(1, undo(dev, 2));
	EXPECT_EQ(0, self->words[0]);
	/* A plain disarm leaves the count added; undo of a storing action is refused. */
	EXPECT_EQ(0, arm(dev, self->fd, 0, SYNCMEM_ON_CLOSE_ADD, 0, 5, 3));
	EXPECT_EQ(0, disarm(dev, 3));
	EXPECT_EQ(5, self->words[0]);
	EXPECT_EQ(0, arm(dev, self->fd, 0, 0, 0, 7, 4));
	EXPECT_EQ(-EINVAL, undo(dev, 4));
	EXPECT_EQ(0, disarm(dev, 4));
	/* Wrapping, as atomics do. */
	self->words[0] = 0xffffffffu;
	EXPECT_EQ(0, arm(dev, self->fd, 0, SYNCMEM_ON_CLOSE_ADD, 0, 1, 5));
	EXPECT_EQ(0, self->words[0]);
	EXPECT_EQ(0, undo(dev, 5));
	EXPECT_EQ(0xffffffffu, self->words[0]);
	close(dev);

	/* A process that dies counted in: its count is taken back, waiters woken. */
	self->words[1] = 2;
	ASSERT_EQ(0, pipe(ready));
	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		int d = dev_open();

		if (arm(d, self->fd, 4, SYNCMEM_ON_CLOSE_ADD, 0, 1, 1))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		pause();
		_exit(3);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(3, self->words[1]);
	waiter = fork();
	ASSERT_LE(0, waiter);
	if (waiter == 0)
		_exit(raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &w));
	ASSERT_TRUE(await_waiters(self->r, 1));
	kill(owner, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(owner));
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, wait_exit(waiter));
	EXPECT_EQ(2, self->words[1]);
	close(ready[0]);
	close(ready[1]);
}

TEST_F(on_close, errors)
{
	struct syncmem_region *ro;
	struct syncmem_on_close a;
	struct syncmem_disarm d;
	int dev = dev_open(), ro_fd;

	ASSERT_LE(0, dev);
#define ARM(...) (a = (struct syncmem_on_close){ .region_fd = self->fd, .size = 4, \
						  __VA_ARGS__ }, \
		  raw_ioctl(dev, SYNCMEM_IOC_ARM_ON_CLOSE, &a))
	EXPECT_EQ(-EINVAL, ARM(.size = 2));
	EXPECT_EQ(-EINVAL, ARM(.offset = 2));
	EXPECT_EQ(-EINVAL, ARM(.offset = 4096));
	EXPECT_EQ(-EINVAL, ARM(.size = 8, .offset = 4));
	EXPECT_EQ(-EINVAL, ARM(.value = 1ULL << 32));
	EXPECT_EQ(-EINVAL, ARM(.expected = 1ULL << 32, .flags = SYNCMEM_ON_CLOSE_IF_EQUAL));
	EXPECT_EQ(-EINVAL, ARM(.flags = 4));
	EXPECT_EQ(-EINVAL, ARM(.flags = SYNCMEM_ON_CLOSE_ADD | SYNCMEM_ON_CLOSE_IF_EQUAL));
	EXPECT_EQ(-EINVAL, ARM(.pad = 1));
	EXPECT_EQ(-EBADF, ARM(.region_fd = -1));
	EXPECT_EQ(-EINVAL, ARM(.region_fd = dev));	/* not a region */
	EXPECT_EQ(-EFAULT, raw_ioctl(dev, SYNCMEM_IOC_ARM_ON_CLOSE, NULL));
	/* Read-only region fd: no writing through it, even at close. */
	ASSERT_EQ(0, syncmem_open("on-close-ro", 4096, SYNCMEM_CREATE, 0600, &ro));
	ro_fd = raw_region_open(dev, "on-close-ro", SYNCMEM_REGION_RDONLY, 4096, 0, NULL);
	ASSERT_LE(0, ro_fd);
	EXPECT_EQ(-EBADF, ARM(.region_fd = ro_fd));
	close(ro_fd);
	syncmem_unlink("on-close-ro");
	syncmem_close(ro);

	/* Unique user_data; a handle has no cap of its own (the old 64 is none). */
	EXPECT_EQ(0, ARM(.user_data = 100));
	EXPECT_EQ(-EEXIST, ARM(.user_data = 100));
	for (int i = 1; i < 2 * SYNCMEM_ON_CLOSE_MAX; i++)
		EXPECT_EQ(0, ARM(.user_data = 100 + i));
	EXPECT_EQ(-EEXIST, ARM(.user_data = 150));
	EXPECT_EQ(0, disarm(dev, 150));
	EXPECT_EQ(-ENOENT, disarm(dev, 150));
	EXPECT_EQ(0, ARM(.user_data = 150));
	EXPECT_EQ(0, ARM(.user_data = 1));
#undef ARM
	d = (struct syncmem_disarm){ .user_data = 1, .flags = 1 };
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_DISARM, &d));
	d = (struct syncmem_disarm){ .user_data = 1, .pad = 1 };
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_DISARM, &d));
	EXPECT_EQ(-EFAULT, raw_ioctl(dev, SYNCMEM_IOC_DISARM, NULL));
	EXPECT_EQ(-ENOENT, disarm(dev, 99));
	/* Handle ioctls, not region ones. */
	EXPECT_EQ(-ENOTTY, raw_ioctl(self->fd, SYNCMEM_IOC_DISARM, &d));
	close(dev);
	EXPECT_EQ(0, self->words[0]);	/* all armed with value 0 */
}

/* In /proc/self/fdinfo/@fd: the lines starting with @prefix, and the value of @key. */
static int fdinfo_count(int fd, const char *prefix, const char *key, long long *value)
{
	char path[64], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	*value = -1;
	while (fgets(line, sizeof(line), f)) {
		n += !strncmp(line, prefix, strlen(prefix));
		if (!strncmp(line, key, strlen(key)))
			*value = strtoll(line + strlen(key), NULL, 0);
	}
	fclose(f);
	return n;
}

/*
 * As nobody, with max_user_on_close @limit: arm @n (even) actions on one handle,
 * counting ones on word 1 and storing ones (values 1..) on word 2, check
 * the one beyond the limit, disarm every other one, and close. Exit 0 when
 * every step did what it must.
 */
static int child_arms_many(int rfd, uint32_t *words, int n, int limit)
{
	int dev, err;

	if (become_nobody())
		return 2;
	dev = dev_open();
	if (dev < 0)
		return 3;
	for (int i = 0; i < n; i++) {
		err = arm(dev, rfd, 4, SYNCMEM_ON_CLOSE_ADD, 0, 1, 2 * i + 1);
		if (!err)
			err = arm(dev, rfd, 8, 0, 0, i + 1, 2 * i + 2);
		if (err)
			return 10;
	}
	if (words[1] != (uint32_t)n)
		return 11;
	/* fdinfo counts them all and lists the first 32. */
	long long armed;

	if (fdinfo_count(dev, "syncmem-on-close:", "syncmem-armed:\t", &armed) != 32 ||
	    armed != 2 * n)
		return 17;
	/* One more is over the user's limit, whichever handle asks. */
	if (n * 2 == limit && arm(dev, rfd, 12, 0, 0, 1, 1000000) != -EDQUOT)
		return 12;
	/* Every other one goes, in an order unrelated to arming. */
	for (int i = n - 1; i >= 0; i -= 2) {
		struct syncmem_disarm d = { .user_data = 2 * i + 1, .flags = SYNCMEM_DISARM_UNDO };

		if (raw_ioctl(dev, SYNCMEM_IOC_DISARM, &d) < 0 || disarm(dev, 2 * i + 2))
			return 13;
	}
	if (words[1] != (uint32_t)n / 2)
		return 14;
	/* Room again: the user's charge went with them. */
	if (arm(dev, rfd, 12, 0, 0, 7, 1000000))
		return 15;
	close(dev);
	/* The rest ran at close, in arming order: the last store is the newest. */
	if (words[1] != 0 || words[2] != (uint32_t)n - 1 || words[3] != 7)
		return 16;
	return 0;
}

TEST_F(on_close, a_handle_holds_thousands_of_actions_up_to_the_users_limit)
{
	unsigned long long saved = get_param("max_user_on_close");
	pid_t pid;

	ASSERT_NE(~0ULL, saved);
	/* 2000 actions on one handle: the user's limit, not the handle's. */
	ASSERT_EQ(0, set_param("max_user_on_close", 2000));
	pid = fork();
	if (pid == 0)
		_exit(child_arms_many(self->fd, self->words, 1000, 2000));
	EXPECT_EQ(0, wait_exit(pid));
	set_param("max_user_on_close", saved);
}

TEST_HARNESS_MAIN
