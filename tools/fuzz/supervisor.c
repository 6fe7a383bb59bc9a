// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor: keeps the workers running (restarting the ones it
 * SIGKILLs at random moments), reaps everything (it is the subreaper of
 * the workers' children too), and judges how each process ended: only an
 * orderly exit or the supervisor's own SIGKILL is fine.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define MAX_WORKERS 16
#define KILLED_RING (sizeof(shared->killed) / sizeof(shared->killed[0]))

static int my_slot = -1;

bool proc_register(void)
{
	pid_t pid = getpid();

	for (int i = 0; i < MAX_PROCS; i++) {
		int free_slot = 0;

		if (atomic_compare_exchange_strong(&shared->procs[i], &free_slot, pid)) {
			my_slot = i;
			atomic_store(&shared->doing[i], "starting");
			return true;
		}
	}
	return false;
}

void proc_doing(const char *what)
{
	if (my_slot >= 0)
		atomic_store_explicit(&shared->doing[my_slot], what, memory_order_relaxed);
}

void proc_unregister(pid_t pid)
{
	for (int i = 0; i < MAX_PROCS; i++) {
		int p = pid;

		if (atomic_compare_exchange_strong(&shared->procs[i], &p, 0))
			return;
	}
}

int proc_count(void)
{
	int n = 0;

	for (int i = 0; i < MAX_PROCS; i++)
		n += atomic_load(&shared->procs[i]) != 0;
	return n;
}

struct supervisor {
	const struct run_options *o;
	struct rng rng;
	pid_t workers[MAX_WORKERS];
	unsigned int generation[MAX_WORKERS];
	bool stopping;
};

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

static void spawn(struct supervisor *s, unsigned int i)
{
	uint64_t seed = seed_derive(s->o->seed, i, s->generation[i]++);
	bool unprivileged = s->o->unprivileged_every &&
			    i % s->o->unprivileged_every == s->o->unprivileged_every - 1;
	pid_t pid = fork();

	if (pid == 0)
		worker_main((int)i, seed, unprivileged);
	s->workers[i] = pid > 0 ? pid : 0;
}

static bool we_killed(pid_t pid)
{
	unsigned int n = atomic_load(&shared->nkilled);

	for (unsigned int i = 0; i < KILLED_RING && i < n; i++)
		if (atomic_load(&shared->killed[i]) == pid)
			return true;
	return false;
}

static void kill_one(pid_t pid)
{
	atomic_store(&shared->killed[atomic_fetch_add(&shared->nkilled, 1) % KILLED_RING], pid);
	kill(pid, SIGKILL);
}

void judge_exit(pid_t pid, int status, const char *what)
{
	proc_unregister(pid);
	if (WIFEXITED(status) && WEXITSTATUS(status))
		finding("pid %d (%s) exited with status %d", pid, what, WEXITSTATUS(status));
	if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		finding("pid %d (%s) died of signal %d (%s)", pid, what, WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !we_killed(pid))
		finding("pid %d (%s) was SIGKILLed by somebody else (the OOM killer?)", pid, what);
}

void reap_children(void)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		judge_exit(pid, status, "a forked child");
}

/* Judge how a process ended; restart a worker. */
static void reaped(struct supervisor *s, pid_t pid, int status)
{
	const char *what = "an orphaned child";

	for (unsigned int i = 0; i < s->o->workers; i++) {
		if (s->workers[i] != pid)
			continue;
		what = "a worker";
		s->workers[i] = 0;
		if (!s->stopping) {
			atomic_fetch_add(&shared->restarts, 1);
			spawn(s, i);
		}
	}
	judge_exit(pid, status, what);
}

static int reap_all(struct supervisor *s, bool block)
{
	int status, n = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, block && !n ? 0 : WNOHANG)) > 0) {
		reaped(s, pid, status);
		n++;
	}
	return pid < 0 && errno == ECHILD ? -1 : n;
}

static void kill_random(struct supervisor *s)
{
	int start = (int)rng_below(&s->rng, MAX_PROCS);

	for (int k = 0; k < MAX_PROCS; k++) {
		pid_t pid = atomic_load(&shared->procs[(start + k) % MAX_PROCS]);

		if (pid > 0) {
			kill_one(pid);
			atomic_fetch_add(&shared->kills, 1);
			return;
		}
	}
}

