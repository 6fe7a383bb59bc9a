// SPDX-License-Identifier: GPL-2.0
/*
 * No leaked bookkeeping: once every process of a run has exited and every
 * name it created is unlinked, the module's STATS must be what they were
 * before the run, for root and for the unprivileged user alike (ABI 2
 * counts per user too).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

/* STATS as 65534, from a child that drops to it. */
static bool stats_as_nobody(struct syncmem_stats *out)
{
	struct syncmem_stats *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status = 0;
	pid_t pid;
	bool ok;

	if (s == MAP_FAILED)
		return false;
	pid = fork();
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		fd = open("/dev/syncmem", O_RDWR | O_CLOEXEC);
		_exit(fd >= 0 && !xioctl(fd, SYNCMEM_IOC_STATS, s) ? 0 : 1);
	}
	ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	     !WEXITSTATUS(status);
	if (ok)
		*out = *s;
	munmap(s, sizeof(*s));
	return ok;
}

bool baseline_take(int handle, struct baseline *b)
{
	return !xioctl(handle, SYNCMEM_IOC_STATS, &b->root) && stats_as_nobody(&b->nobody);
}

void baseline_unlink_names(int handle)
{
	const char *names[32];
	uint32_t lens[32];
	size_t n = pool_all_names(names, lens, 32);

	for (size_t i = 0; i < n; i++) {
		struct syncmem_region_unlink arg = { .name = (uintptr_t)names[i],
						     .name_len = lens[i] };
		long ret = xioctl(handle, SYNCMEM_IOC_REGION_UNLINK, &arg);

		if (ret && ret != -ENOENT)
			finding("final unlink of a pool name (len %u) as root: %s", lens[i],
				strerrorname_np((int)-ret));
	}
}

/* The counters that must come back; "" when they all did. */
static void differences(const struct syncmem_stats *was, const struct syncmem_stats *now,
			const char *who, char *buf, size_t len)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
#define F(x) { #x, offsetof(struct syncmem_stats, x) }
		F(regions), F(region_bytes), F(named_regions), F(handles), F(waiters),
		F(async_waits), F(user_regions), F(user_bytes), F(user_async_waits),
		F(user_on_close),
#undef F
	};
	size_t n = strlen(buf);

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]) && n < len; i++) {
		uint64_t a = *(const uint64_t *)((const char *)was + fields[i].off);
		uint64_t b = *(const uint64_t *)((const char *)now + fields[i].off);

		if (a != b)
			n += snprintf(buf + n, len - n, " %s%s %llu -> %llu", who, fields[i].name,
				      (unsigned long long)a, (unsigned long long)b);
	}
}

void baseline_check(int handle, const struct baseline *b)
{
	struct timespec pause = { 0, 50000000 };
	char diff[FINDING_LEN - 100];

	/* Deferred work (expired timers, RCU) may lag the last exit a little. */
	for (int tries = 0; tries < 400; tries++) {
		struct baseline now;

		diff[0] = '\0';
		if (!baseline_take(handle, &now)) {
			finding("STATS failed after the run");
			return;
		}
		differences(&b->root, &now.root, "", diff, sizeof(diff));
		differences(&b->nobody, &now.nobody, "nobody's ", diff, sizeof(diff));
		if (!diff[0])
			return;
		nanosleep(&pause, NULL);
	}
	finding("STATS did not return to the baseline 20 s after every process exited:%s", diff);
}
