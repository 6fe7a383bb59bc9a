/* Queue a lock request on an event loop; an unlock hands it over. */
#include <stdio.h>
#include <syncmem.h>

static void locked(void *arg, int result)
{
	struct syncmem_region *r = arg;

	printf("callback: %s, lock held\n", syncmem_strerror(result));
	syncmem_unlock(r, syncmem_base(r));
}

int main(void)
{
	struct syncmem_region *r;
	struct syncmem_loop *loop;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (err || (err = syncmem_loop_new(&loop))) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct syncmem_lock *l = syncmem_base(r);

	syncmem_lock(r, l);
	err = syncmem_lock_async(loop, r, l, locked, r);	/* queued */
	printf("lock_async: %d, %zu pending\n", err,
	       syncmem_loop_pending(loop));
	syncmem_unlock(r, l);		/* hands it to the queued waiter */
	syncmem_loop_run(loop);		/* runs locked() */
	syncmem_loop_free(loop);
	syncmem_close(r);
	return 0;
}
