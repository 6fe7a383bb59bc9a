// SPDX-License-Identifier: GPL-2.0
/*
 * syncmemctl: inspect and manage the syncmem module from the shell.
 *
 *   syncmemctl version            ABI version, features and caps
 *   syncmemctl stats              this IPC namespace's and this user's usage
 *   syncmemctl regions            the names of this IPC namespace
 *   syncmemctl create NAME SIZE [MODE]
 *   syncmemctl unlink NAME
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "syncmem.h"

static int usage(void)
{
	fprintf(stderr,
		"usage: syncmemctl version\n"
		"       syncmemctl stats\n"
		"       syncmemctl regions\n"
		"       syncmemctl create NAME SIZE [MODE]\n"
		"       syncmemctl unlink NAME\n");
	return 2;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "syncmemctl: %s: %s\n", what, syncmem_strerror(err));
	return 1;
}

static int dev_ioctl(unsigned long req, void *arg)
{
	int fd = open("/dev/syncmem", O_RDWR | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
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

static int cmd_version(void)
{
	char mod[64];
	struct syncmem_version v;
	int err = dev_ioctl(SYNCMEM_IOC_VERSION, &v);

	if (err)
		return fail("version", err);
	printf("library          %s (tool built with %s)\n", syncmem_version(), SYNCMEM_VERSION);
	printf("module           %s\n", module_version(mod, sizeof(mod)));
	printf("abi_version      %u%s\n", v.abi_version,
	       v.abi_version == SYNCMEM_ABI_VERSION ? "" : " (this tool speaks another)");
	printf("features         0x%llx\n", (unsigned long long)v.features);
	printf("name_max         %u\n", v.name_max);
	printf("max_region_size  %llu\n", (unsigned long long)v.max_region_size);
	printf("max_regions      %u\n", v.max_regions);
	printf("max_total_bytes  %llu\n", (unsigned long long)v.max_total_bytes);
	return 0;
}

static int cmd_stats(void)
{
	struct syncmem_stats s;
	int err = dev_ioctl(SYNCMEM_IOC_STATS, &s);

	if (err)
		return fail("stats", err);
	printf("regions          %llu\n", (unsigned long long)s.regions);
	printf("region_bytes     %llu\n", (unsigned long long)s.region_bytes);
	printf("named_regions    %llu\n", (unsigned long long)s.named_regions);
	printf("handles          %llu\n", (unsigned long long)s.handles);
	printf("waiters          %llu\n", (unsigned long long)s.waiters);
	printf("async_waits      %llu\n", (unsigned long long)s.async_waits);
	printf("user_regions     %llu\n", (unsigned long long)s.user_regions);
	printf("user_bytes       %llu\n", (unsigned long long)s.user_bytes);
	printf("user_async_waits %llu\n", (unsigned long long)s.user_async_waits);
	printf("user_on_close    %llu\n", (unsigned long long)s.user_on_close);
	return 0;
}

/* A name as text: any byte but NUL may be in it, so escape the rest. */
static void print_name(const char *name, unsigned int len)
{
	for (unsigned int i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c > ' ' && c < 0x7f && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static int cmd_regions(void)
{
	static struct syncmem_region_entry e[256];
	struct syncmem_region_list l = { .entries = (uintptr_t)e };
	int fd = open("/dev/syncmem", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return fail("regions", errno == ENOENT ? -ENODEV : -errno);
	printf("%-12s %6s %6s %5s %6s %8s %7s  %s\n", "SIZE", "UID", "GID", "MODE",
	       "FILES", "MAPPINGS", "WAITERS", "NAME");
	do {
		l.count = sizeof(e) / sizeof(e[0]);
		if (ioctl(fd, SYNCMEM_IOC_REGION_LIST, &l)) {
			int err = -errno;

			close(fd);
			return fail("regions", err);
		}
		for (unsigned int i = 0; i < l.count; i++) {
			printf("%-12llu %6u %6u %05o %6llu %8llu %7llu  ",
			       (unsigned long long)e[i].size, e[i].uid, e[i].gid, e[i].mode,
			       (unsigned long long)e[i].files, (unsigned long long)e[i].mappings,
			       (unsigned long long)e[i].waiters);
			print_name(e[i].name, e[i].name_len < sizeof(e[i].name) ?
					      e[i].name_len : sizeof(e[i].name));
			putchar('\n');
		}
	} while (l.count == sizeof(e) / sizeof(e[0]));
	close(fd);
	return 0;
}

static int cmd_create(const char *name, const char *size_s, const char *mode_s)
{
	struct syncmem_region *r;
	char *end;
	unsigned long long size = strtoull(size_s, &end, 0);
	unsigned long mode = mode_s ? strtoul(mode_s, NULL, 8) : 0600;
	int err;

	if (*end || !size)
		return usage();
	err = syncmem_open(name, size, SYNCMEM_CREATE | SYNCMEM_EXCL, mode, &r);
	if (err)
		return fail("create", err);
	syncmem_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "version"))
		return cmd_version();
	if (argc == 2 && !strcmp(argv[1], "stats"))
		return cmd_stats();
	if (argc == 2 && !strcmp(argv[1], "regions"))
		return cmd_regions();
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "create"))
		return cmd_create(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc == 3 && !strcmp(argv[1], "unlink")) {
		int err = syncmem_unlink(argv[2]);

		return err ? fail("unlink", err) : 0;
	}
	return usage();
}
