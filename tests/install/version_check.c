// SPDX-License-Identifier: GPL-2.0
/*
 * Built against an installed tree with pkg-config only: the headers and
 * the library agree on the version, and a call works without the module
 * (syncmem_strerror needs no kernel).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/syncmem.h>
#include <syncmem.h>

#if !SYNCMEM_VERSION_AT_LEAST(1, 0)
#error "syncmem headers older than 1.0"
#endif

int main(void)
{
	if (strcmp(syncmem_version(), SYNCMEM_VERSION)) {
		fprintf(stderr, "library %s, headers %s\n", syncmem_version(), SYNCMEM_VERSION);
		return 1;
	}
	if (SYNCMEM_ABI_VERSION < 1 || !*syncmem_strerror(-EOWNERDEAD))
		return 1;
	printf("%s\n", syncmem_version());
	return 0;
}
