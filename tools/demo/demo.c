// SPDX-License-Identifier: GPL-2.0
/*
 * The syncmem demo: two processes share a named region and see each
 * other's writes. Later features extend it.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syncmem.h"

#define REGION_NAME "syncmem-demo"

struct demo_page {
	_Atomic uint32_t stage;		/* 0 start, 1 parent wrote, 2 child replied */
	char parent_msg[64];
	char child_msg[64];
};

/* Poll a word until it reaches @want (the wait/notify demo replaces this). */
static int await_stage(struct demo_page *pg, uint32_t want)
{
	for (int i = 0; i < 10000; i++) {
		if (atomic_load_explicit(&pg->stage, memory_order_acquire) == want)
			return 0;
		usleep(1000);
	}
	return -1;
}

static int child(void)
{
	struct syncmem_region *r;
	struct demo_page *pg;
	int err;

	err = syncmem_open(REGION_NAME, 0, 0, 0, &r);
	if (err) {
		fprintf(stderr, "child: open: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	if (await_stage(pg, 1))
		return 1;
	printf("child  (pid %d): opened \"%s\" by name and read: \"%s\"\n",
	       getpid(), REGION_NAME, pg->parent_msg);
	snprintf(pg->child_msg, sizeof(pg->child_msg), "hello back from pid %d", getpid());
	atomic_store_explicit(&pg->stage, 2, memory_order_release);
	syncmem_close(r);
	return 0;
}

static int demo_shared_region(void)
{
	struct syncmem_region *r;
	struct demo_page *pg;
	pid_t pid;
	int err, status;

	syncmem_unlink(REGION_NAME);
	err = syncmem_open(REGION_NAME, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r);
	if (err) {
		fprintf(stderr, "demo: cannot create region: %s\n", syncmem_strerror(err));
		return 1;
	}
	pg = syncmem_base(r);
	printf("parent (pid %d): created region \"%s\" (%zu bytes)\n", getpid(),
	       REGION_NAME, syncmem_size(r));
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child());
	snprintf(pg->parent_msg, sizeof(pg->parent_msg), "hello from pid %d", getpid());
	atomic_store_explicit(&pg->stage, 1, memory_order_release);
	err = await_stage(pg, 2);
	if (!err)
		printf("parent (pid %d): read the child's reply: \"%s\"\n", getpid(),
		       pg->child_msg);
	waitpid(pid, &status, 0);
	syncmem_unlink(REGION_NAME);
	syncmem_close(r);
	if (err || !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("shared region: FAILED\n");
		return 1;
	}
	printf("shared region: ok, both processes saw each other's writes\n");
	return 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return demo_shared_region();
}
