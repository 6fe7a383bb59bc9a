/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the syncmem kselftests: raw ioctl wrappers (so the tests
 * exercise the kernel ABI itself, not only the library), module parameters
 * and small process utilities.
 */
#ifndef SYNCMEM_SELFTEST_H
#define SYNCMEM_SELFTEST_H

#include <errno.h>
#include <poll.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "syncmem.h"

#define SYNCMEM_DEV "/dev/syncmem"
#define PARAM_DIR "/sys/module/syncmem/parameters/"

/*
 * Whether the guest runs the debug kernel (KASAN, lockdep, kmemleak), where
 * the tests that build huge numbers of objects use fewer: every other kernel
 * of the matrix checks the full count.
 */
static inline bool on_debug_kernel(void)
{
	const char *k = getenv("SYNCMEM_KERNEL");

	return k && !strcmp(k, "debug");
}

static inline int dev_open(void)
{
	return open(SYNCMEM_DEV, O_RDWR | O_CLOEXEC);
}

/* Region fd, or -errno. */
static inline int raw_region_open(int dev, const char *name, uint32_t flags,
				  uint64_t size, uint32_t mode, uint64_t *size_out)
{
	struct syncmem_region_open arg = {
		.name = (uintptr_t)name,
		.name_len = name ? (uint32_t)strlen(name) : 0,
		.flags = flags,
		.size = size,
		.mode = mode,
	};
	int fd = ioctl(dev, SYNCMEM_IOC_REGION_OPEN, &arg);

	if (fd < 0)
		return -errno;
	if (size_out)
		*size_out = arg.size;
	return fd;
}

static inline int raw_unlink(int dev, const char *name)
{
	struct syncmem_region_unlink arg = {
		.name = (uintptr_t)name,
		.name_len = (uint32_t)strlen(name),
	};

	return ioctl(dev, SYNCMEM_IOC_REGION_UNLINK, &arg) ? -errno : 0;
}

/* ioctl result as 0 / -errno. */
static inline int raw_ioctl(int fd, unsigned long req, void *arg)
{
	int ret = ioctl(fd, req, arg);

	return ret < 0 ? -errno : ret;
}

static inline struct syncmem_stats get_stats(int dev)
{
	struct syncmem_stats s;

	memset(&s, 0xff, sizeof(s));
	if (ioctl(dev, SYNCMEM_IOC_STATS, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

static inline unsigned long long get_param(const char *name)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return ~0ULL;
	if (fscanf(f, "%llu", &v) != 1)
		v = ~0ULL;
	fclose(f);
	return v;
}

static inline int set_param(const char *name, unsigned long long v)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), PARAM_DIR "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ok = fprintf(f, "%llu\n", v) > 0;
	return (fclose(f) == 0 && ok) ? 0 : -EIO;
}

