// SPDX-License-Identifier: GPL-2.0
/*
 * Names and what an administrator sees of them: listing per IPC namespace,
 * owner and mode of a region, STATS that show only the caller's namespace
 * and user, no name squatting, namespaces released when they die, and each
 * region its own inode.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define PG 4096

FIXTURE(names) {
	int dev;
	char a[64], b[64];
};

FIXTURE_SETUP(names)
{
	self->dev = dev_open();
	ASSERT_LE(0, self->dev);
	snprintf(self->a, sizeof(self->a), "names-%d-a", getpid());
	snprintf(self->b, sizeof(self->b), "names-%d-b", getpid());
}

FIXTURE_TEARDOWN(names)
{
	raw_unlink(self->dev, self->a);
	raw_unlink(self->dev, self->b);
	close(self->dev);
}

/* In a child as @uid: open @name with @flags, @mode; exit 0 or 100 - errno. */
static int child_open(int uid, const char *name, uint32_t flags, uint64_t size,
		      uint32_t mode)
{
	pid_t pid = fork();

	if (pid == 0) {
		int dev, fd;

		if (uid && become_user(uid))
			_exit(2);
		umask(0);
		dev = dev_open();
		fd = raw_region_open(dev, name, flags, size, mode, NULL);
		_exit(fd >= 0 ? 0 : 100 + fd);
	}
	return wait_exit(pid);
}

static int list(int dev, struct syncmem_region_entry *e, uint32_t count, uint64_t *cursor)
{
	struct syncmem_region_list l = {
		.entries = (uintptr_t)e,
		.count = count,
		.cursor = *cursor,
	};
	int ret = raw_ioctl(dev, SYNCMEM_IOC_REGION_LIST, &l);

	if (ret)
		return ret;
	*cursor = l.cursor;
	return (int)l.count;
}

/* The entry of @name in the whole listing, or NULL. */
static const struct syncmem_region_entry *find_entry(struct syncmem_region_entry *all,
						     int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (all[i].name_len == strlen(name) && !strcmp(all[i].name, name))
			return &all[i];
	return NULL;
}

