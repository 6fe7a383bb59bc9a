// SPDX-License-Identifier: GPL-2.0
/*
 * Regions: create/open/unlink, sharing between processes, permissions,
 * mmap rules, caps, malformed arguments and lifetime.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "syncmem.h"

#define PG 4096UL

FIXTURE(regions) {
	int dev;
	char name[64];
	char name2[64];
};

FIXTURE_SETUP(regions)
{
	self->dev = dev_open();
	ASSERT_LE(0, self->dev);
	snprintf(self->name, sizeof(self->name), "test-%d-a", getpid());
	snprintf(self->name2, sizeof(self->name2), "test-%d-b", getpid());
	umask(022);
}

FIXTURE_TEARDOWN(regions)
{
	raw_unlink(self->dev, self->name);
	raw_unlink(self->dev, self->name2);
	close(self->dev);
}

static void *map(int fd, size_t len, int prot)
{
	return mmap(NULL, len, prot, MAP_SHARED, fd, 0);
}

TEST_F(regions, version)
{
	struct syncmem_version v;

	memset(&v, 0xa5, sizeof(v));
	ASSERT_EQ(0, raw_ioctl(self->dev, SYNCMEM_IOC_VERSION, &v));
	EXPECT_EQ(SYNCMEM_ABI_VERSION, v.abi_version);
	EXPECT_EQ(SYNCMEM_NAME_MAX, v.name_max);
	EXPECT_TRUE(v.features & SYNCMEM_FEAT_REGIONS);
	EXPECT_EQ(0, v.pad);
	EXPECT_EQ(get_param("max_region_size"), v.max_region_size);
	EXPECT_EQ(get_param("max_regions"), v.max_regions);
	EXPECT_TRUE(v.features & SYNCMEM_FEAT_LIMITS);
	EXPECT_TRUE(v.features & SYNCMEM_FEAT_REGION_LIST);
	/* The parameter's 0 (its default) reports the effective cap. */
	ASSERT_EQ(0, get_param("max_total_bytes"));
	EXPECT_EQ(sysconf(_SC_PHYS_PAGES) / 2 * sysconf(_SC_PAGESIZE), v.max_total_bytes);
}

TEST_F(regions, create_open_share_and_zeroed)
{
	uint64_t size = 0;
	int a, b, flags;
	unsigned char *pa, *pb;
	size_t i;

	a = raw_region_open(self->dev, self->name,
			    SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
			    3 * PG, 0600, &size);
	ASSERT_LE(0, a);
	EXPECT_EQ(3 * PG, size);
	flags = fcntl(a, F_GETFD);
	EXPECT_TRUE(flags & FD_CLOEXEC);

	size = 0;
	b = raw_region_open(self->dev, self->name, 0, 0, 0, &size);
	ASSERT_LE(0, b);
	EXPECT_EQ(3 * PG, size);
	EXPECT_TRUE(fcntl(b, F_GETFD) & FD_CLOEXEC);

	pa = map(a, 3 * PG, PROT_READ | PROT_WRITE);
	pb = map(b, 3 * PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, pa);
	ASSERT_NE(MAP_FAILED, pb);
	for (i = 0; i < 3 * PG; i++) {
		ASSERT_EQ(0, pa[i]);
	}
	pa[5] = 42;
	pb[2 * PG + 7] = 43;
	EXPECT_EQ(42, pb[5]);
	EXPECT_EQ(43, pa[2 * PG + 7]);

	/* CREATE without EXCL opens the existing region. */
	close(b);
	b = raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE, 3 * PG,
			    0600, NULL);
	ASSERT_LE(0, b);
	munmap(pb, 3 * PG);
	pb = map(b, 3 * PG, PROT_READ);
	ASSERT_NE(MAP_FAILED, pb);
	EXPECT_EQ(42, pb[5]);

	munmap(pa, 3 * PG);
	munmap(pb, 3 * PG);
	close(a);
	close(b);
}

