// SPDX-License-Identifier: GPL-2.0
/* syncmemctl regions: the names of the IPC namespace, one line (or object) each. */
#define _GNU_SOURCE
#include <string.h>

#include "json.h"
#include "syncmemctl.h"

/* Named objects of the region behind @e, or -errno when it does not open read-only. */
static int count_objects(const struct syncmem_region_entry *e)
{
	char name[SYNCMEM_NAME_MAX + 1];
	size_t len = entry_name_len(e);
	struct syncmem_region *r;
	int n;

	memcpy(name, e->name, len);
	name[len] = '\0';
	n = syncmem_open(name, 0, SYNCMEM_RDONLY, 0, &r);
	if (n)
		return n;
	n = syncmem_objects(r, NULL, 0);
	syncmem_close(r);
	return n;
}

/*
 * A live count, or "-" (JSON null) for one of a region the caller may not
 * open: the kernel shows others only what ls -l shows of /dev/shm.
 */
static void print_count(uint64_t v, int width)
{
	if (v == SYNCMEM_COUNT_HIDDEN)
		printf("%*s ", width, "-");
	else
		printf("%*llu ", width, (unsigned long long)v);
}

static void json_count(struct json *j, const char *key, uint64_t v)
{
	if (v == SYNCMEM_COUNT_HIDDEN)
		json_null(j, key);
	else
		json_uint(j, key, v);
}

int cmd_regions(const struct options *o)
{
	struct region_list l;
	struct json j;
	int err = region_list_read(&l);

	if (err)
		return fail("regions", err, "cannot list the regions");
	if (o->json) {
		json_start(&j, stdout);
		json_object(&j, NULL);
		json_array(&j, "regions");
	} else {
		printf("%-12s %6s %6s %5s %6s %8s %7s %7s  %s\n", "SIZE", "UID", "GID", "MODE",
		       "FILES", "MAPPINGS", "WAITERS", "OBJECTS", "NAME");
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct syncmem_region_entry *e = &l.e[i];
		int objects = count_objects(e);

		if (o->json) {
			json_object(&j, NULL);
			json_bytes(&j, "name", e->name, entry_name_len(e));
			json_uint(&j, "size", e->size);
			json_uint(&j, "uid", e->uid);
			json_uint(&j, "gid", e->gid);
			json_mode(&j, "mode", e->mode);
			json_count(&j, "files", e->files);
			json_count(&j, "mappings", e->mappings);
			json_count(&j, "waiters", e->waiters);
			if (objects < 0)
				json_null(&j, "objects");
			else
				json_int(&j, "objects", objects);
			json_object_end(&j);
			continue;
		}
		printf("%-12llu %6u %6u %05o ", (unsigned long long)e->size,
		       e->uid, e->gid, e->mode);
		print_count(e->files, 6);
		print_count(e->mappings, 8);
		print_count(e->waiters, 7);
		if (objects < 0)
			printf("%7s  ", "-");
		else
			printf("%7d  ", objects);
		print_name(stdout, e->name, entry_name_len(e));
		putchar('\n');
	}
	if (o->json) {
		json_array_end(&j);
		json_object_end(&j);
		json_finish(&j);
	}
	region_list_free(&l);
	return 0;
}
