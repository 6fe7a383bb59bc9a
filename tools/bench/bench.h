/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared bits of the syncmem benchmarks: clocks, a futex-on-memfd baseline
 * and the "project vs baseline" report line.
 */
#ifndef SYNCMEM_BENCH_H
#define SYNCMEM_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Process-shared futex (no FUTEX_PRIVATE_FLAG), the baseline for waits. */
static inline long futex_wait(uint32_t *word, uint32_t expected)
{
	return syscall(SYS_futex, word, FUTEX_WAIT, expected, NULL, NULL, 0);
}

static inline long futex_wake(uint32_t *word, int count)
{
	return syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

/* Shared memory from a memfd, where process-shared futexes work. */
static inline void *memfd_shared(size_t len)
{
	int fd = memfd_create("bench", MFD_CLOEXEC);
	void *p;

	if (fd < 0 || ftruncate(fd, (off_t)len))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Median of @n samples (sorts them). */
static inline int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Run @fn(@arg, i) in @procs forked processes (at most 8) that start
 * together once all exist; each returns its operations per second, kept
 * in @rate (shared memory, @procs entries) with @go (shared) as the start
 * flag. The total of all processes.
 */
static inline double bench_forked(int procs, _Atomic int *go, double *rate,
				  double (*fn)(void *arg, int i), void *arg)
{
	pid_t pid[8];
	double total = 0;

	__atomic_store_n(go, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < procs && i < 8; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			while (!__atomic_load_n(go, __ATOMIC_ACQUIRE))
				;
			rate[i] = fn(arg, i);
			_exit(0);
		}
	}
	__atomic_store_n(go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < procs && i < 8; i++) {
		waitpid(pid[i], NULL, 0);
		total += rate[i];
	}
	return total;
}

/*
 * One result line: the project's figure, the baseline's, and their ratio.
 * @higher_is_better says which way the ratio reads.
 */
static inline void bench_report(const char *what, const char *unit,
				double ours, const char *base_name, double base,
				int higher_is_better)
{
	double ratio = higher_is_better ? ours / base : base / ours;

	printf("%-34s syncmem %12.1f %-9s %-7s %12.1f %-9s ratio %.2fx%s\n",
	       what, ours, unit, base_name, base, unit, ratio,
	       ratio >= 1.0 ? "" : " (slower)");
}

#endif /* SYNCMEM_BENCH_H */
