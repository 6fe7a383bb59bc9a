// SPDX-License-Identifier: GPL-2.0
/*
 * libfuzz: the library fuzzer (see libfuzz.h).
 *
 *   libfuzz [--seed N] [--seconds S] [--workers W] [--kernel] [--phase clean|scribble|both]
 *           [--objects pool,keyed,locks,weblocks]
 *
 * The clean phase runs W workers on fresh objects and checks, besides every
 * result, that the objects are idle and whole at the end. The scribble
 * phase adds a scribbler; a worker that crashes, touches memory outside the
 * region or stays in one call for 30 s (60 s with --kernel) is a finding.
 * Prints the seed and the findings; exits 1 on any.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libfuzz.h"
#include "../same_finding.h"

struct books *books;
static struct arena *segv_arena;

/*
 * Our SIGSEGV handler must win over ASan's; leak checks of forked workers
 * are noise; logs are read as text.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allow_user_segv_handler=1:detect_leaks=0:color=never";
}

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1:color=never";
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void finding(const char *fmt, ...)
{
	char msg[FINDING_LEN];
	va_list ap;

	atomic_fetch_add(&books->nfindings, 1);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (finding_record(&books->findings[0][0], FINDING_LEN, MAX_FINDINGS, &books->nkinds,
			   books->finding_count, books->finding_ready, msg))
		fprintf(stderr, "FINDING: %s\n", msg);
}

static void print_stack(const char *what)
{
	void *frames[32];
	int n = backtrace(frames, 32);

	dprintf(STDERR_FILENO, "libfuzz: pid %d %s:\n", getpid(), what);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

/* The watchdog asks a worker stuck in a call where it is. */
static void on_sigquit(int sig)
{
	(void)sig;
	print_stack("is stuck here");
}

/* A fault: say whether it was outside the region, then die of it. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t addr = (uintptr_t)si->si_addr;

	(void)uc;
	if (segv_arena)
		finding("%s at region %+lld bytes (pid %d)%s", strsignal(sig),
			(long long)(addr - (uintptr_t)segv_arena->base), getpid(),
			arena_guard(segv_arena, addr) ? ": an access outside the region" : "");
	print_stack("faulted here");
	signal(sig, SIG_DFL);
}

struct options {
	uint64_t seed;
	unsigned int seconds, workers, objects;
	bool kernel, clean, scribble;
};

static void usage(void)
{
	fprintf(stderr, "usage: libfuzz [--seed N] [--seconds S] [--workers W] [--kernel] "
			"[--phase clean|scribble|both] [--objects pool,keyed,locks,weblocks]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "workers", required_argument, NULL, 'w' },
		{ "kernel", no_argument, NULL, 'k' },
		{ "phase", required_argument, NULL, 'p' },
		{ "objects", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct options){ .seed = (uint64_t)time(NULL), .seconds = 10, .workers = 4,
			       .objects = OBJ_ALL, .clean = true, .scribble = true };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 't': o->seconds = (unsigned int)atoi(optarg); break;
		case 'w': o->workers = (unsigned int)atoi(optarg); break;
		case 'k': o->kernel = true; break;
		case 'p':
			o->clean = strcmp(optarg, "scribble") != 0;
			o->scribble = strcmp(optarg, "clean") != 0;
			break;
		case 'o':
			o->objects = 0;
			for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ","))
				o->objects |= !strcmp(t, "pool") ? OBJ_POOL :
					      !strcmp(t, "keyed") ? OBJ_KEYED :
					      !strcmp(t, "locks") ? OBJ_LOCKS :
					      !strcmp(t, "weblocks") ? OBJ_WEBLOCKS : 0;
			break;
		default: usage();
		}
	}
	if (optind != argc || !o->workers || o->workers > MAX_WORKERS || !o->seconds ||
	    !o->objects)
		usage();
}

static void judge_exit(pid_t pid, int status, const char *who, bool killed)
{
	if (killed)
		return;
	if (WIFSIGNALED(status))
		finding("%s (pid %d) died of signal %d (%s)", who, pid, WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	else if (WEXITSTATUS(status))
		finding("%s (pid %d) exited with status %d (a sanitizer report?)", who, pid,
			WEXITSTATUS(status));
}

/* The objects after a clean phase: every worker gave back what it held. */
static void check_idle(struct arena *a, bool try_only)
{
	uint32_t n = syncmem_pool_free_count(a->pool);
	int held;

	if (n != POOL_BLOCKS)
		finding("after the clean phase %u of %u pool blocks are free", n, POOL_BLOCKS);
	/* Idle entries stay cached for the next locker: count held or waited keys. */
	held = syncmem_keyed_held(&a->region, a->keyed);
	if (held)
		finding("after the clean phase %d keys are held or waited for", held);
	for (int i = 0; i < NLOCKS; i++) {
		struct syncmem_lock *l = (struct syncmem_lock *)(a->base + a->at.locks) + i;

		if (l->word || l->starving)
			finding("after the clean phase lock %d has word %#llx starving %u", i,
				(unsigned long long)l->word, l->starving);
	}
	for (int i = 0; i < NSEMS; i++) {
		struct syncmem_sem *s = (struct syncmem_sem *)(a->base + a->at.sems) + i;

		if (s->word != SEM_UNITS)
			finding("after the clean phase semaphore %d has word %#llx", i,
				(unsigned long long)s->word);
	}
	for (int i = 0; i < NGATES && !try_only; i++) {
		struct syncmem_gate *g = (struct syncmem_gate *)(a->base + a->at.gates) + i;

		if (g->word)
			finding("after the clean phase gate %d has word %#llx, not open", i,
				(unsigned long long)g->word);
	}
	if (a->weblocks) {
		size_t nh = 0, np = 0;
		int err = syncmem_locks_query(a->weblocks, NULL, &nh, NULL, &np);

		if (err || nh || np)
			finding("after the clean phase the Web Locks manager says %d: %zu held, %zu pending",
				err, nh, np);
	}
	for (int i = 0; i < NRWLOCKS; i++) {
		struct syncmem_rwlock *rw = (struct syncmem_rwlock *)(a->base + a->at.rwlocks) + i;
		uint32_t shares = 0;

		for (int j = 0; j < SYNCMEM_RWLOCK_SLOTS; j++)
			shares += rw->slot[j].count;
		if (shares || rw->closed || rw->writer || rw->turnstile.word)
			finding("after the clean phase rwlock %d has %u read shares, closed %#x writer %u turnstile %#llx",
				i, shares, rw->closed, rw->writer,
				(unsigned long long)rw->turnstile.word);
	}
}

