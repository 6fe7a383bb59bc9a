/*
 * Say which path a loop takes; SYNCMEM_LOOP=eventfd forces the fallback.
 */
#include <stdio.h>
#include <syncmem.h>

int main(void)
{
	struct syncmem_loop *loop;
	int err = syncmem_loop_new(&loop);

	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	printf("%s path\n", syncmem_loop_path(loop) == SYNCMEM_LOOP_URING ?
	       "io_uring" : "eventfd");
	syncmem_loop_free(loop);
	return 0;
}