TEST_F(regions, excl_enoent_and_size_mismatch)
{
	int fd;

	EXPECT_EQ(-ENOENT, raw_region_open(self->dev, self->name, 0, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, raw_region_open(self->dev, self->name, 0, PG, 0600, NULL));
	fd = raw_region_open(self->dev, self->name,
			     SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL, 100, 0600, NULL);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EEXIST, raw_region_open(self->dev, self->name,
					   SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL,
					   100, 0600, NULL));
	EXPECT_EQ(-EINVAL, raw_region_open(self->dev, self->name, 0, 200, 0, NULL));
	EXPECT_EQ(-EINVAL, raw_region_open(self->dev, self->name,
					   SYNCMEM_REGION_CREATE, PG, 0600, NULL));
	close(fd);
	fd = raw_region_open(self->dev, self->name, 0, 100, 0, NULL);
	EXPECT_LE(0, fd);
	close(fd);
	EXPECT_EQ(-ENOENT, raw_unlink(self->dev, self->name2));
}

TEST_F(regions, unlink_while_mapped)
{
	struct syncmem_region_info info;
	int fd, fd2;
	unsigned char *p, *q;

	fd = raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE, PG, 0600, NULL);
	ASSERT_LE(0, fd);
	p = map(fd, PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 7;
	ASSERT_EQ(0, raw_ioctl(fd, SYNCMEM_IOC_REGION_INFO, &info));
	EXPECT_EQ(SYNCMEM_INFO_NAMED, info.flags);

	ASSERT_EQ(0, raw_unlink(self->dev, self->name));
	EXPECT_EQ(-ENOENT, raw_unlink(self->dev, self->name));
	EXPECT_EQ(-ENOENT, raw_region_open(self->dev, self->name, 0, 0, 0, NULL));
	ASSERT_EQ(0, raw_ioctl(fd, SYNCMEM_IOC_REGION_INFO, &info));
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(PG, info.size);
	close(fd);

	/* The old memory stays valid through the mapping. */
	EXPECT_EQ(7, p[0]);
	p[1] = 8;
	EXPECT_EQ(8, p[1]);

	/* The name is free: a new, zeroed region takes it. */
	fd2 = raw_region_open(self->dev, self->name,
			      SYNCMEM_REGION_CREATE | SYNCMEM_REGION_EXCL, PG, 0600, NULL);
	ASSERT_LE(0, fd2);
	q = map(fd2, PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, q[0]);
	q[0] = 9;
	EXPECT_EQ(7, p[0]);
	munmap(p, PG);
	munmap(q, PG);
	close(fd2);
}

/* Two unrelated processes open the region by name through the library. */
TEST_F(regions, two_processes_by_name)
{
	struct syncmem_region *r;
	volatile uint32_t *w;
	pid_t pid;
	int i;

	ASSERT_EQ(0, syncmem_open(self->name, PG, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r));
	w = syncmem_base(r);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct syncmem_region *c;
		volatile uint32_t *cw;

		if (syncmem_open(self->name, 0, 0, 0, &c))
			_exit(2);
		cw = syncmem_base(c);
		cw[1] = 0xc0ffee;		/* child -> parent */
		for (i = 0; i < 5000 && cw[0] != 0xbeef; i++)
			usleep(1000);		/* parent -> child */
		_exit(cw[0] == 0xbeef ? 0 : 3);
	}
	for (i = 0; i < 5000 && w[1] != 0xc0ffee; i++)
		usleep(1000);
	EXPECT_EQ(0xc0ffee, w[1]);
	w[0] = 0xbeef;
	EXPECT_EQ(0, wait_exit(pid));
	syncmem_close(r);
}

TEST_F(regions, anonymous_shared_across_fork)
{
	struct syncmem_region *r;
	volatile uint64_t *w;
	pid_t pid;

	ASSERT_EQ(0, syncmem_open(NULL, 8192, SYNCMEM_CREATE | SYNCMEM_EXCL, 0, &r));
	EXPECT_EQ(8192, syncmem_size(r));
	w = syncmem_base(r);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		w[1000] = 0x1122334455667788ULL;
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(0x1122334455667788ULL, w[1000]);
	syncmem_close(r);
}

