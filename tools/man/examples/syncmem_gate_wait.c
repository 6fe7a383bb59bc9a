/* A closed gate holds a worker back until the parent signals. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

int main(void)
{
	struct syncmem_region *r;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct syncmem_gate *start = syncmem_base(r);

	syncmem_gate_init(start, false);	/* closed */
	if (fork() == 0) {
		/* Blocks until a signal hands the gate over (1 s at most). */
		err = syncmem_gate_wait(r, start, 1000000000);
		printf("worker: through the gate: %s\n", syncmem_strerror(err));
		return err ? 1 : 0;
	}
	usleep(100000);			/* the worker queues meanwhile */
	printf("parent: signal handed the gate to %d waiter\n",
	       syncmem_gate_signal(r, start));
	wait(NULL);
	/* Nobody waits now: the signal opens the gate instead. */
	err = syncmem_gate_signal(r, start);
	printf("parent: signal again: %d, open\n", err);
	syncmem_close(r);
	return 0;
}
