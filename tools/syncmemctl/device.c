// SPDX-License-Identifier: GPL-2.0
/*
 * The commands on /dev/syncmem itself: version, stats, create and unlink.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "json.h"
#include "syncmemctl.h"

int dev_open(void)
{
	const char *path = getenv("SYNCMEM_DEVICE");	/* as the library does */
	int fd = open(path && *path ? path : "/dev/syncmem", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT || errno == ENXIO || errno == ENODEV ? -ENODEV : -errno;
	return fd;
}

int dev_ioctl(unsigned long req, void *arg)
{
	int fd = dev_open();
	int err = 0;

	if (fd < 0)
		return fd;
	if (ioctl(fd, req, arg))
		err = -errno;
	close(fd);
	return err;
}

/* The loaded module's version as modinfo gives it, or "unknown". */
static const char *module_version(char *buf, size_t size)
{
	FILE *f = fopen("/sys/module/syncmem/version", "r");
	bool ok = f && fgets(buf, (int)size, f);

	if (f)
		fclose(f);
	if (!ok)
		return "unknown";
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

int cmd_version(const struct options *o)
{
	char mod[64];
	struct syncmem_version v;
	int err = dev_ioctl(SYNCMEM_IOC_VERSION, &v);

	if (err)
		return fail("version", err, "reading the module's version");
	module_version(mod, sizeof(mod));
	if (o->json) {
		struct json j;

		json_start(&j, stdout);
		json_object(&j, NULL);
		json_str(&j, "library", syncmem_version());
		json_str(&j, "built_with", SYNCMEM_VERSION);
		json_str(&j, "module", mod);
		json_uint(&j, "abi_version", v.abi_version);
		json_bool(&j, "abi_match", v.abi_version == SYNCMEM_ABI_VERSION);
		json_uint(&j, "features", v.features);
		json_uint(&j, "name_max", v.name_max);
		json_uint(&j, "max_region_size", v.max_region_size);
		json_uint(&j, "max_regions", v.max_regions);
		json_uint(&j, "max_total_bytes", v.max_total_bytes);
		json_object_end(&j);
		json_finish(&j);
		return 0;
	}
	printf("library          %s (tool built with %s)\n", syncmem_version(), SYNCMEM_VERSION);
	printf("module           %s\n", mod);
	printf("abi_version      %u%s\n", v.abi_version,
	       v.abi_version == SYNCMEM_ABI_VERSION ? "" : " (this tool speaks another)");
	printf("features         0x%llx\n", (unsigned long long)v.features);
	printf("name_max         %u\n", v.name_max);
	printf("max_region_size  %llu\n", (unsigned long long)v.max_region_size);
	printf("max_regions      %u\n", v.max_regions);
	printf("max_total_bytes  %llu\n", (unsigned long long)v.max_total_bytes);
	return 0;
}

int cmd_stats(const struct options *o)
{
	struct syncmem_stats s;
	const struct {
		const char *name;
		const __u64 *value;
	} f[] = {
		{ "regions", &s.regions },
		{ "region_bytes", &s.region_bytes },
		{ "named_regions", &s.named_regions },
		{ "handles", &s.handles },
		{ "waiters", &s.waiters },
		{ "async_waits", &s.async_waits },
		{ "user_regions", &s.user_regions },
		{ "user_bytes", &s.user_bytes },
		{ "user_async_waits", &s.user_async_waits },
		{ "user_on_close", &s.user_on_close },
	};
	int err = dev_ioctl(SYNCMEM_IOC_STATS, &s);
	struct json j;

	if (err)
		return fail("stats", err, "reading the module's counters");
	if (!o->json) {
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			printf("%-16s %llu\n", f[i].name, (unsigned long long)*f[i].value);
		return 0;
	}
	json_start(&j, stdout);
	json_object(&j, NULL);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		json_uint(&j, f[i].name, *f[i].value);
	json_object_end(&j);
	json_finish(&j);
	return 0;
}

int cmd_create(const struct options *o)
{
	const char *name = o->args[0];
	struct syncmem_region *r;
	unsigned long long size;
	unsigned long mode = 0600;
	char *end, shown[NAME_TEXT_MAX];
	int err;

	errno = 0;
	size = strtoull(o->args[1], &end, 0);
	if (errno || *end || !size || o->args[1][0] == '-') {
		fprintf(stderr, "syncmemctl: create: bad size '%s'\n", o->args[1]);
		return EXIT_ERROR;
	}
	if (o->nargs == 3) {
		mode = strtoul(o->args[2], &end, 8);
		if (*end || !o->args[2][0] || mode > 0777) {
			fprintf(stderr, "syncmemctl: create: bad mode '%s'\n", o->args[2]);
			return EXIT_ERROR;
		}
	}
	err = syncmem_open(name, size, SYNCMEM_CREATE | SYNCMEM_EXCL, (mode_t)mode, &r);
	if (err)
		return fail("create", err, "cannot create region '%s'",
			    name_text(shown, sizeof(shown), name, strlen(name)));
	syncmem_close(r);
	if (o->json) {
		struct json j;

		json_start(&j, stdout);
		json_object(&j, NULL);
		json_str(&j, "name", name);
		json_uint(&j, "size", size);
		json_mode(&j, "mode", (unsigned int)mode);
		json_object_end(&j);
		json_finish(&j);
	}
	return 0;
}

int cmd_unlink(const struct options *o)
{
	const char *name = o->args[0];
	int err = syncmem_unlink(name);
	char shown[NAME_TEXT_MAX];

	if (err)
		return fail("unlink", err, "cannot unlink region '%s'",
			    name_text(shown, sizeof(shown), name, strlen(name)));
	if (o->json) {
		struct json j;

		json_start(&j, stdout);
		json_object(&j, NULL);
		json_str(&j, "name", name);
		json_object_end(&j);
		json_finish(&j);
	}
	return 0;
}
