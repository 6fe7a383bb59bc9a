// SPDX-License-Identifier: MIT
/*
 * A hang to practise on: two processes take two locks in opposite orders
 * and deadlock; a third waits behind them. While it hangs, look at it:
 *
 *   syncmemctl deadlocks
 *   syncmemctl locks deadlock-accounts
 *   syncmemctl waiters deadlock-ledger
 *
 * Every lock is taken with a timeout (SECONDS, 60 unless given as the
 * argument), so the hang ends by itself: each stuck process gives up with
 * -ETIMEDOUT, and the program exits 0 when it deadlocked as designed. The
 * two deadlines are a moment apart: the first to give up releases its first
 * lock, so the other may get its second lock before its own deadline.
 *
 *   cc -o deadlock deadlock.c $(pkg-config --cflags --libs syncmem)
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syncmem.h>

struct table {
	struct syncmem_lock lock;	/* one lock per region, named for tools */
	struct syncmem_gate holding;	/* opened once its lock is held */
};

static int64_t timeout_ns = 60LL * 1000000000;

static int open_table(const char *name, struct syncmem_region **r, struct table **t)
{
	int err = syncmem_open(name, 4096, SYNCMEM_CREATE, 0600, r);

	if (!err)
		*t = syncmem_base(*r);
	return err;
}

/* A worker's exit status: GOT_IT or GAVE_UP as designed, anything else a failure. */
enum { GOT_IT = 0, GAVE_UP = 3 };

/* Take the first lock, wait until the other worker holds the second, take it. */
static int worker(struct syncmem_region *r1, struct table *t1, struct syncmem_region *r2,
		  struct table *t2, const char *what)
{
	int err = syncmem_lock_timed(r1, &t1->lock, timeout_ns);

	if (err)
		return 2;
	syncmem_gate_signal(r1, &t1->holding);
	syncmem_gate_wait(r2, &t2->holding, timeout_ns);
	err = syncmem_lock_timed(r2, &t2->lock, timeout_ns);
	printf("%s (pid %d): second lock: %s\n", what, (int)getpid(),
	       err ? syncmem_strerror(err) : "taken");
	if (!err)
		syncmem_unlock(r2, &t2->lock);
	syncmem_unlock(r1, &t1->lock);
	return !err ? GOT_IT : err == -ETIMEDOUT ? GAVE_UP : 1;
}

int main(int argc, char **argv)
{
	struct syncmem_region *ra, *rl;
	struct table *a, *l;
	pid_t pid[3];
	int failed = 0, gave_up = 0;

	if (argc > 1)
		timeout_ns = atoll(argv[1]) * 1000000000LL;
	syncmem_unlink("deadlock-accounts");
	syncmem_unlink("deadlock-ledger");
	if (open_table("deadlock-accounts", &ra, &a) || open_table("deadlock-ledger", &rl, &l)) {
		fprintf(stderr, "deadlock: cannot create the regions (is syncmem loaded?)\n");
		return 1;
	}
	syncmem_lock_init(&a->lock, 0);
	syncmem_lock_init(&l->lock, 0);
	syncmem_gate_init(&a->holding, false);
	syncmem_gate_init(&l->holding, false);
	syncmem_name_object(ra, &a->lock, sizeof(a->lock), SYNCMEM_OBJ_LOCK, "accounts");
	syncmem_name_object(rl, &l->lock, sizeof(l->lock), SYNCMEM_OBJ_LOCK, "ledger");

	setvbuf(stdout, NULL, _IOLBF, 0);
	pid[0] = fork();
	if (pid[0] == 0)
		_exit(worker(ra, a, rl, l, "transfer"));	/* accounts, then ledger */
	pid[1] = fork();
	if (pid[1] == 0)
		_exit(worker(rl, l, ra, a, "audit"));		/* ledger, then accounts */
	/* Once both wait for their second lock, a bystander queues behind. */
	while (syncmem_waiters(ra, &a->lock.word, NULL, 0) +
	       syncmem_waiters(rl, &l->lock.word, NULL, 0) < 2)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	pid[2] = fork();
	if (pid[2] == 0) {
		int err = syncmem_lock_timed(ra, &a->lock, 2 * timeout_ns);

		printf("report (pid %d): accounts: %s\n", (int)getpid(),
		       err ? syncmem_strerror(err) : "taken");
		if (!err)
			syncmem_unlock(ra, &a->lock);
		_exit(err ? 1 : 0);
	}
	printf("transfer (pid %d) and audit (pid %d) deadlock, report (pid %d) waits: "
	       "try syncmemctl deadlocks\n", (int)pid[0], (int)pid[1], (int)pid[2]);
	for (int i = 0; i < 3; i++) {
		int status;

		waitpid(pid[i], &status, 0);
		if (i < 2 && WIFEXITED(status) && WEXITSTATUS(status) == GAVE_UP)
			gave_up++;
		else
			failed |= !WIFEXITED(status) || WEXITSTATUS(status) != GOT_IT;
	}
	failed |= !gave_up;	/* no deadlock at all */
	syncmem_unlink("deadlock-accounts");
	syncmem_unlink("deadlock-ledger");
	syncmem_close(ra);
	syncmem_close(rl);
	if (failed)
		printf("deadlock: did not go as designed\n");
	else
		printf("deadlock: %s gave up after its timeout, then the bystander got the lock\n",
		       gave_up == 2 ? "each worker" : "one worker (and the other got its lock)");
	return failed;
}