TEST_F(names, list_shows_name_size_owner_mode_files_and_mappings)
{
	static struct syncmem_region_entry all[SYNCMEM_REGION_LIST_MAX];
	const struct syncmem_region_entry *ea, *eb;
	uint64_t cursor = 0;
	int fd1, fd2, n;
	void *map;

	umask(0);
	fd1 = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, 2 * PG, 0640, NULL);
	ASSERT_LE(0, fd1);
	fd2 = raw_region_open(self->dev, self->a, 0, 0, 0, NULL);
	ASSERT_LE(0, fd2);
	map = mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, child_open(65534, self->b, SYNCMEM_REGION_CREATE, PG, 0604));

	n = list(self->dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
	ASSERT_LE(2, n);
	ea = find_entry(all, n, self->a);
	eb = find_entry(all, n, self->b);
	ASSERT_NE(NULL, ea);
	ASSERT_NE(NULL, eb);
	EXPECT_EQ(2 * PG, ea->size);
	EXPECT_EQ(0, ea->uid);
	EXPECT_EQ(0, ea->gid);
	EXPECT_EQ(0640, ea->mode);
	EXPECT_EQ(2, ea->files);
	EXPECT_EQ(1, ea->mappings);
	EXPECT_EQ(PG, eb->size);
	EXPECT_EQ(65534, eb->uid);
	EXPECT_EQ(65534, eb->gid);
	EXPECT_EQ(0604, eb->mode);
	EXPECT_EQ(0, eb->files);	/* its creator exited */
	EXPECT_LT(ea->id, eb->id);	/* creation order */
	EXPECT_EQ(all[n - 1].id, cursor);

	munmap(map, 2 * PG);
	close(fd2);
	cursor = 0;
	n = list(self->dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
	ea = find_entry(all, n, self->a);
	ASSERT_NE(NULL, ea);
	EXPECT_EQ(1, ea->files);
	EXPECT_EQ(0, ea->mappings);
	close(fd1);
}

TEST_F(names, list_pages_with_a_cursor_and_never_repeats)
{
	static struct syncmem_region_entry all[SYNCMEM_REGION_LIST_MAX];
	struct syncmem_region_entry one;
	uint64_t cursor = 0, last = 0;
	int total, seen = 0, n;

	ASSERT_EQ(0, child_open(0, self->a, SYNCMEM_REGION_CREATE, PG, 0600));
	ASSERT_EQ(0, child_open(0, self->b, SYNCMEM_REGION_CREATE, PG, 0600));
	total = list(self->dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
	ASSERT_LE(2, total);
	cursor = 0;
	while ((n = list(self->dev, &one, 1, &cursor)) == 1) {
		EXPECT_LT(last, one.id);
		EXPECT_EQ(one.id, cursor);
		last = one.id;
		seen++;
		ASSERT_GE(total, seen);
	}
	EXPECT_EQ(0, n);
	EXPECT_EQ(total, seen);
	/* Unlinked between two calls: gone from the rest of the listing. */
	cursor = 0;
	ASSERT_EQ(1, list(self->dev, &one, 1, &cursor));
	EXPECT_EQ(0, raw_unlink(self->dev, self->b));
	n = list(self->dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
	EXPECT_EQ(NULL, find_entry(all, n, self->b));
}

TEST_F(names, list_errnos)
{
	struct syncmem_region_list l = { .count = 1 };
	struct syncmem_region_entry e;

	ASSERT_EQ(0, child_open(0, self->a, SYNCMEM_REGION_CREATE, PG, 0600));
	l.entries = (uintptr_t)&e;
	l.flags = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_LIST, &l));
	l.flags = 0;
	l.count = SYNCMEM_REGION_LIST_MAX + 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_LIST, &l));
	l.count = 1;
	l.entries = 8;	/* not mapped */
	EXPECT_EQ(-EFAULT, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_LIST, &l));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_LIST, (void *)8));
	l.entries = (uintptr_t)&e;
	l.count = 0;
	EXPECT_EQ(0, raw_ioctl(self->dev, SYNCMEM_IOC_REGION_LIST, &l));
	EXPECT_EQ(0, l.count);
}

TEST_F(names, region_info_has_owner_and_mode)
{
	struct syncmem_region_info info;
	int fd;

	umask(0);
	fd = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, PG, 0640, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, raw_ioctl(fd, SYNCMEM_IOC_REGION_INFO, &info));
	EXPECT_EQ(0640, info.mode);
	EXPECT_EQ(0, info.uid);
	EXPECT_EQ(0, info.gid);
	EXPECT_EQ(1, info.files);
	EXPECT_EQ(0, info.mappings);
	EXPECT_TRUE(info.flags & SYNCMEM_INFO_NAMED);
	close(fd);
	fd = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, raw_ioctl(fd, SYNCMEM_IOC_REGION_INFO, &info));
	EXPECT_EQ(0600, info.mode);
	EXPECT_FALSE(info.flags & SYNCMEM_INFO_NAMED);
	close(fd);
}

/* In a child: new namespaces (@flags), then STATS must show nothing else's. */
static int child_stats_alone(int flags, int uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_stats s;
		int dev;

		if (uid && (become_nobody() || prctl(PR_SET_DUMPABLE, 1)))
			_exit(2);
		if (unshare(flags))
			_exit(errno == EINVAL || errno == EPERM ? 4 : 3);
		dev = dev_open();
		s = get_stats(dev);
		_exit(s.regions == 0 && s.region_bytes == 0 && s.named_regions == 0 &&
		      s.handles == 1 && s.waiters == 0 && s.async_waits == 0 ? 0 : 1);
	}
	return wait_exit(pid);
}