static int send_fd(int sock, int fd)
{
	char byte = 'x', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

TEST_F(regions, pass_fd_over_unix_socket)
{
	struct syncmem_region *r;
	volatile uint32_t *w;
	int sv[2], fd;
	pid_t pid;
	char ack;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct syncmem_region *cr;
		volatile uint32_t *cw;

		close(sv[0]);
		if (syncmem_open(NULL, PG, 0, 0, &cr))
			_exit(2);
		cw = syncmem_base(cr);
		cw[3] = 1234;
		if (send_fd(sv[1], syncmem_region_fd(cr)))
			_exit(3);
		if (read(sv[1], &ack, 1) != 1)
			_exit(4);
		_exit(cw[4] == 5678 ? 0 : 5);
	}
	close(sv[1]);
	fd = recv_fd(sv[0]);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, syncmem_open_fd(fd, &r));
	EXPECT_EQ(PG, syncmem_size(r));
	EXPECT_EQ(fd, syncmem_region_fd(r));
	w = syncmem_base(r);
	EXPECT_EQ(1234, w[3]);
	w[4] = 5678;
	ASSERT_EQ(1, write(sv[0], "k", 1));
	EXPECT_EQ(0, wait_exit(pid));
	syncmem_close(r);
	close(sv[0]);
}

/* Run @fn in a child that has dropped to uid/gid 65534; its exit code. */
static int as_nobody(int (*fn)(const char *name), const char *name)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (become_nobody())
			_exit(100);
		_exit(fn(name));
	}
	return wait_exit(pid);
}

static int open_errno(const char *name, unsigned flags)
{
	struct syncmem_region *r;
	int err = syncmem_open(name, 0, flags, 0, &r);

	if (!err)
		syncmem_close(r);
	return -err;
}

static int nobody_rw(const char *name) { return open_errno(name, 0); }
static int nobody_ro(const char *name) { return open_errno(name, SYNCMEM_RDONLY); }
static int nobody_unlink(const char *name) { return -syncmem_unlink(name); }

TEST_F(regions, permissions_for_another_uid)
{
	int fd;

	/* Owner-only: another uid gets neither read nor write. */
	fd = raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE, PG, 0600, NULL);
	ASSERT_LE(0, fd);
	close(fd);
	EXPECT_EQ(EACCES, as_nobody(nobody_rw, self->name));
	EXPECT_EQ(EACCES, as_nobody(nobody_ro, self->name));
	EXPECT_EQ(EPERM, as_nobody(nobody_unlink, self->name));
	ASSERT_EQ(0, raw_unlink(self->dev, self->name));

	/* 0666 under umask 022 is 0644: others may only read. */
	fd = raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE, PG, 0666, NULL);
	ASSERT_LE(0, fd);
	close(fd);
	EXPECT_EQ(EACCES, as_nobody(nobody_rw, self->name));
	EXPECT_EQ(0, as_nobody(nobody_ro, self->name));

	/* Group bits apply to the owning group. */
	umask(0);
	ASSERT_EQ(0, syscall(SYS_setfsgid, 65534));
	fd = raw_region_open(self->dev, self->name2, SYNCMEM_REGION_CREATE, PG, 0060, NULL);
	syscall(SYS_setfsgid, 0);
	ASSERT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, as_nobody(nobody_rw, self->name2));

	/* Root has CAP_DAC_OVERRIDE: mode 0 does not stop it. */
	ASSERT_EQ(0, raw_unlink(self->dev, self->name2));
	fd = raw_region_open(self->dev, self->name2, SYNCMEM_REGION_CREATE, PG, 0, NULL);
	ASSERT_LE(0, fd);
	close(fd);
	fd = raw_region_open(self->dev, self->name2, 0, 0, 0, NULL);
	EXPECT_LE(0, fd);
	close(fd);
}

