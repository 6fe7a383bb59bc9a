/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The version of syncmem: library, tools and module are released together
 * under one number. Included by syncmem.h, and by the module for modinfo.
 */
#ifndef SYNCMEM_VERSION_H
#define SYNCMEM_VERSION_H

#define SYNCMEM_VERSION_MAJOR	1
#define SYNCMEM_VERSION_MINOR	0
#define SYNCMEM_VERSION_PATCH	0

#define SYNCMEM_VERSION_STR__(a, b, c)	#a "." #b "." #c
#define SYNCMEM_VERSION_STR_(a, b, c)	SYNCMEM_VERSION_STR__(a, b, c)
/* "MAJOR.MINOR.PATCH" of the headers a program is built with. */
#define SYNCMEM_VERSION	SYNCMEM_VERSION_STR_(SYNCMEM_VERSION_MAJOR, \
						 SYNCMEM_VERSION_MINOR, \
						 SYNCMEM_VERSION_PATCH)

/* True when the headers are at least version @major.@minor. */
#define SYNCMEM_VERSION_AT_LEAST(major, minor)				\
	(SYNCMEM_VERSION_MAJOR > (major) ||				\
	 (SYNCMEM_VERSION_MAJOR == (major) && SYNCMEM_VERSION_MINOR >= (minor)))

#endif /* SYNCMEM_VERSION_H */
