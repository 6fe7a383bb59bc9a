/* A pool in a region: a child fills a block, the parent reads it. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

int main(void)
{
	struct syncmem_region *r;
	struct syncmem_pool *p;
	size_t need = syncmem_pool_footprint(256, 16);
	int err = syncmem_open(NULL, need + 64, 0, 0, &r);

	if (!err)
		err = syncmem_pool_init(syncmem_base(r), need, 256, 16, &p);
	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	uint32_t *msg = (uint32_t *)((char *)syncmem_base(r) + need);

	if (fork() == 0) {		/* the child inherits the pool handle */
		uint32_t off = syncmem_pool_alloc(p);

		strcpy(syncmem_pool_ptr(p, off), "hello from the child");
		__atomic_store_n(msg, off, __ATOMIC_RELEASE);
		syncmem_notify(r, msg, 1);
		return 0;		/* the block stays allocated: 15 free */
	}
	syncmem_wait32(r, msg, 0, SYNCMEM_FOREVER);
	uint32_t off = __atomic_load_n(msg, __ATOMIC_ACQUIRE);

	printf("%s\n", (char *)syncmem_pool_ptr(p, off));
	wait(NULL);
	printf("free blocks: %u\n", syncmem_pool_free_count(p));
	/* The block the dead child held is freed: */
	printf("reclaimed: %d\n", syncmem_pool_reclaim(p));
	syncmem_pool_detach(p);
	syncmem_close(r);
	return 0;
}
