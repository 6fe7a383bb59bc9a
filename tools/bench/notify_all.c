// SPDX-License-Identifier: GPL-2.0
/*
 * notify-all: N threads wait on one word; one notify-all wakes them. Time
 * of that call per woken waiter, syncmem against a process-shared futex,
 * for 1,000 and 10,000 waiters, in the same run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/syncmem.h>

#include "bench.h"
#include "syncmem.h"

#define ROUNDS 3

static struct syncmem_region *region;
static uint32_t *sm_word, *fx_word;

static void *sm_waiter(void *arg)
{
	(void)arg;
	syncmem_wait32(region, sm_word, 0, SYNCMEM_FOREVER);
	return NULL;
}

static void *fx_waiter(void *arg)
{
	(void)arg;
	while (__atomic_load_n(fx_word, __ATOMIC_ACQUIRE) == 0)
		futex_wait(fx_word, 0);
	return NULL;
}

static uint64_t sm_queued(void)
{
	struct syncmem_region_info info;

	if (ioctl(syncmem_region_fd(region), SYNCMEM_IOC_REGION_INFO, &info))
		return 0;
	return info.waiters;
}

/* Threads of this process asleep in the kernel (state S), for the futex side. */
static int sleeping_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], buf[256];
	int n = 0;

	while (d && (e = readdir(d))) {
		FILE *f;
		char *p;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[2] == 'S')
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* Seconds taken by @wake_all with @n threads queued; *woken reports its count. */
static double run(int n, void *(*waiter)(void *), int (*queued)(int),
		  long (*wake_all)(void), long *woken)
{
	pthread_t *t = calloc(n, sizeof(*t));
	pthread_attr_t attr;
	double t0, t1;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], &attr, waiter, NULL);
	while (!queued(n))
		usleep(10000);
	t0 = bench_now();
	*woken = wake_all();
	t1 = bench_now();
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return t1 - t0;
}

static int sm_all_queued(int n)
{
	return sm_queued() == (uint64_t)n;
}

static int fx_all_queued(int n)
{
	/* The main thread is running; everybody else must be asleep. */
	if (sleeping_threads() < n)
		return 0;
	usleep(100000);	/* let the last ones reach futex_wait proper */
	return 1;
}

static long sm_wake_all(void)
{
	return syncmem_notify(region, sm_word, SYNCMEM_ALL);
}

static long fx_wake_all(void)
{
	__atomic_store_n(fx_word, 1, __ATOMIC_RELEASE);
	return futex_wake(fx_word, INT32_MAX);
}

int main(void)
{
	static const int sizes[] = { 1000, 10000 };
	FILE *f;
	int err;

	f = fopen("/proc/sys/kernel/threads-max", "w");
	if (f) {
		fputs("50000\n", f);
		fclose(f);
	}
	f = fopen("/proc/sys/kernel/pid_max", "w");
	if (f) {
		fputs("50000\n", f);
		fclose(f);
	}
	err = syncmem_open(NULL, 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "notify-all: %s\n", syncmem_strerror(err));
		return 1;
	}
	sm_word = syncmem_base(region);
	fx_word = memfd_shared(4096);
	if (!fx_word)
		return 1;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i];
		double s[ROUNDS], x[ROUNDS];
		long sw, fw;
		char what[64];

		for (int k = 0; k < ROUNDS; k++) {
			*fx_word = 0;
			s[k] = run(n, sm_waiter, sm_all_queued, sm_wake_all, &sw) * 1e9 / n;
			x[k] = run(n, fx_waiter, fx_all_queued, fx_wake_all, &fw) * 1e9 / n;
			if (sw != n || fw != n) {
				fprintf(stderr, "notify-all: woke %ld (syncmem) and %ld (futex) of %d\n",
					sw, fw, n);
				return 1;
			}
		}
		snprintf(what, sizeof(what), "notify-all %d waiters, ns/waiter", n);
		bench_report(what, "ns", bench_median(s, ROUNDS), "futex",
			     bench_median(x, ROUNDS), 0);
	}
	syncmem_close(region);
	return 0;
}
