/* A robust lock: a child dies holding it; the parent repairs. */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

struct account {		/* in the region */
	struct syncmem_lock lock;
	long balance;		/* guarded by lock */
	long pending;		/* a half-done transfer, guarded by lock */
};

int main(void)
{
	struct syncmem_region *r;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct account *a = syncmem_base(r);

	if (fork() == 0) {
		syncmem_lock(r, &a->lock);
		a->pending = 100;	/* then dies before moving it */
		_exit(0);
	}
	wait(NULL);
	err = syncmem_lock(r, &a->lock);
	if (err == -EOWNERDEAD) {	/* held, and the state is suspect */
		printf("previous holder died: rolling back %ld\n", a->pending);
		a->pending = 0;
		syncmem_lock_consistent(r, &a->lock);
	} else if (err) {
		fprintf(stderr, "lock: %s\n", syncmem_strerror(err));
		return 1;
	}
	a->balance += 10;
	syncmem_unlock(r, &a->lock);
	printf("balance %ld, trylock: %s\n", a->balance,
	       syncmem_strerror(syncmem_trylock(r, &a->lock)));
	syncmem_unlock(r, &a->lock);
	syncmem_close(r);
	return 0;
}
