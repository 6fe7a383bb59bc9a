/* A sequence word: the child bumps it; the parent sleeps in between. */
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
	uint32_t *seq = syncmem_base(r);

	if (fork() == 0) {
		for (int i = 0; i < 3; i++) {
			usleep(50000);
			__atomic_add_fetch(seq, 1, __ATOMIC_RELEASE);
			syncmem_notify(r, seq, SYNCMEM_ALL);
		}
		return 0;
	}
	uint32_t seen;

	/* Load, then wait while the word still holds what was loaded: a
	 * bump between the two makes the wait return SYNCMEM_NOT_EQUAL. */
	while ((seen = __atomic_load_n(seq, __ATOMIC_ACQUIRE)) < 3) {
		err = syncmem_wait32(r, seq, seen, 1000000000);
		if (err < 0 || err == SYNCMEM_TIMED_OUT) {
			fprintf(stderr, "wait: %d\n", err);
			return 1;
		}
	}
	printf("seq = %u\n", seen);
	wait(NULL);
	syncmem_close(r);
	return 0;
}