TEST_F(regions, readonly_open_refuses_write)
{
	struct syncmem_region_info info;
	struct syncmem_region *r;
	unsigned char *p;
	int rw, ro;

	rw = raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE, PG, 0644, NULL);
	ASSERT_LE(0, rw);
	p = map(rw, PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 77;
	munmap(p, PG);

	ro = raw_region_open(self->dev, self->name, SYNCMEM_REGION_RDONLY, 0, 0, NULL);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, raw_ioctl(ro, SYNCMEM_IOC_REGION_INFO, &info));
	EXPECT_EQ(SYNCMEM_INFO_RDONLY | SYNCMEM_INFO_NAMED, info.flags);
	EXPECT_EQ(MAP_FAILED, map(ro, PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = map(ro, PG, PROT_READ);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(77, p[0]);
	EXPECT_EQ(-1, mprotect(p, PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, PG);
	close(ro);
	close(rw);

	/* Through the library too. */
	ASSERT_EQ(0, syncmem_open(self->name, 0, SYNCMEM_RDONLY, 0, &r));
	EXPECT_EQ(77, ((unsigned char *)syncmem_base(r))[0]);
	syncmem_close(r);
}

TEST_F(regions, mmap_rules)
{
	uint64_t size = 0;
	void *p;
	int fd;

	fd = raw_region_open(self->dev, NULL, 0, 2 * PG, 0, &size);
	ASSERT_LE(0, fd);
	EXPECT_EQ(2 * PG, size);

	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 3 * PG, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 2 * PG));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd, PG));
	EXPECT_EQ(EINVAL, errno);

	/* The second page alone is fine. */
	p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
	ASSERT_NE(MAP_FAILED, p);
	/* No exec later, no growth through mremap. */
	EXPECT_EQ(-1, mprotect(p, PG, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mremap(p, PG, 2 * PG, MREMAP_MAYMOVE));
	/* Pages dropped with MADV_DONTNEED come back with their contents. */
	((char *)p)[10] = 5;
	ASSERT_EQ(0, madvise(p, PG, MADV_DONTNEED));
	EXPECT_EQ(5, ((char *)p)[10]);
	munmap(p, PG);

	/* A region of 100 bytes maps as one whole page, and no more. */
	close(fd);
	fd = raw_region_open(self->dev, NULL, 0, 100, 0, &size);
	ASSERT_LE(0, fd);
	EXPECT_EQ(100, size);
	p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, PG);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd, 0));
	close(fd);
}

TEST_F(regions, caps)
{
	unsigned long long size_cap = get_param("max_region_size");
	unsigned long long count_cap = get_param("max_regions");
	unsigned long long bytes_cap = get_param("max_total_bytes");
	struct syncmem_stats s;
	int a, b;

	ASSERT_EQ(0, set_param("max_region_size", 16 * PG));
	EXPECT_EQ(-E2BIG, raw_region_open(self->dev, NULL, 0, 16 * PG + 1, 0, NULL));
	EXPECT_EQ(-E2BIG, raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE,
					  17 * PG, 0600, NULL));
	a = raw_region_open(self->dev, NULL, 0, 16 * PG, 0, NULL);
	EXPECT_LE(0, a);
	close(a);
	ASSERT_EQ(0, set_param("max_region_size", size_cap));

	s = get_stats(self->dev);
	ASSERT_EQ(0, set_param("max_regions", s.regions + 1));
	a = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	EXPECT_LE(0, a);
	EXPECT_EQ(-ENOSPC, raw_region_open(self->dev, NULL, 0, PG, 0, NULL));
	EXPECT_EQ(-ENOSPC, raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE,
					   PG, 0600, NULL));
	close(a);
	b = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	EXPECT_LE(0, b);	/* the slot came back */
	close(b);
	ASSERT_EQ(0, set_param("max_regions", count_cap));

	s = get_stats(self->dev);
	ASSERT_EQ(0, set_param("max_total_bytes", s.region_bytes + 2 * PG));
	EXPECT_EQ(-ENOMEM, raw_region_open(self->dev, NULL, 0, 3 * PG, 0, NULL));
	a = raw_region_open(self->dev, NULL, 0, 2 * PG, 0, NULL);
	EXPECT_LE(0, a);
	EXPECT_EQ(-ENOMEM, raw_region_open(self->dev, NULL, 0, 1, 0, NULL));
	close(a);
	ASSERT_EQ(0, set_param("max_total_bytes", bytes_cap));

	/* The library reports the same errnos. */
	{
		struct syncmem_region *r;

		ASSERT_EQ(0, set_param("max_region_size", PG));
		EXPECT_EQ(-E2BIG, syncmem_open(NULL, 2 * PG, 0, 0, &r));
		EXPECT_EQ(NULL, r);
		ASSERT_EQ(0, set_param("max_region_size", size_cap));
	}
}

