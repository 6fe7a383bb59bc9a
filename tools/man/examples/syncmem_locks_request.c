/* Web Locks across processes: a shared hold, then an exclusive one. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

int main(void)
{
	struct syncmem_region *r;
	struct syncmem_locks *m;
	struct syncmem_held *h;
	size_t need = syncmem_locks_footprint(4, 16);
	int err = syncmem_open(NULL, need, 0, 0, &r);

	if (!err)
		err = syncmem_locks_init(r, syncmem_base(r), need, &m);
	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	syncmem_locks_request(m, "db", 2, SYNCMEM_LOCKS_SHARED, -1, &h);
	if (fork() == 0) {
		struct syncmem_held *mine;

		/* Exclusive: waits for the parent's shared hold. */
		syncmem_locks_attach(r, syncmem_base(r), &m);
		err = syncmem_locks_request(m, "db", 2, 0, -1, &mine);
		printf("child: exclusive, %s\n", syncmem_strerror(err));
		syncmem_locks_release(mine);
		return 0;
	}
	sleep(1);
	printf("parent: releasing the shared hold\n");
	syncmem_locks_release(h);
	wait(NULL);
	syncmem_locks_detach(m);
	syncmem_close(r);
	return 0;
}