/* Where a process that does not end is blocked: its threads' system calls. */
static void describe_blocked(pid_t pid)
{
	char path[320], line[256];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", pid, d->d_name);
		f = fopen(path, "r");
		if (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "fuzz:   pid %d thread %s in syscall %s", pid, d->d_name, line);
		if (f)
			fclose(f);
		/* The kernel stack, when the kernel has it. */
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", pid, d->d_name);
		f = fopen(path, "r");
		for (int n = 0; f && n < 12 && fgets(line, sizeof(line), f); n++)
			fprintf(stderr, "fuzz:     %s", line);
		if (f)
			fclose(f);
	}
	closedir(dir);
}

/*
 * A thread blocked in a wait nobody will end or a read nobody posts to
 * cannot stop in order: SIGUSR2 takes it out (FOREVER_BEGIN).
 */
static void release(pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			syscall(SYS_tgkill, pid, atoi(d->d_name), SIGUSR2);
	closedir(dir);
}

/* Not exited yet (a zombie only waits for its parent to reap it). */
static bool running(pid_t pid)
{
	char path[64], state = 'Z';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 'Z';
	if (f)
		fclose(f);
	return state != 'Z';
}

static bool any_running(void)
{
	for (int i = 0; i < MAX_PROCS; i++) {
		pid_t pid = atomic_load(&shared->procs[i]);

		if (pid > 0 && running(pid))
			return true;
	}
	return false;
}

/* Stop: let everything end by itself for a while, then SIGKILL the rest. */
static void wind_down(struct supervisor *s)
{
	uint64_t start = now_ns(), until = start + 20000000000ull;
	bool released = false;
	int left = 0;

	s->stopping = true;
	atomic_store(&shared->stop, true);
	while (now_ns() < until && reap_all(s, false) >= 0 && any_running()) {
		if (!released && now_ns() > start + 2000000000ull) {
			for (int i = 0; i < MAX_PROCS; i++)
				if (atomic_load(&shared->procs[i]) > 0)
					release(atomic_load(&shared->procs[i]));
			released = true;
		}
		sleep_ns(10000000);
	}
	for (int i = 0; i < MAX_PROCS; i++) {
		pid_t pid = atomic_load(&shared->procs[i]);

		if (pid <= 0)
			continue;
		if (running(pid) && left++ < 8) {
			fprintf(stderr, "fuzz: pid %d last did %s\n", pid,
				atomic_load(&shared->doing[i]));
			describe_blocked(pid);
		}
		kill_one(pid);	/* a zombie's parent, once killed, hands it to us */
	}
	if (left)
		fprintf(stderr, "fuzz: %d processes still busy 20 s after the stop: killed\n",
			left);
	while (reap_all(s, true) >= 0)
		;
}

double supervise(const struct run_options *o)
{
	struct supervisor s = { .o = o };
	uint64_t start = now_ns(), next_kill, last_progress = start, last_ioctls = 0;

	rng_seed(&s.rng, seed_derive(o->seed, 0xffff, 0));
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	for (unsigned int i = 0; i < o->workers; i++)
		spawn(&s, i);
	next_kill = start + (o->kill_ms ? rng_below(&s.rng, 2 * o->kill_ms) * 1000000ull : 0);
	for (;;) {
		uint64_t now = now_ns(), ioctls = atomic_load(&shared->ioctls);

		reap_all(&s, false);
		if (o->seconds && now - start >= o->seconds * 1000000000ull)
			break;
		if (o->ops && ioctls >= o->ops)
			break;
		if (ioctls != last_ioctls) {
			last_ioctls = ioctls;
			last_progress = now;
		} else if (now - last_progress > 60000000000ull) {
			finding("no ioctl completed for 60 s: everything is stuck (a kernel hang?)");
			break;
		}
		if (o->kill_ms && now >= next_kill) {
			kill_random(&s);
			next_kill = now + rng_below(&s.rng, 2 * o->kill_ms) * 1000000ull;
		}
		sleep_ns(5000000);
	}
	start = now_ns() - start;
	wind_down(&s);
	return (double)start / 1e9;
}
