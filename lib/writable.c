// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Is a word of shared memory writable by this process? Calls that take no
 * region (the init functions, a pool's alloc and free, building a pool or a
 * key table) ask before they write, so that memory mapped read-only answers
 * -EBADF (or, for a void init, is left alone) instead of SIGSEGV.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

int syncmem__writable(uint32_t *word)
{
	uint32_t nobody_waits = 0;
	long ret;

	/*
	 * FUTEX_WAKE_OP adds 0 to *word atomically (a locked read-modify-write
	 * that changes nothing, whatever other processes do meanwhile) and
	 * wakes nobody; the kernel answers EFAULT, not a signal, when the page
	 * cannot be written.
	 */
	ret = syscall(SYS_futex, &nobody_waits, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 0,
		      (void *)0, word, FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));
	return ret < 0 && errno == EFAULT ? 0 : 1;
}

int syncmem__memory_writable(const void *obj, size_t size)
{
	uintptr_t first = (uintptr_t)obj & ~(uintptr_t)3;
	uintptr_t last = ((uintptr_t)obj + (size ? size - 1 : 0)) & ~(uintptr_t)3;

	/*
	 * Protection is per page and an object smaller than a page spans at
	 * most two: its first and its last word say for all of it.
	 */
	if (!syncmem__writable((uint32_t *)first))
		return 0;
	return last == first || syncmem__writable((uint32_t *)last);
}
