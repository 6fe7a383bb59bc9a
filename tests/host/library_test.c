// SPDX-License-Identifier: GPL-2.0
/*
 * Library behaviour that needs no kernel module: argument checks come before
 * any system call, a missing module is -ENODEV, every result has a text.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "syncmem.h"

TEST(missing_module_is_enodev)
{
	struct syncmem_region *r = (void *)1;

	setenv("SYNCMEM_DEVICE", "/nonexistent/syncmem", 1);
	EXPECT_EQ(-ENODEV, syncmem_open(NULL, 4096, 0, 0, &r));
	EXPECT_EQ(NULL, r);
	EXPECT_EQ(-ENODEV, syncmem_open("name", 4096, SYNCMEM_CREATE, 0600, &r));
	EXPECT_EQ(-ENODEV, syncmem_unlink("name"));
	/* A file that is not the device: the version ioctl fails, still -ENODEV. */
	setenv("SYNCMEM_DEVICE", "/dev/null", 1);
	EXPECT_EQ(-ENODEV, syncmem_open(NULL, 4096, 0, 0, &r));
	unsetenv("SYNCMEM_DEVICE");
}

TEST(arguments_checked_before_the_device)
{
	struct syncmem_region *r;
	char name[300];

	setenv("SYNCMEM_DEVICE", "/nonexistent/syncmem", 1);
	EXPECT_EQ(-EINVAL, syncmem_open("a", 1, 0x10, 0600, &r));
	EXPECT_EQ(-EINVAL, syncmem_open("a", 1, SYNCMEM_EXCL, 0600, &r));
	EXPECT_EQ(-EINVAL, syncmem_open("a", 1, SYNCMEM_CREATE, 010000, &r));
	EXPECT_EQ(-EINVAL, syncmem_open("", 1, SYNCMEM_CREATE, 0600, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(NULL, 0, 0, 0, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(NULL, 1, SYNCMEM_RDONLY, 0, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(NULL, 1, 0, 0, NULL));
	memset(name, 'a', sizeof(name));
	name[256] = '\0';
	EXPECT_EQ(-ENAMETOOLONG, syncmem_open(name, 1, SYNCMEM_CREATE, 0600, &r));
	EXPECT_EQ(-ENAMETOOLONG, syncmem_unlink(name));
	name[255] = '\0';	/* 255 bytes is a valid name: reaches the device */
	EXPECT_EQ(-ENODEV, syncmem_unlink(name));
	EXPECT_EQ(-EINVAL, syncmem_unlink(NULL));
	EXPECT_EQ(-EBADF, syncmem_open_fd(-1, &r));
	EXPECT_EQ(-EINVAL, syncmem_open_fd(0, NULL));
	unsetenv("SYNCMEM_DEVICE");
}

TEST(strerror_covers_every_result)
{
	EXPECT_STREQ("ok", syncmem_strerror(SYNCMEM_OK));
	EXPECT_NE(NULL, strstr(syncmem_strerror(SYNCMEM_NOT_EQUAL), "not-equal"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(SYNCMEM_TIMED_OUT), "timed-out"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(SYNCMEM_PENDING), "pending"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ENODEV), "modprobe syncmem"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EPROTO), "ABI"));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EUCLEAN), "another process"));
	EXPECT_STREQ(strerror(EEXIST), syncmem_strerror(-EEXIST));
	EXPECT_NE(NULL, syncmem_strerror(-99999));
	EXPECT_NE(NULL, syncmem_strerror(77));
}

TEST(null_handles_are_harmless)
{
	syncmem_close(NULL);
	EXPECT_EQ(NULL, syncmem_base(NULL));
	EXPECT_EQ(0, syncmem_size(NULL));
	EXPECT_EQ(-EINVAL, syncmem_region_fd(NULL));
}

TEST_HARNESS_MAIN
