// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz: a structured fuzzer of the syncmem module, run in the guest.
 *
 *   fuzz [--seed N] [--seconds S] [--ops N] [--workers W] [--kill-ms M]
 *        [--unprivileged-every K]
 *
 * Runs W worker processes (several threads each, forking children, passing
 * fds, scribbling into regions, some as uid 65534) that issue every ioctl
 * of the uapi with mostly meaningful and sometimes invalid arguments, while
 * the supervisor SIGKILLs a random process every M ms on average (0: never)
 * and restarts workers. Stops after S seconds or N ioctls, whichever comes
 * first, then checks that STATS is back at its baseline. Prints the seed,
 * the results of every call by errno, and every finding; exits 1 on any
 * finding. Each thread's choices follow from the seed; the interleaving of
 * threads does not.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

struct shared *shared;

static void usage(void)
{
	fprintf(stderr, "usage: fuzz [--seed N] [--seconds S] [--ops N] [--workers W] "
			"[--kill-ms M] [--unprivileged-every K]\n");
	exit(2);
}

static uint64_t number(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (!*s || *end)
		usage();
	return v;
}

static void parse(int argc, char **argv, struct run_options *o)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "workers", required_argument, NULL, 'w' },
		{ "kill-ms", required_argument, NULL, 'k' },
		{ "unprivileged-every", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	struct timespec ts;
	int c;

	clock_gettime(CLOCK_REALTIME, &ts);
	*o = (struct run_options){
		.seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec,
		.seconds = 60, .workers = 4, .kill_ms = 500, .unprivileged_every = 3,
	};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o->seed = number(optarg); break;
		case 't': o->seconds = (unsigned int)number(optarg); break;
		case 'n': o->ops = number(optarg); break;
		case 'w': o->workers = (unsigned int)number(optarg); break;
		case 'k': o->kill_ms = (unsigned int)number(optarg); break;
		case 'u': o->unprivileged_every = (unsigned int)number(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || !o->workers || o->workers > 16 || (!o->seconds && !o->ops))
		usage();
}

static uint64_t module_param(const char *name, uint64_t fallback)
{
	char path[128];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/syncmem/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return fallback;
	if (fscanf(f, "%llu", &v) != 1)
		v = fallback;
	fclose(f);
	return v;
}

/* Shared memory, the supervisor's handle, the mailboxes; -1 on failure. */
static int setup(void)
{
	struct rlimit nofile = { FD_LIMIT, FD_LIMIT };
	struct syncmem_version v;
	int handle;

	if (setrlimit(RLIMIT_NOFILE, &nofile))
		perror("fuzz: RLIMIT_NOFILE (fds above the table's may fail)");
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (shared == MAP_FAILED) {
		perror("fuzz: mmap");
		return -1;
	}
	handle = fd_move_above(open("/dev/syncmem", O_RDWR | O_CLOEXEC), INFRA_FD_BASE);
	if (handle < 0 || xioctl(handle, SYNCMEM_IOC_VERSION, &v)) {
		perror("fuzz: /dev/syncmem");
		return -1;
	}
	/* REGION_LIST is the last part of ABI 2 to land: with it, check all of ABI 2. */
	shared->abi2_checks = v.abi_version == 2 && (v.features & SYNCMEM_FEAT_REGION_LIST);
	shared->introspect = v.features & SYNCMEM_FEAT_INTROSPECT;
	shared->fdinfo = access("/proc/self/fdinfo", R_OK | X_OK) == 0;
	shared->max_region_size = v.max_region_size;
	shared->max_async_waits = module_param("max_async_waits", 1u << 17);
	for (int i = 0; i < 4; i++) {
		int fds[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds)) {
			perror("fuzz: socketpair");
			return -1;
		}
		shared->mailbox[i][0] = fd_move_above(fds[0], INFRA_FD_BASE);
		shared->mailbox[i][1] = fd_move_above(fds[1], INFRA_FD_BASE);
	}
	return handle;
}

