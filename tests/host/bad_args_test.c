// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input that needs no kernel: every function of <syncmem.h> with each
 * pointer argument NULL (selftests/bad_args.h; the rows that need a real
 * event loop run in the VM), the init functions on memory this process
 * may not write, objects outside a region too small for them, and the
 * text syncmem_strerror() gives for each of these mistakes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "hostile.h"
#include "bad_args.h"
#include "syncmem.h"

FIXTURE(bad_args) {
	struct guarded g;
	struct syncmem_region r;
	struct bad_args_ctx c;
};

FIXTURE_SETUP(bad_args)
{
	setenv("SYNCMEM_DEVICE", "/nonexistent/syncmem", 1);
	ASSERT_EQ(0, guarded_map((bad_args_size() + 4095) & ~(size_t)4095, &self->g));
	ASSERT_EQ(0, stand_in_region(&self->r, self->g.mem, self->g.len, false));
	self->c = (struct bad_args_ctx){ .r = &self->r };
	ASSERT_EQ(0, bad_args_build(&self->c));
}

FIXTURE_TEARDOWN(bad_args)
{
	syncmem_pool_detach(self->c.pool);
	close(self->r.fd);
	guarded_unmap(&self->g);
	unsetenv("SYNCMEM_DEVICE");
}

/* Every row but those that need a loop: the documented result, no crash. */
TEST_F(bad_args, null_pointer_arguments_give_their_documented_result)
{
	unsigned int ran, failed = bad_args_run(&self->c, false, &ran);

	TH_LOG("%u of %zu rows run here, %u failed", ran, BAD_ARGS_N, failed);
	EXPECT_LT(140, ran);
	EXPECT_EQ(0, failed);
}

/*
 * Memory this process may not write (mapped read-only, or not at all): the
 * void inits leave it alone, the others return -EBADF; never SIGSEGV.
 */
static int init_on(void *mem)
{
	struct bad_args_objects *o = mem;
	struct syncmem_pool *p = NULL;
	struct syncmem_keyed *k = NULL;
	size_t pool_len = syncmem_pool_footprint(64, BAD_ARGS_POOL_BLOCKS);
	size_t table_len = syncmem_keyed_footprint(BAD_ARGS_ENTRIES);

	syncmem_lock_init(&o->lock, SYNCMEM_LOCK_FAIR);
	syncmem_gate_init(&o->gate, false);
	syncmem_rwlock_init(&o->rw);
	/* Misaligned, across a page boundary of the mapping. */
	syncmem_lock_init((struct syncmem_lock *)((char *)mem + 4096 - 30), 0);
	if (syncmem_gate_init_flags(&o->gate, false, SYNCMEM_GATE_HELD) != -EBADF)
		return 1;
	if (syncmem_sem_init(&o->sem, 3) != -EBADF)
		return 2;
	if (syncmem_pool_init(o->tables, pool_len, 64, BAD_ARGS_POOL_BLOCKS, &p) != -EBADF)
		return 3;
	if (syncmem_keyed_init(o->tables, table_len, BAD_ARGS_ENTRIES, &k) != -EBADF)
		return 4;
	return 0;
}

static int init_on_victim(void *arg)
{
	return init_on(arg);
}

TEST(inits_on_memory_mapped_read_only_do_not_fault)
{
	size_t len = 8192;
	char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *copy = malloc(len);

	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_NE(NULL, copy);
	/* Something the inits would overwrite. */
	memset(mem, 0x5a, len);
	memcpy(copy, mem, len);
	ASSERT_EQ(0, mprotect(mem, len, PROT_READ));
	EXPECT_EQ(0, run_victim(init_on_victim, mem, 10));
	EXPECT_EQ(0, memcmp(copy, mem, len));
	/* Not mapped at all: the same answers. */
	ASSERT_EQ(0, mprotect(mem, len, PROT_NONE));
	EXPECT_EQ(0, run_victim(init_on_victim, mem, 10));
	ASSERT_EQ(0, mprotect(mem, len, PROT_READ));
	EXPECT_EQ(0, memcmp(copy, mem, len));
	/* Writable again: they write. */
	ASSERT_EQ(0, mprotect(mem, len, PROT_READ | PROT_WRITE));
	EXPECT_EQ(0, syncmem_sem_init(&((struct bad_args_objects *)mem)->sem, 3));
	EXPECT_EQ(3, syncmem_sem_value(&((struct bad_args_objects *)mem)->sem));
	syncmem_lock_init(&((struct bad_args_objects *)mem)->lock, 0);
	EXPECT_EQ(0, ((struct bad_args_objects *)mem)->lock.word);
	free(copy);
	munmap(mem, len);
}

/*
 * An object that does not fit in the region (a region made too small, or
 * a pointer into another mapping) is -ERANGE, not the -EINVAL of a NULL or
 * misaligned one; words of the Atomics-style calls stay -EINVAL (api.md).
 */
