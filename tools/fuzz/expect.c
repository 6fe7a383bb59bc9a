// SPDX-License-Identifier: GPL-2.0
/*
 * What each call may return, as include/uapi/linux/syncmem.h and
 * Documentation/syncmem/uapi.rst document it. A result outside these sets
 * is a finding: either the module or the documentation is wrong.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

struct expect {
	const char *name;
	/* Largest documented non-negative result; -1: it never succeeds. */
	long max_result;
	/* Documented errnos, 0-terminated. */
	int errnos[14];
};

#define ANY_RESULT	0x7fffffffL	/* fds, counts, byte counts */

static const struct expect expects[OP_NR] = {
	[OP_VERSION]	    = { "VERSION", 0, { EFAULT } },
	/* EPERM: on a handle made by HANDLE_OPEN (so for STATS and REGION_LIST). */
	[OP_REGION_OPEN]    = { "REGION_OPEN", ANY_RESULT,
				{ EINVAL, ENAMETOOLONG, EFAULT, ENOENT, EEXIST, EACCES,
				  E2BIG, ENOSPC, ENOMEM, EDQUOT, EINTR, EMFILE, EPERM } },
	[OP_REGION_UNLINK]  = { "REGION_UNLINK", 0,
				{ EINVAL, ENAMETOOLONG, EFAULT, ENOENT, EPERM } },
	[OP_STATS]	    = { "STATS", 0, { EFAULT, EPERM } },
	[OP_SET_EVENTFD]    = { "SET_EVENTFD", 0, { EBADF, EINVAL, EFAULT } },
	[OP_WAIT_ASYNC]	    = { "WAIT_ASYNC", SYNCMEM_WAIT_QUEUED,
				{ EBADF, EINVAL, EEXIST, EAGAIN, EDQUOT, ENOMEM, EFAULT } },
	[OP_CANCEL]	    = { "CANCEL", 0, { ENOENT, EINVAL, EFAULT } },
	[OP_CANCEL_ALL]	    = { "CANCEL_ALL", ANY_RESULT, { EINVAL, EFAULT } },
	[OP_POST]	    = { "POST", 0, { EEXIST, EINVAL, EAGAIN, EDQUOT, ENOMEM, EFAULT } },
	[OP_ARM_ON_CLOSE]   = { "ARM_ON_CLOSE", 0,
				{ EBADF, EINVAL, EEXIST, EDQUOT, ENOMEM, EFAULT } },
	[OP_DISARM]	    = { "DISARM", 0, { ENOENT, EINVAL, EFAULT } },
	[OP_REGION_LIST]    = { "REGION_LIST", 0, { EFAULT, EINVAL, EPERM } },
	[OP_REGION_INFO]    = { "REGION_INFO", 0, { EFAULT } },
	[OP_WAIT]	    = { "WAIT", SYNCMEM_WAIT_HANDED_OFF, { EINVAL, EFAULT, ENOMEM } },
	[OP_NOTIFY]	    = { "NOTIFY", ANY_RESULT, { EINVAL, EFAULT, EBADF } },
	[OP_HANDOFF]	    = { "HANDOFF", SYNCMEM_HANDOFF_WOKE, { EINVAL, EFAULT, ENOMEM, EBADF } },
	[OP_HANDOFF_ADD]    = { "HANDOFF_ADD", SYNCMEM_HANDOFF_WOKE,
				{ EINVAL, EFAULT, ENOMEM, EBADF } },
	[OP_OWNER]	    = { "OWNER", 1, { EINVAL, EAGAIN, ENOMEM, EFAULT } },	/* QUERY: 0 or 1 */
	[OP_LOCK_WAIT]	    = { "LOCK_WAIT", SYNCMEM_WAIT_OWNER_DIED,
				{ EINVAL, EFAULT, ENOMEM, ENOTRECOVERABLE } },
	[OP_UNLOCK]	    = { "UNLOCK", SYNCMEM_UNLOCK_HANDED, { EINVAL, EFAULT, EBADF, EAGAIN } },
	[OP_HANDLE_OPEN]    = { "HANDLE_OPEN", ANY_RESULT, { EINVAL, EFAULT, EMFILE, ENFILE, ENOMEM } },
	[OP_WAITERS]	    = { "WAITERS", 0, { EFAULT, EINVAL, ENOMEM } },
	[OP_WHO]	    = { "WHO", 0, { EFAULT, EINVAL } },
	[OP_OBJECT_NAME]    = { "OBJECT_NAME", 0,
				{ EBADF, ENOSPC, ENOENT, EINVAL, EFAULT, ENOMEM } },
	[OP_OBJECTS]	    = { "OBJECTS", 0, { EFAULT, EINVAL, ENOMEM } },
	[OP_ARMED]	    = { "ARMED", 0, { EFAULT, EINVAL, ENOMEM } },
	[OP_UNKNOWN_IOCTL]  = { "unknown ioctl", -1, { ENOTTY } },
	[OP_READ]	    = { "read", ANY_RESULT, { EAGAIN, EINVAL, EFAULT } },
	/* poll() is never restarted after a handler (signal(7)): SIGUSR1 ends it. */
	[OP_POLL]	    = { "poll", 1, { EINTR } },
	[OP_MMAP]	    = { "mmap", 0, { EINVAL, EPERM, EACCES, ENOMEM } },
	[OP_MPROTECT]	    = { "mprotect", 0, { EACCES, EINVAL, ENOMEM } },
	[OP_MREMAP]	    = { "mremap", 0, { EFAULT, EINVAL, ENOMEM } },
	/* open() and read() of /proc/self/fdinfo/N of an fd that stays open never fail. */
	[OP_FDINFO]	    = { "fdinfo", ANY_RESULT, { 0 } },
	/*
	 * A closed or reused fd: EBADF, or EOPNOTSUPP for a file of another
	 * kind. LOCK: EOWNERDEAD (held), ETIMEDOUT, ENOTRECOVERABLE, EUCLEAN.
	 */
	[OP_URING_CMD]	    = { "uring command", SYNCMEM_WAIT_HANDED_OFF,
				{ EINVAL, ECANCELED, ENOENT, EBADF, EOPNOTSUPP, EDQUOT, ENOMEM,
				  EOWNERDEAD, ETIMEDOUT, ENOTRECOVERABLE, EUCLEAN } },
	/* ECANCELED: issued from io-wq (IOSQE_ASYNC) as the ring or its thread ended. */
	[OP_URING_NOTIFY]   = { "uring NOTIFY", ANY_RESULT,
				{ EINVAL, EBADF, EOPNOTSUPP, ECANCELED } },
};