TEST_F(regions, malformed_arguments)
{
	struct syncmem_region_open arg;
	struct syncmem_region_unlink ul;
	char longname[SYNCMEM_NAME_MAX + 2];
	int fd;

#define OPEN_ARG(...) (arg = (struct syncmem_region_open){ __VA_ARGS__ }, \
		       raw_ioctl(self->dev, SYNCMEM_IOC_REGION_OPEN, &arg))
	EXPECT_EQ(-EINVAL, OPEN_ARG(.size = PG, .pad = 1));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.size = PG, .flags = 1U << 3));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.size = PG, .flags = 1U << 31));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.name = (uintptr_t)self->name, .name_len = 5,
				    .flags = SYNCMEM_REGION_EXCL, .size = PG));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.name = (uintptr_t)self->name, .name_len = 5,
				    .flags = SYNCMEM_REGION_CREATE, .size = PG, .mode = 01000));
	EXPECT_EQ(-EFAULT, OPEN_ARG(.name = 1, .name_len = 5,
				    .flags = SYNCMEM_REGION_CREATE, .size = PG));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.name = (uintptr_t)self->name, .name_len = 0,
				    .flags = SYNCMEM_REGION_CREATE, .size = PG));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.name = (uintptr_t)"a\0b", .name_len = 3,
				    .flags = SYNCMEM_REGION_CREATE, .size = PG));
	memset(longname, 'n', sizeof(longname));
	EXPECT_EQ(-ENAMETOOLONG, OPEN_ARG(.name = (uintptr_t)longname,
					  .name_len = SYNCMEM_NAME_MAX + 1,
					  .flags = SYNCMEM_REGION_CREATE, .size = PG));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.name = 0, .name_len = 4, .size = PG));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.flags = SYNCMEM_REGION_RDONLY, .size = PG));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.size = 0));
	EXPECT_EQ(-EINVAL, OPEN_ARG(.name = (uintptr_t)self->name, .name_len = 5,
				    .flags = SYNCMEM_REGION_CREATE, .size = 0));
	EXPECT_EQ(-E2BIG, OPEN_ARG(.size = 1ULL << 62));
	EXPECT_EQ(-E2BIG, OPEN_ARG(.size = ~0ULL));
#undef OPEN_ARG

	/* A 255-byte name is fine. */
	longname[SYNCMEM_NAME_MAX] = '\0';
	fd = raw_region_open(self->dev, longname, SYNCMEM_REGION_CREATE, PG, 0600, NULL);
	EXPECT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, raw_unlink(self->dev, longname));

	ul = (struct syncmem_region_unlink){ .name = (uintptr_t)self->name,
					     .name_len = 5, .flags = 1 };
	EXPECT_EQ(-EINVAL, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_UNLINK, &ul));
	ul = (struct syncmem_region_unlink){ .name = 1, .name_len = 5 };
	EXPECT_EQ(-EFAULT, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_UNLINK, &ul));
	ul = (struct syncmem_region_unlink){ .name = (uintptr_t)longname,
					     .name_len = SYNCMEM_NAME_MAX + 1 };
	EXPECT_EQ(-ENAMETOOLONG, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_UNLINK, &ul));
	ul = (struct syncmem_region_unlink){ .name = (uintptr_t)self->name };
	EXPECT_EQ(-EINVAL, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_UNLINK, &ul));

	/* Bad argument pointers and unknown commands. */
	EXPECT_EQ(-EFAULT, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_OPEN, NULL));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->dev, SYNCMEM_IOC_VERSION, NULL));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->dev, SYNCMEM_IOC_STATS, (void *)8));
	EXPECT_EQ(-ENOTTY, raw_ioctl(self->dev, _IO(SYNCMEM_IOC_MAGIC, 0x7f), NULL));
	EXPECT_EQ(-ENOTTY, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_INFO, &ul));
	fd = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, SYNCMEM_IOC_VERSION, &ul));
	EXPECT_EQ(-EFAULT, raw_ioctl(fd, SYNCMEM_IOC_REGION_INFO, NULL));
	close(fd);
}