TEST_F(names, stats_show_only_the_callers_namespace_and_user)
{
	struct syncmem_stats s, mine;
	int fd, status;

	fd = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, PG, 0600, NULL);
	ASSERT_LE(0, fd);
	s = get_stats(self->dev);
	EXPECT_LE(1, s.regions);
	EXPECT_LE(1, s.named_regions);
	EXPECT_LE(1, s.handles);
	EXPECT_LE(1, s.user_regions);
	EXPECT_LE(PG, s.user_bytes);
	/* A root process in a new IPC namespace sees nothing of ours. */
	EXPECT_EQ(0, child_stats_alone(CLONE_NEWIPC, 0));
	/* An unprivileged one in new user and IPC namespaces neither. */
	status = child_stats_alone(CLONE_NEWUSER | CLONE_NEWIPC, 65534);
	if (status != 4)
		EXPECT_EQ(0, status);
	/* Another user's counters are its own. */
	pid_t pid = fork();

	if (pid == 0) {
		if (become_nobody())
			_exit(2);
		mine = get_stats(dev_open());
		_exit(mine.user_regions == 0 && mine.user_bytes == 0 ? 0 : 1);
	}
	EXPECT_EQ(0, wait_exit(pid));
	close(fd);
}

TEST_F(names, create_never_opens_another_users_region)
{
	unsigned long long saved = get_param("protected_names");
	int fd;

	ASSERT_EQ(1, saved);
	/* nobody squats the name the others meant to create. */
	ASSERT_EQ(0, child_open(65534, self->a, SYNCMEM_REGION_CREATE, PG, 0666));
	fd = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, PG, 0600, NULL);
	EXPECT_EQ(-EACCES, fd);
	EXPECT_EQ(100 - EACCES, child_open(65533, self->a, SYNCMEM_REGION_CREATE, PG, 0600));
	/* Opening it knowingly (no CREATE) is up to its mode. */
	fd = raw_region_open(self->dev, self->a, 0, 0, 0, NULL);
	EXPECT_LE(0, fd);
	close(fd);
	EXPECT_EQ(0, child_open(65533, self->a, 0, 0, 0));
	/* Its owner may. */
	EXPECT_EQ(0, child_open(65534, self->a, SYNCMEM_REGION_CREATE, PG, 0600));
	/* The knob turns it off. */
	ASSERT_EQ(0, set_param("protected_names", 0));
	fd = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, PG, 0600, NULL);
	EXPECT_LE(0, fd);
	close(fd);
	set_param("protected_names", saved);
}

TEST_F(names, unlink_needs_ownership)
{
	ASSERT_EQ(0, child_open(0, self->a, SYNCMEM_REGION_CREATE, PG, 0666));
	pid_t pid = fork();

	if (pid == 0) {
		if (become_nobody())
			_exit(2);
		_exit(raw_unlink(dev_open(), self->a) == -EPERM ? 0 : 1);
	}
	EXPECT_EQ(0, wait_exit(pid));
	ASSERT_EQ(0, child_open(65534, self->b, SYNCMEM_REGION_CREATE, PG, 0600));
	/* Root has CAP_FOWNER. */
	EXPECT_EQ(0, raw_unlink(self->dev, self->b));
}

/* What syncmemctl (built beside the selftests) prints for @args. */
static int syncmemctl(const char *args, char *out, size_t cap)
{
	char cmd[256];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "../tools/syncmemctl %s 2>&1", args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < cap && fgets(out + n, (int)(cap - n), p))
		n += strlen(out + n);
	return pclose(p);
}

TEST_F(names, syncmemctl_lists_names_with_hostile_bytes_escaped)
{
	static char out[1 << 16];
	char evil[128], *line;
	int fd;

	ASSERT_EQ(0, access("../tools/syncmemctl", X_OK)) TH_LOG("run from the built selftests");
	/* A name that would forge a line of the listing and move the cursor. */
	snprintf(evil, sizeof(evil), "%s\n%-12d fake\x1b[2J", self->b, 1);
	umask(0);
	fd = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, 3 * PG, 0640, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, child_open(0, evil, SYNCMEM_REGION_CREATE, PG, 0600));
	ASSERT_EQ(0, syncmemctl("regions", out, sizeof(out)));
	EXPECT_EQ(NULL, strchr(out, '\x1b'));
	EXPECT_EQ(NULL, strstr(out, "\n1            fake"));
	line = strstr(out, self->a);
	ASSERT_NE(NULL, line);
	while (line > out && line[-1] != '\n')
		line--;
	EXPECT_EQ(0, strncmp(line, "12288", 5)) TH_LOG("%.80s", line);
	EXPECT_NE(NULL, strstr(line, " 00640 "));
	EXPECT_NE(NULL, strstr(out, "\\x0a1"));
	EXPECT_NE(NULL, strstr(out, "\\x1b[2J"));
	raw_unlink(self->dev, evil);
	close(fd);
}

