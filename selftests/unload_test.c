// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading the module while expired async waits are still on their way to
 * being timed out: nothing may be left behind (the kernel warns when a cache
 * is destroyed with objects in it, and kmemleak reports what leaked).
 *
 * To hold the expiries back deterministically, the waits' timers fire on CPU
 * 1 while a SCHED_FIFO busy loop owns it (RT throttling off), so work bound
 * to that CPU cannot run; the handle is closed and the module unloaded from
 * CPU 0 meanwhile. Reloads the module afterwards: run it in the guest only.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define RT_RUNTIME "/proc/sys/kernel/sched_rt_runtime_us"

/* A SCHED_FIFO child spinning on CPU 1 for @ms milliseconds. */
static pid_t hog_cpu1(int ms, int dev)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sched_param sp = { .sched_priority = 50 };
		int64_t end = now_ns() + ms * 1000000LL;

		close(dev);	/* the handle must go when the parent closes it */
		if (pin_to_cpu(1) || sched_setscheduler(0, SCHED_FIFO, &sp))
			_exit(2);
		while (now_ns() < end)
			;
		_exit(0);
	}
	return pid;
}

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(unload_while_expired_waits_are_in_flight)
{
	char saved[32] = "950000";
	FILE *f;

	ASSERT_EQ(0, access("/syncmem.ko", R_OK)) TH_LOG("only in the test guest");
	ASSERT_LE(2, sysconf(_SC_NPROCESSORS_ONLN));
	f = fopen(RT_RUNTIME, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(saved, sizeof(saved), f));
	fclose(f);
	ASSERT_EQ(0, write_file(RT_RUNTIME, "-1"));

	for (int round = 0; round < 3; round++) {
		int dev = dev_open(), rfd, tries = 0;
		int64_t deadline;
		pid_t hog;

		ASSERT_LE(0, dev);
		rfd = raw_region_open(dev, NULL, 0, 4096, 0, NULL);
		ASSERT_LE(0, rfd);
		/*
		 * Armed on CPU 1, so the timers fire there; a second leaves
		 * room for the slow debug kernel to queue them all first.
		 */
		ASSERT_EQ(0, pin_to_cpu(1));
		deadline = now_ns() + 1000 * 1000000LL;
		for (int i = 0; i < 512; i++)
			ASSERT_EQ(SYNCMEM_WAIT_QUEUED,
				  raw_wait_async(dev, rfd, 4 * i, 0, deadline, i + 1));
		close(rfd);
		ASSERT_EQ(0, pin_to_cpu(0));
		hog = hog_cpu1((int)((deadline - now_ns()) / 1000000) + 1300, dev);
		ASSERT_LT(0, hog);
		/* The timers fire under the hog; then close and unload. */
		usleep((deadline + 200 * 1000000LL - now_ns()) / 1000);
		close(dev);
		while (run("rmmod syncmem 2>/dev/null") && tries++ < 300)
			usleep(10 * 1000);
		EXPECT_GT(300, tries) TH_LOG("rmmod syncmem kept failing");
		EXPECT_EQ(0, wait_exit(hog));
		ASSERT_EQ(0, run("lsmod | grep -q '^syncmem ' || insmod /syncmem.ko"));
	}
	write_file(RT_RUNTIME, saved);
}

/*
 * A region's dentry outlives its files when an O_PATH reopen holds it, and
 * its name is printed by this module's code: the module must stay loaded.
 */