/* Wait for @pid; its exit status, or 128 + signal. */
static inline int wait_exit(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * A race test's round budget: it runs up to `rounds` rounds, but stops
 * after `seconds` once it has done at least `floor` rounds. A kernel that
 * runs each round slowly (KASAN and lockdep under emulation take twenty
 * times as long) then does fewer rounds instead of minutes more, and every
 * kernel still does at least `floor`.
 */
struct round_budget {
	long rounds, floor;
	int64_t end_ns;
};

static inline struct round_budget round_budget(long rounds, long floor, int seconds)
{
	return (struct round_budget){ rounds, floor, now_ns() + seconds * 1000000000LL };
}

/* Whether round number `done` (counted from 0) may start. */
static inline bool round_budget_more(const struct round_budget *b, long done)
{
	if (done >= b->rounds)
		return false;
	/* Reading the clock every round would slow the race: every 64th. */
	return done < b->floor || (done % 64) || now_ns() < b->end_ns;
}

/* One WAIT_ASYNC of a 4-byte word: its result or -errno. */
static inline int raw_wait_async(int dev, int rfd, uint64_t off, uint32_t expected,
				 uint64_t deadline, uint64_t user_data)
{
	struct syncmem_wait_async w = {
		.region_fd = rfd,
		.size = 4,
		.offset = off,
		.expected = expected,
		.deadline_ns = deadline,
		.user_data = user_data,
	};

	return raw_ioctl(dev, SYNCMEM_IOC_WAIT_ASYNC, &w);
}

/*
 * Nanoseconds one queued WAIT_ASYNC takes on this kernel and machine,
 * measured on words of @rfd (at least 8000 bytes) from a throwaway handle:
 * tests that queue many waits with one deadline size it from this.
 */
static inline int64_t wait_async_cost(int rfd)
{
	int dev = dev_open();
	int64_t t0 = now_ns();

	for (int i = 0; i < 2000; i++)
		raw_wait_async(dev, rfd, 4 * i, 0, ~0ULL, i + 1);
	t0 = (now_ns() - t0) / 2000;
	close(dev);
	return t0;
}

/* Waiters queued on words of the region behind @fd right now. */
static inline uint64_t fd_waiters(int fd)
{
	struct syncmem_region_info info;

	if (ioctl(fd, SYNCMEM_IOC_REGION_INFO, &info))
		return ~0ULL;
	return info.waiters;
}

static inline uint64_t region_waiters(struct syncmem_region *r)
{
	return fd_waiters(syncmem_region_fd(r));
}

/* Poll until exactly @n waiters are queued (20 s at most); 1 if they are. */
static inline int await_fd_waiters(int fd, uint64_t n)
{
	for (int i = 0; i < 20000; i++) {
		if (fd_waiters(fd) == n)
			return 1;
		usleep(1000);
	}
	return 0;
}

static inline int await_waiters(struct syncmem_region *r, uint64_t n)
{
	return await_fd_waiters(syncmem_region_fd(r), n);
}

/*
 * Reap stress children while releasing whoever still waits on @words with
 * notify-all, adding those wake-ups to @notified. 0 when all @n exited 0.
 */
static inline int reap_notifying(const pid_t *pids, int n, struct syncmem_region *r,
				 uint32_t *words, int nwords,
				 _Atomic uint64_t *notified)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		int status = 0;
		pid_t done;

		while ((done = waitpid(pids[i], &status, WNOHANG)) == 0) {
			for (int w = 0; w < nwords; w++)
				atomic_fetch_add(notified,
						 syncmem_notify(r, &words[w], SYNCMEM_ALL));
			usleep(1000);
		}
		if (done != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	return bad;
}

/* Write @v to the file at @path (sysfs, procfs, cgroupfs): 0 or -1. */
static inline int write_file(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(v, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* A /proc/meminfo field in kB, or -1. */
static inline long meminfo_kb(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)) && line[strlen(field)] == ':')
			v = atol(line + strlen(field) + 1);
	fclose(f);
	return v;
}

/* Run the calling thread on @cpu only: 0 or -1. */
static inline int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Drop to uid and gid @id, with no supplementary groups, for the rest of
 * this (child) process: 0 or -errno.
 */
static inline int become_user(uid_t id)
{
	if (setgroups(0, NULL) || setresgid(id, id, id) || setresuid(id, id, id))
		return -errno;
	return 0;
}

/* Drop to uid/gid 65534 (nobody). */
static inline int become_nobody(void)
{
	return become_user(65534);
}

/* Install the filter @f of @len instructions (SECCOMP_FILTER_FLAG_* @flags): its result. */
static inline int seccomp_install(struct sock_filter *f, unsigned short len, unsigned int flags)
{
	struct sock_fprog prog = { .len = len, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

/*
 * From now on, @action (SECCOMP_RET_*) for every ioctl of the calling
 * thread: seccomp(2)'s result (a listener fd with
 * SECCOMP_FILTER_FLAG_NEW_LISTENER in @flags), or -1.
 */
static inline int seccomp_on_ioctl(unsigned int action, unsigned int flags)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return seccomp_install(f, sizeof(f) / sizeof(f[0]), flags);
}

/*
 * Does the filter @forbid installs work? A child installs it, then makes an
 * ioctl (forbidden by both filters). Its exit status: 128 + SIGSYS when the
 * filter killed it.
 */
static inline int filter_kills_child(int (*forbid)(void))
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (forbid())
			_exit(10);
		ioctl(-1, 0);
		_exit(0);
	}
	return wait_exit(pid);
}

/* Is @fd readable right now? */
static inline int fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Kill the process with SIGSYS on any system call but exit from now on. */
static inline int forbid_syscalls(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return seccomp_install(f, sizeof(f) / sizeof(f[0]), 0) ? -1 : 0;
}

/* Kill the process with SIGSYS on any ioctl from now on. */
static inline int forbid_ioctl(void)
{
	return seccomp_on_ioctl(SECCOMP_RET_KILL_PROCESS, 0) < 0 ? -1 : 0;
}

#endif /* SYNCMEM_SELFTEST_H */
