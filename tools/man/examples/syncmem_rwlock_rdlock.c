/* Readers never see a half-written pair; the writer waits for them. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

struct config {
	struct syncmem_rwlock rw;	/* zero: unlocked */
	long low, high;			/* high == low + 1, guarded by rw */
};

int main(void)
{
	struct syncmem_region *r;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct config *c = syncmem_base(r);

	c->high = 1;
	if (fork() == 0) {		/* the writer */
		for (int i = 0; i < 1000; i++) {
			syncmem_rwlock_wrlock(r, &c->rw);
			c->low++;
			c->high++;
			syncmem_rwlock_unlock(r, &c->rw);
		}
		return 0;
	}
	int torn = 0;

	for (int i = 0; i < 1000; i++) {
		syncmem_rwlock_rdlock(r, &c->rw);
		torn += c->high != c->low + 1;
		syncmem_rwlock_unlock(r, &c->rw);
	}
	wait(NULL);
	printf("torn reads: %d, low = %ld\n", torn, c->low);
	syncmem_close(r);
	return 0;
}