TEST(a_path_to_a_region_keeps_the_module_loaded)
{
	char path[64], link[64];
	int dev, rfd, pfd;
	ssize_t n;

	ASSERT_EQ(0, access("/syncmem.ko", R_OK)) TH_LOG("only in the test guest");
	dev = dev_open();
	ASSERT_LE(0, dev);
	rfd = raw_region_open(dev, NULL, 0, 4096, 0, NULL);
	ASSERT_LE(0, rfd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", rfd);
	pfd = open(path, O_PATH);
	ASSERT_LE(0, pfd);
	close(rfd);
	close(dev);
	/* No file of the module is open, but its dentry is referenced. */
	EXPECT_NE(0, run("rmmod syncmem 2>/dev/null"));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
	n = readlink(path, link, sizeof(link) - 1);
	ASSERT_LT(0, n);
	link[n] = '\0';
	EXPECT_STREQ("syncmem:[anonymous]", link);
	close(pfd);
	/* Its inode goes an RCU grace period later; then the module may. */
	for (int tries = 0; run("rmmod syncmem 2>/dev/null"); tries++) {
		ASSERT_GT(300, tries);
		usleep(10 * 1000);
	}
	ASSERT_EQ(0, run("insmod /syncmem.ko"));
}

/*
 * rmmod, retried for up to 3 s: a closed file's dentry gives the module
 * back an RCU grace period later. 0 once unloaded.
 */
static int unload(void)
{
	for (int tries = 0; run("rmmod syncmem 2>/dev/null"); tries++) {
		if (tries == 300)
			return -1;
		usleep(10 * 1000);
	}
	return 0;
}

static int region_size(int rfd)
{
	struct syncmem_region_info info;

	return ioctl(rfd, SYNCMEM_IOC_REGION_INFO, &info) ? -errno : (int)info.size;
}

/* regions.rst: unloading drops the names of regions nobody uses. */
TEST(a_name_nobody_uses_does_not_keep_the_module_loaded)
{
	uint32_t *word;
	int dev, rfd;

	ASSERT_EQ(0, access("/syncmem.ko", R_OK)) TH_LOG("only in the test guest");
	dev = dev_open();
	ASSERT_LE(0, dev);
	rfd = raw_region_open(dev, "unload-unused", SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
			      8192, 0600, NULL);
	ASSERT_LE(0, rfd);
	word = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	ASSERT_NE(MAP_FAILED, word);
	word[0] = 42;
	ASSERT_EQ(0, munmap(word, 8192));
	close(rfd);
	close(dev);
	EXPECT_EQ(0, unload()) TH_LOG("the name alone keeps the module loaded");
	ASSERT_EQ(0, run("lsmod | grep -q '^syncmem ' || insmod /syncmem.ko"));

	/* The name went with the module. */
	dev = dev_open();
	ASSERT_LE(0, dev);
	EXPECT_EQ(-ENOENT, raw_region_open(dev, "unload-unused", 0, 0, 0, NULL));
	raw_unlink(dev, "unload-unused");
	close(dev);
}

/* A name whose region is still open or mapped keeps the module, rightly. */
TEST(a_named_region_in_use_keeps_the_module_loaded)
{
	int dev, rfd;
	void *p;

	ASSERT_EQ(0, access("/syncmem.ko", R_OK)) TH_LOG("only in the test guest");
	dev = dev_open();
	ASSERT_LE(0, dev);
	rfd = raw_region_open(dev, "unload-used", SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
			      4096, 0600, NULL);
	ASSERT_LE(0, rfd);
	close(dev);
	/* Its fd. */
	EXPECT_NE(0, run("rmmod syncmem 2>/dev/null"));
	EXPECT_EQ(4096, region_size(rfd));
	/* Its mapping, once the fd is closed. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(rfd);
	EXPECT_NE(0, run("rmmod syncmem 2>/dev/null"));
	EXPECT_EQ(0, *(volatile uint32_t *)p);
	ASSERT_EQ(0, munmap(p, 4096));
	/* Then nothing: it unloads, and the name goes with it. */
	EXPECT_EQ(0, unload());
	ASSERT_EQ(0, run("lsmod | grep -q '^syncmem ' || insmod /syncmem.ko"));
	dev = dev_open();
	ASSERT_LE(0, dev);
	EXPECT_EQ(-ENOENT, raw_region_open(dev, "unload-used", 0, 0, 0, NULL));
	close(dev);
}

/*
 * Last (tests run in this order): leaves a named region behind, for the VM runner's own check that
 * the module unloads after the command (tools/vm/run fails the run if not).
 */
TEST(a_name_left_behind_for_the_runner)
{
	int dev = dev_open(), rfd;

	ASSERT_LE(0, dev);
	raw_unlink(dev, "unload-left-behind");
	rfd = raw_region_open(dev, "unload-left-behind", SYNCMEM_REGION_CREATE, 4096, 0600, NULL);
	ASSERT_LE(0, rfd);
	close(rfd);
	close(dev);
}

TEST_HARNESS_MAIN
