// SPDX-License-Identifier: MIT
/*
 * An event-loop server that takes a lock shared with another process
 * without ever blocking its loop. A writer process updates a record under
 * the lock, holding it for a while each time; the server answers requests
 * from its loop, each one taking the lock asynchronously to read a
 * consistent copy of the record. While it waits for the lock, the loop
 * keeps turning (counted as idle ticks here; a real server would serve
 * other clients).
 *
 *   cc -o async_server async_server.c $(pkg-config --cflags --libs syncmem)
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syncmem.h>

#define UPDATES		50
#define REQUESTS	50

struct shared {
	struct syncmem_lock lock;
	uint64_t a, b;			/* the record: always a == b under the lock */
	uint32_t writer_done;
};

struct server {
	struct syncmem_region *r;
	struct shared *sh;
	int answered, torn;
};

static void writer(struct syncmem_region *r, struct shared *sh)
{
	struct timespec hold = { 0, 2 * 1000 * 1000 };

	for (int i = 1; i <= UPDATES; i++) {
		syncmem_lock(r, &sh->lock);
		sh->a = i;
		nanosleep(&hold, NULL);		/* a slow update: the record is torn now */
		sh->b = i;
		syncmem_unlock(r, &sh->lock);
	}
	__atomic_store_n(&sh->writer_done, 1, __ATOMIC_RELEASE);
}

/* Runs from the loop with the lock held (or with an error). */
static void answer(void *arg, int result)
{
	struct server *s = arg;

	if (result < 0 && result != -EOWNERDEAD) {
		fprintf(stderr, "async_server: lock: %s\n", syncmem_strerror(result));
		return;
	}
	s->torn += s->sh->a != s->sh->b;
	s->answered++;
	syncmem_unlock(s->r, &s->sh->lock);
}

int main(void)
{
	struct server s = { 0 };
	struct syncmem_loop *loop;
	long ticks = 0;
	pid_t pid;
	int st, err;

	if ((err = syncmem_open(NULL, sizeof(struct shared), 0, 0, &s.r)) < 0 ||
	    (err = syncmem_loop_new(&loop)) < 0) {
		fprintf(stderr, "async_server: %s\n", syncmem_strerror(err));
		return 1;
	}
	s.sh = syncmem_base(s.r);
	syncmem_lock_init(&s.sh->lock, 0);
	pid = fork();
	if (pid == 0) {
		writer(s.r, s.sh);
		_exit(0);
	}
	/* Serve while the writer is at work. */
	while (!__atomic_load_n(&s.sh->a, __ATOMIC_RELAXED))
		nanosleep(&(struct timespec){ 0, 100 * 1000 }, NULL);
	for (int i = 0; i < REQUESTS; i++) {
		/* A request came in: ask for the lock, go on with the loop. */
		err = syncmem_lock_async(loop, s.r, &s.sh->lock, answer, &s);
		if (err < 0) {
			fprintf(stderr, "async_server: lock_async: %s\n", syncmem_strerror(err));
			return 1;
		}
		while (syncmem_loop_pending(loop)) {
			err = syncmem_loop_run_once(loop, 1000 * 1000);	/* 1 ms */
			if (err < 0)
				return 1;
			ticks++;
		}
	}
	waitpid(pid, &st, 0);
	printf("async_server: %d requests answered, %d saw a torn record; %ld turns of the "
	       "loop ran while the writer held the lock\n", s.answered, s.torn,
	       ticks - s.answered);
	syncmem_loop_free(loop);
	syncmem_close(s.r);
	return s.answered != REQUESTS || s.torn || !WIFEXITED(st) || WEXITSTATUS(st);
}
