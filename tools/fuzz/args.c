// SPDX-License-Identifier: GPL-2.0
/*
 * Choosing arguments: names that collide, offsets of words others use,
 * deadlines short enough to keep things moving, expected values that match
 * the word (so waits really queue), pointers that fault.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int fd_move_above(int fd, int base)
{
	int moved;

	if (fd < 0 || fd >= base)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, base);
	close(fd);
	return moved;
}

/* [read-write page][no-access page][read-only page] */
static char *trap_pages;

void args_init(void)
{
	long page = sysconf(_SC_PAGESIZE);

	if (trap_pages)
		return;
	trap_pages = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (trap_pages == MAP_FAILED) {
		trap_pages = NULL;
		return;
	}
	mprotect(trap_pages + page, page, PROT_NONE);
	mprotect(trap_pages + 2 * page, page, PROT_READ);
}

void *bad_pointer(struct rng *r, bool output)
{
	long page = sysconf(_SC_PAGESIZE);

	switch (rng_below(r, output ? 6 : 5)) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)(1 + rng_below(r, 4095));
	case 2:
		return (void *)(uintptr_t)0xffff888000000000ull;
	case 3:
		return trap_pages ? trap_pages + page : NULL;
	case 4:	/* straddling: 4 readable bytes, then the no-access page */
		return trap_pages ? trap_pages + page - 4 : NULL;
	default:
		return trap_pages ? trap_pages + 2 * page : NULL;
	}
}

/* Names a run may create: the final clean-up unlinks each of them. */
static const char *const creatable[] = {
	"fuzz-0", "fuzz-1", "fuzz-2", "fuzz-3", "fuzz-4", "fuzz-5", "fuzz-6", "fuzz-7",
	"a/b", ".", "\xff\xfe\x01 name",
};
#define NORMAL_NAMES	8
static char longest[SYNCMEM_NAME_MAX + 1];	/* 255 x, then 256 with the NUL slot */

const char *pool_name(struct rng *r, uint32_t *len)
{
	static const char with_nul[] = "ab\0cd";

	if (!longest[0])
		memset(longest, 'x', sizeof(longest));
	if (rng_chance(r, 85, 100)) {
		const char *n = creatable[rng_below(r, NORMAL_NAMES)];

		*len = (uint32_t)strlen(n);
		return n;
	}
	switch (rng_below(r, 6)) {
	case 0:
		*len = SYNCMEM_NAME_MAX;	/* the longest valid name */
		return longest;
	case 1:
		*len = SYNCMEM_NAME_MAX + 1;	/* -ENAMETOOLONG */
		return longest;
	case 2:
		*len = sizeof(with_nul) - 1;	/* -EINVAL */
		return with_nul;
	case 3:
		*len = 0;			/* -EINVAL */
		return "fuzz-0";
	default: {
		const char *n = creatable[NORMAL_NAMES + rng_below(r, 3)];

		*len = (uint32_t)strlen(n);
		return n;
	}
	}
}

size_t pool_all_names(const char **names, uint32_t *lens, size_t max)
{
	size_t n = 0;

	if (!longest[0])
		memset(longest, 'x', sizeof(longest));
	for (size_t i = 0; i < sizeof(creatable) / sizeof(creatable[0]) && n < max; i++) {
		names[n] = creatable[i];
		lens[n++] = (uint32_t)strlen(creatable[i]);
	}
	if (n < max) {
		names[n] = longest;
		lens[n++] = SYNCMEM_NAME_MAX;
	}
	return n;
}

static const uint64_t hot[] = { 0, 8, 16, 24, 64, 128, 1024, 4088 };
#define NHOT (sizeof(hot) / sizeof(hot[0]))

uint64_t pick_offset(struct rng *r, uint64_t size, uint32_t width)
{
	uint64_t words = size / width;

	if (!words)
		return 0;	/* no word fits: the call will be -EINVAL */
	if (rng_chance(r, 75, 100)) {
		uint64_t off = hot[rng_below(r, NHOT)];

		if (off + width <= size)
			return off;
	}
	if (rng_chance(r, 1, 4))
		return (words - 1) * width;	/* the last word */
	return rng_below(r, words) * width;
}

uint64_t pick_deadline(struct rng *r, bool forever)
{
	uint64_t now = now_ns();
	unsigned int k = (unsigned int)rng_below(r, 100);

	if (k < 45)
		return now + rng_below(r, 2000000);		/* up to 2 ms */
	if (k < 65)
		return now + 2000000 + rng_below(r, 18000000);	/* up to 20 ms */
	if (k < 80)
		return now + rng_below(r, 200000);		/* up to 200 us */
	if (k < 90)
		return now > 1000000 ? now - rng_below(r, 1000000) : 0;	/* passed */
	if (k < 95)
		return rng_below(r, 2);				/* long passed */
	if (forever && k < 97)
		return SYNCMEM_NO_DEADLINE;
	return now + 20000000 + rng_below(r, 80000000);		/* up to 100 ms */
}

uint64_t pick_expected(struct rng *r, uint64_t rid, uint64_t off, uint32_t width)
{
	struct mapping *m = map_enter(r, rid, false);
	uint64_t v = 0;

	if (m) {
		if (off + width <= m->len) {
			char *p = (char *)m->addr + off;

			v = width == 4 ? atomic_load((_Atomic uint32_t *)p) :
					 atomic_load((_Atomic uint64_t *)p);
		}
		map_leave(m);
		if (rng_chance(r, 9, 10))
			return v;
	}
	if (rng_chance(r, 3, 4))
		return v;
	v = rng_below(r, 4);
	return width == 4 ? (uint32_t)v : v;
}