static pid_t start_worker(struct arena *a, unsigned int objects, unsigned int i, uint64_t seed,
			  bool scribbled, uint64_t until)
{
	struct worker w = { .a = a, .objects = objects, .index = (int)i, .scribbled = scribbled,
			    .seed = seed };
	pid_t pid;

	w.rng.s = seed;
	atomic_store(&books->doing[i], "starting");
	atomic_store(&books->since[i], now_ns());
	pid = fork();
	if (pid == 0)
		worker_run(&w, until);
	return pid;
}

/* A worker that stayed in one call too long: a finding, and it goes. */
static bool watchdog(unsigned int i, pid_t pid, uint64_t seed, uint64_t limit)
{
	/* Read before the clock: the worker may move it on meanwhile. */
	uint64_t since = atomic_load(&books->since[i]), now = now_ns();
	uint64_t in_wait = atomic_load(&books->in_wait_since[i]);
	const struct syncmem_wait *w = &books->last_wait[i];

	if (now < since + limit)
		return false;
	if (in_wait && w->deadline_ns == SYNCMEM_NO_DEADLINE)
		finding("worker %u (seed %#llx) stayed in %s for %llu s, in a WAIT ioctl without deadline for %llu s (offset %#llx expected %#llx size %u)",
			i, (unsigned long long)seed, atomic_load(&books->doing[i]),
			(unsigned long long)(limit / 1000000000ull),
			(unsigned long long)((now - in_wait) / 1000000000ull),
			(unsigned long long)w->offset, (unsigned long long)w->expected, w->size);
	else if (in_wait)
		finding("worker %u (seed %#llx) stayed in %s for %llu s, in a WAIT ioctl for %llu s (offset %#llx expected %#llx size %u deadline %+lld ms from the call)",
			i, (unsigned long long)seed, atomic_load(&books->doing[i]),
			(unsigned long long)(limit / 1000000000ull),
			(unsigned long long)((now - in_wait) / 1000000000ull),
			(unsigned long long)w->offset, (unsigned long long)w->expected, w->size,
			(long long)(w->deadline_ns - in_wait) / 1000000);
	else
		finding("worker %u (seed %#llx) stayed in %s for %llu s: an endless loop", i,
			(unsigned long long)seed, atomic_load(&books->doing[i]),
			(unsigned long long)(limit / 1000000000ull));
	kill(pid, SIGQUIT);	/* its stack on stderr */
	usleep(300000);
	kill(pid, SIGKILL);
	return true;
}