static void report_results(void)
{
	printf("results per call (value or errno: count):\n");
	for (int op = 0; op < OP_NR; op++) {
		uint64_t total = 0;
		char line[1024];
		size_t n = 0;

		for (int slot = 0; slot < RESULT_SLOTS; slot++) {
			uint64_t c = atomic_load(&shared->results[op][slot]);
			char name[32];

			if (!c)
				continue;
			total += c;
			if (slot < 5)
				snprintf(name, sizeof(name), "%d", slot);
			else if (slot == 5)
				snprintf(name, sizeof(name), ">=5");
			else
				result_text(-(long)(slot - 5), name, sizeof(name));
			n += snprintf(line + n, sizeof(line) - n, " %s:%llu", name,
				      (unsigned long long)c);
			if (n >= sizeof(line))
				n = sizeof(line) - 1;
		}
		printf("  %-14s %9llu%s", op_name(op), (unsigned long long)total, total ? line : "");
		if (atomic_load(&shared->raced[op]))
			printf(" (fd changed under %llu)",
			       (unsigned long long)atomic_load(&shared->raced[op]));
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	struct run_options o;
	struct baseline before;
	unsigned int nfindings, kinds;
	uint64_t ioctls;
	double secs;
	int handle;

	parse(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	handle = setup();
	if (handle < 0)
		return 2;
	shared->master_seed = o.seed;
	printf("fuzz: seed %#llx (rerun: fuzz --seed %#llx --seconds %u --ops %llu --workers %u --kill-ms %u --unprivileged-every %u)\n",
	       (unsigned long long)o.seed, (unsigned long long)o.seed, o.seconds,
	       (unsigned long long)o.ops, o.workers, o.kill_ms, o.unprivileged_every);
	printf("fuzz: ABI 2 checks %s\n", shared->abi2_checks ? "on" :
	       "off (the module does not report SYNCMEM_FEAT_REGION_LIST yet)");
	printf("fuzz: introspection checks %s, fdinfo %s\n", shared->introspect ? "on" :
	       "off (the module does not report SYNCMEM_FEAT_INTROSPECT)",
	       shared->fdinfo ? "read" : "not read (no /proc/self/fdinfo)");
	if (!baseline_take(handle, &before)) {
		fprintf(stderr, "fuzz: cannot read STATS\n");
		return 2;
	}
	signals_init();
	secs = supervise(&o);

	for (int i = 0; i < 4; i++) {
		close(shared->mailbox[i][0]);	/* fds in flight go with them */
		close(shared->mailbox[i][1]);
	}
	baseline_unlink_names(handle);
	baseline_check(handle, &before);

	ioctls = atomic_load(&shared->ioctls);
	report_results();
	printf("fuzz: %llu ioctls in %.1f s (%.0f/s); %llu restarts, %llu SIGKILLs, %llu forks, "
	       "%llu fd passes, %llu signals handled, %llu IPC namespaces, %llu ledger checks, "
	       "%llu words scribbled, %llu collisions (%llu more one side after the other)\n",
	       (unsigned long long)ioctls, secs, secs > 0 ? ioctls / secs : 0.0,
	       (unsigned long long)shared->restarts, (unsigned long long)shared->kills,
	       (unsigned long long)shared->forks, (unsigned long long)shared->fd_passes,
	       (unsigned long long)shared->signals, (unsigned long long)shared->namespaces,
	       (unsigned long long)shared->ledger_checks, (unsigned long long)shared->scribbles,
	       (unsigned long long)shared->collisions, (unsigned long long)shared->collisions_alone);
	nfindings = atomic_load(&shared->nfindings);
	kinds = atomic_load(&shared->nkinds);
	printf("fuzz: %u findings of %u kinds (seed %#llx)\n", nfindings, kinds,
	       (unsigned long long)o.seed);
	for (unsigned int i = 0; i < kinds && i < MAX_FINDINGS; i++)
		printf("  %ux %s\n", atomic_load(&shared->finding_count[i]), shared->findings[i]);
	if (kinds > MAX_FINDINGS)
		printf("  ... and %u more kinds\n", kinds - MAX_FINDINGS);
	return nfindings ? 1 : 0;
}