const char *op_name(enum op op)
{
	return op < OP_NR ? expects[op].name : "?";
}

static bool errno_listed(enum op op, int err)
{
	for (const int *e = expects[op].errnos; *e; e++)
		if (*e == err)
			return true;
	return false;
}

bool expect_documented(enum op op, long ret)
{
	if (op >= OP_NR)
		return false;
	if (ret >= 0)
		return ret <= expects[op].max_result;
	/* REGION_LIST is new in ABI 2: -ENOTTY until the module has it. */
	if (op == OP_REGION_LIST && ret == -ENOTTY && !shared->abi2_checks)
		return true;
	/* So are the introspection calls, without SYNCMEM_FEAT_INTROSPECT. */
	if (op >= OP_WAITERS && op <= OP_ARMED && ret == -ENOTTY && !shared->introspect)
		return true;
	return errno_listed(op, (int)-ret);
}

void expect_describe(enum op op, char *buf, size_t len)
{
	size_t n;

	if (expects[op].max_result < 0)
		n = snprintf(buf, len, "no success;");
	else if (expects[op].max_result == ANY_RESULT)
		n = snprintf(buf, len, ">= 0;");
	else
		n = snprintf(buf, len, "0..%ld;", expects[op].max_result);
	for (const int *e = expects[op].errnos; *e && n < len; e++)
		n += snprintf(buf + n, len - n, " -%s", strerrorname_np(*e));
}
