/* Take a lock as a command of the program's own io_uring. */
#include <errno.h>
#include <stdio.h>
#include <liburing.h>
#include <syncmem.h>

int main(void)
{
	struct syncmem_region *r;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (!err)
		err = io_uring_queue_init(8, &ring, 0);
	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct syncmem_lock *l = syncmem_base(r);	/* in the region */

	syncmem_prep_lock(io_uring_get_sqe(&ring), r, l, -1);
	io_uring_submit(&ring);
	io_uring_wait_cqe(&ring, &cqe);
	err = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	if (err == -EOWNERDEAD) {	/* held; its last holder died in it */
		/* ... repair what it guards, then: */
		syncmem_lock_consistent(r, l);
	} else if (err) {
		fprintf(stderr, "lock: %s\n", syncmem_strerror(err));
		return 1;
	}
	printf("held\n");		/* the critical section */
	syncmem_unlock(r, l);
	io_uring_queue_exit(&ring);
	syncmem_close(r);
	return 0;
}