TEST_F(regions, library_errors)
{
	struct syncmem_region *r = (void *)1;
	char longname[SYNCMEM_NAME_MAX + 2];
	int p[2];

	EXPECT_EQ(-EINVAL, syncmem_open(self->name, PG, 0x8, 0600, &r));
	EXPECT_EQ(NULL, r);
	EXPECT_EQ(-EINVAL, syncmem_open(self->name, PG, SYNCMEM_EXCL, 0600, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(self->name, PG, SYNCMEM_CREATE, 01777, &r));
	EXPECT_EQ(-EINVAL, syncmem_open("", PG, SYNCMEM_CREATE, 0600, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(NULL, 0, 0, 0, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(NULL, PG, SYNCMEM_RDONLY, 0, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(NULL, PG, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, syncmem_open(self->name, 0, 0, 0, &r));
	memset(longname, 'x', sizeof(longname));
	longname[SYNCMEM_NAME_MAX + 1] = '\0';
	EXPECT_EQ(-ENAMETOOLONG, syncmem_open(longname, PG, SYNCMEM_CREATE, 0600, &r));
	EXPECT_EQ(-ENAMETOOLONG, syncmem_unlink(longname));
	EXPECT_EQ(-EINVAL, syncmem_unlink(NULL));
	EXPECT_EQ(-ENOENT, syncmem_unlink(self->name));

	EXPECT_EQ(-EBADF, syncmem_open_fd(-1, &r));
	EXPECT_EQ(-EBADF, syncmem_open_fd(1000, &r));
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-EINVAL, syncmem_open_fd(p[0], &r));
	EXPECT_EQ(-EINVAL, syncmem_open_fd(self->dev, &r));
	close(p[0]);
	close(p[1]);

	/* Without the device the library says the module is not loaded. */
	setenv("SYNCMEM_DEVICE", "/dev/nonexistent-syncmem", 1);
	EXPECT_EQ(-ENODEV, syncmem_open(NULL, PG, 0, 0, &r));
	unsetenv("SYNCMEM_DEVICE");
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ENODEV), "module"));

	syncmem_close(NULL);
	EXPECT_EQ(NULL, syncmem_base(NULL));
	EXPECT_EQ(0, syncmem_size(NULL));
}

/* Memory is freed after the last fd and mapping are gone and the name is unlinked. */
TEST_F(regions, lifetime_frees_memory)
{
	struct syncmem_stats base, s;
	void *p;
	int fd;

	base = get_stats(self->dev);
	fd = raw_region_open(self->dev, self->name, SYNCMEM_REGION_CREATE, 256 * PG, 0600, NULL);
	ASSERT_LE(0, fd);
	p = map(fd, 256 * PG, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 1, 256 * PG);
	s = get_stats(self->dev);
	EXPECT_EQ(base.regions + 1, s.regions);
	EXPECT_EQ(base.region_bytes + 256 * PG, s.region_bytes);
	EXPECT_EQ(base.named_regions + 1, s.named_regions);

	close(fd);	/* name and mapping keep it */
	s = get_stats(self->dev);
	EXPECT_EQ(base.regions + 1, s.regions);
	ASSERT_EQ(0, raw_unlink(self->dev, self->name));	/* mapping keeps it */
	s = get_stats(self->dev);
	EXPECT_EQ(base.regions + 1, s.regions);
	EXPECT_EQ(base.named_regions, s.named_regions);
	munmap(p, 256 * PG);	/* last user */
	s = get_stats(self->dev);
	EXPECT_EQ(base.regions, s.regions);
	EXPECT_EQ(base.region_bytes, s.region_bytes);

	/* An anonymous region dies with its fd. */
	fd = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	ASSERT_LE(0, fd);
	EXPECT_EQ(base.regions + 1, get_stats(self->dev).regions);
	close(fd);
	EXPECT_EQ(base.regions, get_stats(self->dev).regions);
}

static int try_unload(void)
{
	return syscall(SYS_delete_module, "syncmem", O_NONBLOCK) ? -errno : 0;
}

/* The module stays while a handle, a region fd or only a mapping exists. */
TEST_F(regions, module_pinned_while_in_use)
{
	void *p;
	int fd, err;

	fd = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	ASSERT_LE(0, fd);
	p = map(fd, PG, PROT_READ);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	close(self->dev);	/* only the mapping is left */
	err = try_unload();
	EXPECT_TRUE(err == -EWOULDBLOCK || err == -EBUSY);
	munmap(p, PG);
	self->dev = dev_open();
	ASSERT_LE(0, self->dev);
	err = try_unload();
	EXPECT_TRUE(err == -EWOULDBLOCK || err == -EBUSY);
}

static int create_in_new_ipc_ns(const char *name)
{
	struct syncmem_region *r;

	if (unshare(CLONE_NEWIPC))
		return 10;
	/* The parent's name is not visible here... */
	if (syncmem_open(name, 0, 0, 0, &r) != -ENOENT)
		return 11;
	/* ...and creating it makes a separate region. */
	if (syncmem_open(name, PG, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r))
		return 12;
	if (((volatile char *)syncmem_base(r))[0] != 0)
		return 13;
	syncmem_close(r);
	return 0;	/* exits without unlinking: the namespace dies with it */
}

TEST_F(regions, names_scoped_to_ipc_namespace)
{
	struct syncmem_region *r;
	uint64_t named;
	pid_t pid;

	ASSERT_EQ(0, syncmem_open(self->name, PG, SYNCMEM_CREATE, 0600, &r));
	((char *)syncmem_base(r))[0] = 1;
	named = get_stats(self->dev).named_regions;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(create_in_new_ipc_ns(self->name));
	ASSERT_EQ(0, wait_exit(pid));
	/* The orphaned namespace's name is reaped; ours is untouched. */
	EXPECT_EQ(named, get_stats(self->dev).named_regions);
	syncmem_close(r);
	ASSERT_EQ(0, syncmem_open(self->name, 0, 0, 0, &r));
	EXPECT_EQ(1, ((char *)syncmem_base(r))[0]);
	syncmem_close(r);
}

static long long read_ll(const char *path)
{
	char buf[64] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoll(buf) : -1;
}

/* In a cgroup limited to 16 MiB: a 4 MiB region is charged, 32 MiB is -ENOMEM. */
static int charge_in_cgroup(const char *cg)
{
	char path[256], pid[32];
	long long before, after;
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_file(path, pid))
		return 10;
	snprintf(path, sizeof(path), "%s/memory.current", cg);
	before = read_ll(path);
	fd = dev_open();
	if (fd < 0 || raw_region_open(fd, NULL, 0, 4 << 20, 0, NULL) < 0)
		return 11;
	after = read_ll(path);
	if (before < 0 || after - before < (4 << 20))
		return 12;
	if (raw_region_open(fd, NULL, 0, 32 << 20, 0, NULL) != -ENOMEM)
		return 13;
	return 0;
}

TEST_F(regions, memory_charged_to_cgroup)
{
	char cg[128], path[160];
	pid_t pid;

	ASSERT_EQ(0, write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory"));
	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/syncmem-%d", getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	ASSERT_EQ(0, write_file(path, "16777216"));
	snprintf(path, sizeof(path), "%s/memory.swap.max", cg);
	write_file(path, "0");	/* absent without swap accounting: fine */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(charge_in_cgroup(cg));
	/* Not killed by the OOM killer: the cap is a clean -ENOMEM. */
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(0, rmdir(cg));
}

TEST_HARNESS_MAIN