/* What a user who may not open a region saw of it (filled by a child). */
struct hidden_view {
	int listed;			/* entries found, or -errno */
	int open_err;			/* opening the 0600 region read-only */
	struct syncmem_region_entry a, b;
	int userns_err;			/* unshare(CLONE_NEWUSER) */
	struct syncmem_region_entry a_userns;	/* a, seen with all caps there */
	int ctl_status;
	char ctl[8192], ctl_json[8192];
};

/*
 * Another user lists the namespace: of a 0600 region it sees what ls -l
 * shows of /dev/shm (name, size, owner, group, mode), never its live
 * counts, which would tell when its users come and go, wait and wake; of a
 * region it may open it sees them all. syncmemctl shows "-" (JSON null)
 * for what it may not see.
 */
TEST_F(names, list_hides_live_counts_of_regions_the_caller_may_not_open)
{
	static struct syncmem_region_entry all[SYNCMEM_REGION_LIST_MAX];
	const struct syncmem_region_entry *e;
	struct hidden_view *v;
	char want[160], *line;
	uint64_t cursor = 0;
	int fa, fb, h, n;
	void *map;
	pid_t pid;

	ASSERT_EQ(0, access("../tools/syncmemctl", X_OK)) TH_LOG("run from the built selftests");
	v = mmap(NULL, sizeof(*v), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, v);
	umask(0);
	fa = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, 2 * PG, 0600, NULL);
	ASSERT_LE(0, fa);
	fb = raw_region_open(self->dev, self->b, SYNCMEM_REGION_CREATE, PG, 0644, NULL);
	ASSERT_LE(0, fb);
	map = mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fa, 0);
	ASSERT_NE(MAP_FAILED, map);
	h = dev_open();
	ASSERT_LE(0, h);
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_wait_async(h, fa, 0, 0, SYNCMEM_NO_DEADLINE, 1));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int dev;

		if (become_nobody())
			_exit(2);
		dev = dev_open();
		v->open_err = raw_region_open(dev, self->a, SYNCMEM_REGION_RDONLY, 0, 0, NULL);
		v->listed = list(dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
		for (int i = 0; i < v->listed; i++) {
			if (all[i].name_len == strlen(self->a) && !strcmp(all[i].name, self->a))
				v->a = all[i];
			if (all[i].name_len == strlen(self->b) && !strcmp(all[i].name, self->b))
				v->b = all[i];
		}
		v->ctl_status = syncmemctl("regions", v->ctl, sizeof(v->ctl)) |
				syncmemctl("regions --json", v->ctl_json, sizeof(v->ctl_json));
		/* Every capability in a user namespace of its own: not over root's. */
		v->userns_err = unshare(CLONE_NEWUSER) ? -errno : 0;
		cursor = 0;
		n = list(dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
		for (int i = 0; i < n; i++)
			if (all[i].name_len == strlen(self->a) && !strcmp(all[i].name, self->a))
				v->a_userns = all[i];
		_exit(0);
	}
	ASSERT_EQ(0, wait_exit(pid));
	EXPECT_EQ(-EACCES, v->open_err);
	EXPECT_LE(2, v->listed);
	/* The 0600 region: ls -l's columns, and no live counts. */
	EXPECT_EQ(2 * PG, v->a.size);
	EXPECT_EQ(0, v->a.uid);
	EXPECT_EQ(0, v->a.gid);
	EXPECT_EQ(0600, v->a.mode);
	EXPECT_EQ(strlen(self->a), v->a.name_len);
	EXPECT_EQ(SYNCMEM_COUNT_HIDDEN, v->a.files);
	EXPECT_EQ(SYNCMEM_COUNT_HIDDEN, v->a.mappings);
	EXPECT_EQ(SYNCMEM_COUNT_HIDDEN, v->a.waiters);
	EXPECT_EQ(0, v->userns_err);
	EXPECT_EQ(0600, v->a_userns.mode);
	EXPECT_EQ(SYNCMEM_COUNT_HIDDEN, v->a_userns.files);
	EXPECT_EQ(SYNCMEM_COUNT_HIDDEN, v->a_userns.waiters);
	/* The 0644 region opens read-only: its counts are the caller's to see. */
	EXPECT_EQ(0644, v->b.mode);
	EXPECT_EQ(1, v->b.files);
	EXPECT_EQ(0, v->b.mappings);
	EXPECT_EQ(0, v->b.waiters);
	/* Its owner sees them all. */
	n = list(self->dev, all, SYNCMEM_REGION_LIST_MAX, &cursor);
	e = find_entry(all, n, self->a);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1, e->files);
	EXPECT_EQ(1, e->mappings);
	EXPECT_EQ(1, e->waiters);

	EXPECT_EQ(0, v->ctl_status);
	line = strstr(v->ctl, self->a);
	ASSERT_NE(NULL, line) TH_LOG("%s", v->ctl);
	while (line > v->ctl && line[-1] != '\n')
		line--;
	/* SIZE UID GID MODE FILES MAPPINGS WAITERS OBJECTS NAME */
	snprintf(want, sizeof(want), "%-12d %6d %6d %05o %6s %8s %7s %7s  %s\n",
		 2 * PG, 0, 0, 0600, "-", "-", "-", "-", self->a);
	EXPECT_EQ(0, strncmp(line, want, strlen(want))) TH_LOG("%.100s", line);
	line = strstr(v->ctl_json, self->a);
	ASSERT_NE(NULL, line) TH_LOG("%s", v->ctl_json);
	EXPECT_NE(NULL, strstr(line, "\"files\":null")) TH_LOG("%.300s", line);
	EXPECT_NE(NULL, strstr(line, "\"mappings\":null"));
	EXPECT_NE(NULL, strstr(line, "\"waiters\":null"));

	close(h);
	munmap(map, 2 * PG);
	close(fa);
	close(fb);
	munmap(v, sizeof(*v));
}

