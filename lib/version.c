// SPDX-License-Identifier: LGPL-2.1-or-later
/* The library's version, as built (the headers a program used may be older). */
#include "syncmem.h"

const char *syncmem_version(void)
{
	return SYNCMEM_VERSION;
}
