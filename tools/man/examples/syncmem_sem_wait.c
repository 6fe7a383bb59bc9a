/* A semaphore of 2 units lets at most 2 of 4 workers in at a time. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

#define SC __ATOMIC_SEQ_CST

struct shared {
	struct syncmem_sem slots;
	uint32_t inside, most;		/* atomics */
};

int main(void)
{
	struct syncmem_region *r;
	int err = syncmem_open(NULL, 4096, 0, 0, &r);

	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	struct shared *s = syncmem_base(r);

	syncmem_sem_init(&s->slots, 2);

	for (int i = 0; i < 4; i++) {
		if (fork() > 0)
			continue;
		syncmem_sem_wait(r, &s->slots);		/* FIFO */
		uint32_t n = __atomic_add_fetch(&s->inside, 1, SC);
		uint32_t m = __atomic_load_n(&s->most, SC);

		while (n > m &&
		       !__atomic_compare_exchange_n(&s->most, &m, n, 0, SC, SC))
			;
		usleep(20000);
		__atomic_sub_fetch(&s->inside, 1, SC);
		syncmem_sem_post(r, &s->slots);
		return 0;
	}
	while (wait(NULL) > 0)
		;
	printf("at most %u inside at once, %u units left\n", s->most,
	       syncmem_sem_value(&s->slots));
	syncmem_close(r);
	return 0;
}