/*
 * A child that dies in an IPC namespace of its own holding @shm_size bytes
 * of SysV memory (which lives exactly as long as the namespace) and a name.
 */
static int die_in_namespace(size_t shm_size)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_region *r;
		int id;
		char *p;

		if (unshare(CLONE_NEWIPC))
			_exit(2);
		id = shmget(IPC_PRIVATE, shm_size, IPC_CREAT | 0600);
		p = id < 0 ? NULL : shmat(id, NULL, 0);
		if (!p || p == (void *)-1)
			_exit(3);
		memset(p, 1, shm_size);
		shmdt(p);
		if (syncmem_open("dead-ns", PG, SYNCMEM_CREATE, 0600, &r))
			_exit(4);
		syncmem_close(r);
		_exit(0);
	}
	return wait_exit(pid);
}

/* Shmem drops back below @base + a quarter of @size within 10 s: its value. */
static long await_shmem_below(long base, size_t size)
{
	long now = meminfo_kb("Shmem");

	for (int i = 0; i < 100 && now >= base + (long)(size >> 10) / 4; i++) {
		usleep(100 * 1000);
		now = meminfo_kb("Shmem");
	}
	return now;
}

TEST(dead_ipc_namespace_is_released_without_any_syncmem_call)
{
	const size_t shm_size = 64 << 20;
	long base = meminfo_kb("Shmem"), now;

	ASSERT_LE(0, base);
	ASSERT_EQ(0, die_in_namespace(shm_size));
	/* No syncmem call from here on: the namespace must still go. */
	now = await_shmem_below(base, shm_size);
	EXPECT_GT(base + (long)(shm_size >> 10) / 4, now)
		TH_LOG("Shmem %ld kB, was %ld kB before the namespace", now, base);
}

