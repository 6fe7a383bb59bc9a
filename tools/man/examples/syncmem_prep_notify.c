/* Wake a peer and wait for its answer in one io_uring_enter(). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <liburing.h>
#include <syncmem.h>

struct shared {			/* in the region: zeroed */
	uint32_t request;	/* the parent sets it; the child waits */
	uint32_t reply;		/* the child sets it; the parent waits */
};

int main(void)
{
	struct syncmem_region *r;
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct shared *s = syncmem_base(r);
	pid_t child = fork();

	if (child == 0) {
		while (!__atomic_load_n(&s->request, __ATOMIC_ACQUIRE))
			syncmem_wait32(r, &s->request, 0, SYNCMEM_FOREVER);
		__atomic_store_n(&s->reply, 42, __ATOMIC_RELEASE);
		syncmem_notify(r, &s->reply, 1);
		return 0;
	}
	err = io_uring_queue_init(8, &ring, 0);
	if (err) {
		fprintf(stderr, "io_uring: %s\n", syncmem_strerror(err));
		return 1;
	}
	__atomic_store_n(&s->request, 1, __ATOMIC_RELEASE);
	sqe = io_uring_get_sqe(&ring);		/* wake the child... */
	syncmem_prep_notify(sqe, r, &s->request, 1);
	io_uring_sqe_set_data64(sqe, 1);
	/* No CQE unless it fails. */
	io_uring_sqe_set_flags(sqe, IOSQE_CQE_SKIP_SUCCESS);
	sqe = io_uring_get_sqe(&ring);		/* ...and wait for its reply */
	syncmem_prep_wait32(sqe, r, &s->reply, 0, SYNCMEM_FOREVER);
	io_uring_sqe_set_data64(sqe, 2);
	io_uring_submit_and_wait(&ring, 1);	/* one system call for both */
	io_uring_wait_cqe(&ring, &cqe);
	if (cqe->user_data != 2 || cqe->res < 0) {
		fprintf(stderr, "%s: %s\n",
			cqe->user_data == 1 ? "notify" : "wait",
			syncmem_strerror(cqe->res));
		return 1;
	}
	io_uring_cqe_seen(&ring, cqe);	/* SYNCMEM_OK, or NOT_EQUAL: replied */
	printf("reply = %u\n", __atomic_load_n(&s->reply, __ATOMIC_ACQUIRE));
	waitpid(child, NULL, 0);
	io_uring_queue_exit(&ring);
	syncmem_close(r);
	return 0;
}
