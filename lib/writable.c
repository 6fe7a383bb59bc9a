// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Is a word of shared memory writable by this process? Calls that take no
 * region (a pool's alloc and free, building a pool or a key table) learn it
 * once, so that memory mapped read-only answers -EBADF instead of SIGSEGV.
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