/* Every 300 ms, a fresh IPC namespace starts using syncmem. */
static pid_t namespace_churner(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;) {
			pid_t c = fork();

			if (c == 0)
				_exit(unshare(CLONE_NEWIPC) || dev_open() < 0);
			wait_exit(c);
			usleep(300 * 1000);
		}
	}
	return pid;
}

TEST(dead_ipc_namespace_is_released_while_new_ones_keep_coming)
{
	const size_t shm_size = 64 << 20;
	long base = meminfo_kb("Shmem"), now;
	pid_t churner;

	ASSERT_LE(0, base);
	churner = namespace_churner();
	ASSERT_LT(0, churner);
	ASSERT_EQ(0, die_in_namespace(shm_size));
	now = await_shmem_below(base, shm_size);
	kill(churner, SIGKILL);
	wait_exit(churner);
	EXPECT_GT(base + (long)(shm_size >> 10) / 4, now)
		TH_LOG("Shmem %ld kB, was %ld kB before the namespace", now, base);
}

TEST_F(names, every_region_has_its_own_inode)
{
	struct stat s1, s2, s3;
	char line[512];
	int a1, a2, anon;
	void *map;
	bool found = false;
	FILE *maps;

	umask(0);
	a1 = raw_region_open(self->dev, self->a, SYNCMEM_REGION_CREATE, 3 * PG, 0640, NULL);
	a2 = raw_region_open(self->dev, self->a, 0, 0, 0, NULL);
	anon = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	ASSERT_LE(0, a1);
	ASSERT_LE(0, a2);
	ASSERT_LE(0, anon);
	ASSERT_EQ(0, fstat(a1, &s1));
	ASSERT_EQ(0, fstat(a2, &s2));
	ASSERT_EQ(0, fstat(anon, &s3));
	EXPECT_EQ(s1.st_ino, s2.st_ino);
	EXPECT_EQ(s1.st_dev, s3.st_dev);
	EXPECT_NE(s1.st_ino, s3.st_ino);
	EXPECT_EQ(0640, s1.st_mode & 07777);
	EXPECT_EQ(0600, s3.st_mode & 07777);
	EXPECT_EQ(0, s1.st_uid);
	EXPECT_EQ(3 * PG, s1.st_size);
	/* Owner and mode are not changed behind syncmem's back. */
	EXPECT_EQ(-1, fchmod(a1, 0666));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, ftruncate(a1, PG));

	map = mmap(NULL, PG, PROT_READ, MAP_SHARED, a1, 0);
	ASSERT_NE(MAP_FAILED, map);
	maps = fopen("/proc/self/maps", "r");
	ASSERT_NE(NULL, maps);
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "syncmem:") && strstr(line, self->a))
			found = true;
	fclose(maps);
	EXPECT_TRUE(found);
	munmap(map, PG);
	close(a1);
	close(a2);
	close(anon);
}

TEST_F(names, read_implies_exec_processes_map_regions)
{
	int fd = raw_region_open(self->dev, NULL, 0, PG, 0, NULL);
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	if (pid == 0) {
		char line[512];
		void *p, *q;
		FILE *maps;
		int exec = 0;

		if (personality(READ_IMPLIES_EXEC) == -1)
			_exit(2);
		p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
		q = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || q == MAP_FAILED)
			_exit(3);
		/* Neither is executable, and asking for it still fails. */
		maps = fopen("/proc/self/maps", "r");
		while (maps && fgets(line, sizeof(line), maps))
			if (strstr(line, "syncmem:") && strchr(line, ' ')[3] == 'x')
				exec++;	/* "start-end rwxs ..." */
		if (exec)
			_exit(4);
		if (mmap(NULL, PG, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0) != MAP_FAILED ||
		    errno != EPERM)
			_exit(5);
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
	close(fd);
}

TEST_HARNESS_MAIN