static void phase(const struct options *o, bool scribbled)
{
	uint64_t base = o->seed ^ (scribbled ? 0x5c81bb1e : 0), until, limit, ops = 0;
	pid_t pids[MAX_WORKERS] = { 0 }, scribbler = 0;
	uint64_t seeds[MAX_WORKERS];
	bool killed[MAX_WORKERS] = { false };
	unsigned int alive = 0, restarts = 0;
	struct arena *a = calloc(1, sizeof(*a));
	int err = -ENOMEM;

	if (!a || (err = arena_create(a, o->kernel))) {
		finding("cannot build the arena: %s", strerror(-err));
		return;
	}
	segv_arena = a;
	memset(books, 0, offsetof(struct books, nfindings));
	until = now_ns() + o->seconds * 1000000000ull;
	limit = (o->kernel ? 60 : 30) * 1000000000ull;
	for (unsigned int i = 0; i < o->workers; i++) {
		seeds[i] = base + i * 0x100000001ull;
		pids[i] = start_worker(a, o->objects, i, seeds[i], scribbled, until);
		alive += pids[i] > 0;
	}
	if (scribbled) {
		scribbler = fork();
		if (scribbler == 0)
			scribble_run(a, o->objects, base * 3 + 1, until);
	}
	while (alive) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		for (unsigned int i = 0; i < o->workers && pid > 0; i++) {
			char who[48];

			if (pids[i] != pid)
				continue;
			snprintf(who, sizeof(who), "worker %u (seed %#llx)", i,
				 (unsigned long long)seeds[i]);
			judge_exit(pid, status, who, killed[i]);
			killed[i] = false;
			pids[i] = 0;
			alive--;
			/* Died early: a new worker goes on with the other objects. */
			if (now_ns() < until) {
				seeds[i] += 0x9e3779b97f4a7c15ull;
				pids[i] = start_worker(a, o->objects, i, seeds[i], scribbled, until);
				alive += pids[i] > 0;
				restarts++;
			}
		}
		if (pid > 0 && pid == scribbler) {
			judge_exit(pid, status, "the scribbler", false);
			scribbler = 0;
		}
		for (unsigned int i = 0; i < o->workers; i++)
			if (pids[i] && !killed[i])
				killed[i] = watchdog(i, pids[i], seeds[i], limit);
		if (pid <= 0) {
			struct timespec ts = { 0, 20000000 };

			nanosleep(&ts, NULL);
		}
	}
	if (scribbler)
		waitpid(scribbler, NULL, 0);
	if (!scribbled)
		check_idle(a, !o->kernel);
	for (unsigned int i = 0; i < o->workers; i++)
		ops += atomic_load(&books->ops[i]);
	printf("libfuzz: %s phase: %llu calls (%llu errors), %u workers restarted, %llu words scribbled\n",
	       scribbled ? "scribble" : "clean", (unsigned long long)ops,
	       (unsigned long long)atomic_load(&books->errors), restarts,
	       (unsigned long long)atomic_load(&books->scribbles));
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	struct options o;
	unsigned int n, kinds;

	parse(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	books = mmap(NULL, sizeof(*books), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (books == MAP_FAILED)
		return 2;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGQUIT, on_sigquit);
	printf("libfuzz: seed %#llx, %u workers, %u s per phase, %s (rerun: libfuzz --seed %#llx --seconds %u --workers %u%s)\n",
	       (unsigned long long)o.seed, o.workers, o.seconds,
	       o.kernel ? "a kernel region" : "plain shared memory, no kernel",
	       (unsigned long long)o.seed, o.seconds, o.workers, o.kernel ? " --kernel" : "");
	if (o.clean)
		phase(&o, false);
	if (o.scribble)
		phase(&o, true);
	n = atomic_load(&books->nfindings);
	kinds = atomic_load(&books->nkinds);
	printf("libfuzz: %u findings of %u kinds (seed %#llx)\n", n, kinds,
	       (unsigned long long)o.seed);
	for (unsigned int i = 0; i < kinds && i < MAX_FINDINGS; i++)
		printf("  %ux %s\n", atomic_load(&books->finding_count[i]), books->findings[i]);
	return n ? 1 : 0;
}