TEST(objects_outside_the_region_are_erange)
{
	struct syncmem_region small;
	struct guarded g;
	struct bad_args_objects *o;
	struct syncmem_keyed *k;

	setenv("SYNCMEM_DEVICE", "/nonexistent/syncmem", 1);
	ASSERT_EQ(0, guarded_map(8192, &g));
	o = (struct bad_args_objects *)g.mem;
	syncmem_lock_init(&o->lock, 0);
	syncmem_gate_init(&o->gate, true);
	ASSERT_EQ(0, syncmem_sem_init(&o->sem, 1));
	syncmem_rwlock_init(&o->rw);
	ASSERT_EQ(0, syncmem_keyed_init(o->tables, syncmem_keyed_footprint(4), 4, &k));
	/* A region of 64 bytes: the lock fits, nothing after it does. */
	ASSERT_EQ(0, stand_in_region(&small, g.mem, 64, false));
	EXPECT_EQ(0, syncmem_trylock(&small, &o->lock));
	EXPECT_EQ(0, syncmem_unlock(&small, &o->lock));
	EXPECT_EQ(-ERANGE, syncmem_gate_wait(&small, &o->gate, 0));
	EXPECT_EQ(-ERANGE, syncmem_gate_signal(&small, &o->gate));
	EXPECT_EQ(-ERANGE, syncmem_sem_trywait(&small, &o->sem));
	EXPECT_EQ(-ERANGE, syncmem_sem_post(&small, &o->sem));
	EXPECT_EQ(-ERANGE, syncmem_rwlock_tryrdlock(&small, &o->rw));
	EXPECT_EQ(-ERANGE, syncmem_rwlock_trywrlock(&small, &o->rw));
	EXPECT_EQ(-ERANGE, syncmem_rwlock_unlock(&small, &o->rw));
	EXPECT_EQ(-ERANGE, syncmem_keyed_trylock(&small, k, "k", 1));
	EXPECT_EQ(-ERANGE, syncmem_keyed_held(&small, k));
	EXPECT_EQ(-ERANGE, syncmem_name_object(&small, &o->sem, sizeof(o->sem),
					       SYNCMEM_OBJ_SEM, "sem"));
	/* A lock after the region's end, and one before its start. */
	EXPECT_EQ(-ERANGE, syncmem_lock((&small), (struct syncmem_lock *)&o->gate));
	EXPECT_EQ(-ERANGE, syncmem_trylock(&small, (struct syncmem_lock *)&o->gate));
	EXPECT_EQ(-ERANGE, syncmem_unlock(&small, (struct syncmem_lock *)&o->gate));
	EXPECT_EQ(-ERANGE, syncmem_lock_consistent(&small, (struct syncmem_lock *)&o->gate));
	EXPECT_EQ(-ERANGE, syncmem_trylock(&small, (struct syncmem_lock *)(g.mem - 64)));
	/* A lock straddling the end. */
	EXPECT_EQ(-ERANGE, syncmem_trylock(&small, (struct syncmem_lock *)(g.mem + 8)));
	/* Misaligned inside the region: -EINVAL still, NULL too. */
	close(small.fd);
	ASSERT_EQ(0, stand_in_region(&small, g.mem, g.len, false));
	EXPECT_EQ(-EINVAL, syncmem_trylock(&small, (struct syncmem_lock *)(g.mem + 4)));
	EXPECT_EQ(-EINVAL, syncmem_sem_post(&small, (struct syncmem_sem *)(g.mem + 4)));
	EXPECT_EQ(-EINVAL, syncmem_rwlock_unlock(&small, (struct syncmem_rwlock *)(g.mem + 4)));
	EXPECT_EQ(-EINVAL, syncmem_trylock(&small, NULL));
	/* Words of wait and notify: -EINVAL whether outside or misaligned. */
	EXPECT_EQ(-EINVAL, syncmem_wait32(&small, (uint32_t *)(g.mem + g.len), 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_notify(&small, (uint32_t *)(g.mem - 4), 1));
	close(small.fd);
	guarded_unmap(&g);
	unsetenv("SYNCMEM_DEVICE");
}

/* The text of each common mistake's errno names what to fix. */
TEST(strerror_names_the_likely_cause)
{
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ERANGE), "not wholly inside the region"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ERANGE), "syncmem_size()"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EPROTO), "never initialised"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EPROTO), "ABI"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EINVAL), "size other than 0 or the region's own size"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EBADF), "SYNCMEM_RDONLY"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ENODEV), "modprobe syncmem"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ENODEV), "syncmem_loop_new_region()"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EACCES), "mode bits"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EACCES), "syncmem_loop_new_region()"));
}

/* Attaching memory that holds no pool (or table): -EPROTO at once, whose text says so. */
TEST(attaching_zeroed_memory_is_eproto)
{
	struct guarded g;
	struct syncmem_pool *p = (void *)1;
	struct syncmem_keyed *k = (void *)1;

	setenv("SYNCMEM_DEVICE", "/nonexistent/syncmem", 1);
	ASSERT_EQ(0, guarded_map(8192, &g));
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(g.mem, g.len, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(-EPROTO, syncmem_keyed_attach(g.mem, g.len, &k));
	EXPECT_EQ(NULL, k);
	guarded_unmap(&g);
	unsetenv("SYNCMEM_DEVICE");
}

TEST_HARNESS_MAIN
