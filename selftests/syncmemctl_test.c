// SPDX-License-Identifier: GPL-2.0
/*
 * syncmemctl's introspection commands, run as a user would run them: a
 * deadlock of two processes on two named locks in two regions (and a third
 * process queued behind, outside the cycle) found by "deadlocks --json",
 * the queues "waiters --json" lists in arrival order, the holder "locks
 * --json" names, no deadlock when there is none, "top --json", and region
 * names of any bytes coming out of "regions --json" intact.
 *
 * The tool is the one built beside the selftests: ../tools/syncmemctl from
 * this program's directory. Its output is read with the small JSON parser
 * below.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define PG 4096
#define LONG_WAIT_NS (60 * 1000000000LL)	/* killed long before */

/* ---- a small JSON parser (values as syncmemctl writes them) ---- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jtype t;
	long long num;		/* J_NUM (integers only), J_BOOL */
	char *str;		/* J_STR: decoded bytes, NUL-terminated */
	size_t len;
	struct jv *items;	/* J_ARR, J_OBJ */
	char **keys;		/* J_OBJ */
	int n;
};

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *parse_value(const char *p, struct jv *v, int depth);

/* A string into @out (@len bytes, NUL-terminated): past its quote, or NULL. */
static const char *parse_string(const char *p, char **out, size_t *len)
{
	size_t n = 0;
	char *s;

	if (*p++ != '"')
		return NULL;
	s = malloc(strlen(p) + 1);
	if (!s)
		return NULL;
	while (*p && *p != '"') {
		if (*p != '\\') {
			s[n++] = *p++;
			continue;
		}
		p++;
		if (*p == 'u') {
			unsigned int c;

			if (sscanf(p + 1, "%4x", &c) != 1 || c > 0xff)
				goto bad;	/* syncmemctl writes bytes only */
			s[n++] = (char)c;
			p += 5;
		} else if (*p == '"' || *p == '\\' || *p == '/') {
			s[n++] = *p++;
		} else {
			goto bad;
		}
	}
	if (*p != '"')
		goto bad;
	s[n] = '\0';
	*out = s;
	*len = n;
	return p + 1;
bad:
	free(s);
	return NULL;
}

static const char *parse_items(const char *p, struct jv *v, char close, int depth)
{
	p = skip_ws(p);
	if (*p == close)
		return p + 1;
	for (;;) {
		struct jv *items = realloc(v->items, (v->n + 1) * sizeof(*items));
		char **keys = v->t == J_OBJ ? realloc(v->keys, (v->n + 1) * sizeof(*keys)) : NULL;
		size_t len;

		if (!items || (v->t == J_OBJ && !keys))
			return NULL;
		v->items = items;
		if (keys)
			v->keys = keys;
		memset(&items[v->n], 0, sizeof(items[v->n]));
		if (v->t == J_OBJ) {
			keys[v->n] = NULL;
			p = parse_string(skip_ws(p), &keys[v->n], &len);
			if (!p || *(p = skip_ws(p)) != ':')
				return NULL;
			p++;
		}
		p = parse_value(p, &items[v->n++], depth + 1);
		if (!p)
			return NULL;
		p = skip_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *parse_value(const char *p, struct jv *v, int depth)
{
	char *end;

	p = skip_ws(p);
	if (depth > 32)
		return NULL;
	if (*p == '{' || *p == '[') {
		v->t = *p == '{' ? J_OBJ : J_ARR;
		return parse_items(p + 1, v, *p == '{' ? '}' : ']', depth);
	}
	if (*p == '"') {
		v->t = J_STR;
		return parse_string(p, &v->str, &v->len);
	}
	if (!strncmp(p, "null", 4)) {
		v->t = J_NULL;
		return p + 4;
	}
	if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
		v->t = J_BOOL;
		v->num = *p == 't';
		return p + (*p == 't' ? 4 : 5);
	}
	/* Words and owner ids go up to 2^64 - 1: kept as their bits. */
	v->t = J_NUM;
	errno = 0;
	if (*p == '-')
		v->num = strtoll(p, &end, 10);
	else
		v->num = (long long)strtoull(p, &end, 10);
	return end == p || errno ? NULL : end;
}

static void jv_free(struct jv *v)
{
	for (int i = 0; i < v->n; i++) {
		jv_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

/* The whole of @text as one document: 0, or -1 (and @v freed). */
static int jv_parse(const char *text, struct jv *v)
{
	const char *end;

	memset(v, 0, sizeof(*v));
	end = parse_value(text, v, 0);
	if (end && !*skip_ws(end))
		return 0;
	jv_free(v);
	return -1;
}

static const struct jv null_value = { .t = J_NULL };

/* Member @key of an object, element @i of an array: a null value if none. */
static const struct jv *jget(const struct jv *v, const char *key)
{
	for (int i = 0; v->t == J_OBJ && i < v->n; i++)
		if (!strcmp(v->keys[i], key))
			return &v->items[i];
	return &null_value;
}

static const struct jv *jat(const struct jv *v, int i)
{
	return v->t == J_ARR && i >= 0 && i < v->n ? &v->items[i] : &null_value;
}

static long long jnum(const struct jv *v, const char *key)
{
	const struct jv *m = jget(v, key);

	return m->t == J_NUM || m->t == J_BOOL ? m->num : LLONG_MIN;
}

static const char *jstr(const struct jv *v, const char *key)
{
	const struct jv *m = jget(v, key);

	return m->t == J_STR ? m->str : "(none)";
}

/* ---- running syncmemctl ---- */

static char ctl_path[PATH_MAX];

/* ../tools/syncmemctl beside this program: 0, or -1 when it is not there. */
static int find_ctl(void)
{
	char self[PATH_MAX - 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(ctl_path, sizeof(ctl_path), "%s/../tools/syncmemctl", self);
	return access(ctl_path, X_OK);
}

/* Run syncmemctl @args; its stdout in @out. Its exit status, or -1. */
static int run_ctl(const char *args, char *out, size_t cap)
{
	char cmd[PATH_MAX + 512];
	size_t n = 0, got;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s", ctl_path, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < cap && (got = fread(out + n, 1, cap - n - 1, p)) > 0)
		n += got;
	out[n] = '\0';
	st = pclose(p);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Run syncmemctl @args and parse its output into @v: its exit status, or -1. */
static int run_ctl_json(const char *args, struct jv *v)
{
	static char out[1 << 20];
	int st = run_ctl(args, out, sizeof(out));

	if (st < 0 || jv_parse(out, v)) {
		fprintf(stderr, "# syncmemctl %s: status %d, output:\n%s\n", args, st, out);
		return -1;
	}
	return st;
}

/* ---- the processes ---- */

FIXTURE(ctl) {
	char n1[64], n2[64];
	struct syncmem_region *r1, *r2;
	struct syncmem_lock *a, *b;
	pid_t kids[3];
	int nkids;
};

FIXTURE_SETUP(ctl)
{
	ASSERT_EQ(0, find_ctl()) TH_LOG("no %s: build the tools", ctl_path);
	snprintf(self->n1, sizeof(self->n1), "ctl-%d-1", getpid());
	snprintf(self->n2, sizeof(self->n2), "ctl-%d-2", getpid());
	ASSERT_EQ(0, syncmem_open(self->n1, PG, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &self->r1));
	ASSERT_EQ(0, syncmem_open(self->n2, PG, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &self->r2));
	/* 'a' at the start of one region, 'b' further into the other. */
	self->a = syncmem_base(self->r1);
	self->b = (struct syncmem_lock *)((char *)syncmem_base(self->r2) + 0x40);
	syncmem_lock_init(self->a, 0);
	syncmem_lock_init(self->b, 0);
	ASSERT_EQ(0, syncmem_name_object(self->r1, self->a, sizeof(*self->a),
					 SYNCMEM_OBJ_LOCK, "a"));
	ASSERT_EQ(0, syncmem_name_object(self->r2, self->b, sizeof(*self->b),
					 SYNCMEM_OBJ_LOCK, "b"));
}

FIXTURE_TEARDOWN(ctl)
{
	for (int i = 0; i < self->nkids; i++)
		kill(self->kids[i], SIGKILL);
	for (int i = 0; i < self->nkids; i++)
		waitpid(self->kids[i], NULL, 0);
	syncmem_close(self->r1);
	syncmem_close(self->r2);
	syncmem_unlink(self->n1);
	syncmem_unlink(self->n2);
}

/*
 * A child that takes @hold (if any), says so on @ready, waits for a byte
 * on @go (if @hold), then waits for @want a long time. Its pid.
 */
static pid_t locker(struct syncmem_region *hr, struct syncmem_lock *hold,
		    struct syncmem_region *wr, struct syncmem_lock *want, int *go)
{
	int ready[2], gofd[2] = { -1, -1 };
	pid_t pid;
	char c = 0;

	if (pipe(ready) || (hold && pipe(gofd)))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (hold && syncmem_lock(hr, hold))
			_exit(10);
		if (write(ready[1], &c, 1) != 1 || (hold && read(gofd[0], &c, 1) != 1))
			_exit(11);
		_exit(syncmem_lock_timed(wr, want, LONG_WAIT_NS) ? 12 : 0);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	if (hold) {
		close(gofd[0]);
		*go = gofd[1];
	}
	return pid;
}

static int release(int *go)
{
	char c = 0;
	int ok = write(*go, &c, 1) == 1;

	close(*go);
	*go = -1;
	return ok ? 0 : -1;
}

/* Poll until @n waiters are queued in @r (20 s at most): 1 if they are. */
static int await_queued(struct syncmem_region *r, int n)
{
	for (int i = 0; i < 20000; i++) {
		if (syncmem_waiters(r, NULL, NULL, 0) == n)
			return 1;
		usleep(1000);
	}
	return 0;
}

/* The test's children: A holds 'a', B holds 'b'; each then waits for the other's. */
static void start_deadlock(struct __test_metadata *_metadata, FIXTURE_DATA(ctl) *self)
{
	int go_a, go_b;

	self->kids[0] = locker(self->r1, self->a, self->r2, self->b, &go_a);
	ASSERT_LT(0, self->kids[0]);
	self->nkids = 1;
	self->kids[1] = locker(self->r2, self->b, self->r1, self->a, &go_b);
	ASSERT_LT(0, self->kids[1]);
	self->nkids = 2;
	/* A queues on 'b' first, then B on 'a': the arrival order is known. */
	ASSERT_EQ(0, release(&go_a));
	ASSERT_TRUE(await_queued(self->r2, 1));
	ASSERT_EQ(0, release(&go_b));
	ASSERT_TRUE(await_queued(self->r1, 1));
}

/* C: waits for 'a' behind B, in no cycle. */
static void start_bystander(struct __test_metadata *_metadata, FIXTURE_DATA(ctl) *self,
			    int queued)
{
	self->kids[self->nkids] = locker(NULL, NULL, self->r1, self->a, NULL);
	ASSERT_LT(0, self->kids[self->nkids]);
	self->nkids++;
	ASSERT_TRUE(await_queued(self->r1, queued));
}

TEST_F_TIMEOUT(ctl, deadlock_of_two_across_two_regions_with_a_bystander, 120)
{
	static char text[1 << 16];
	pid_t pa, pb, pc;
	struct jv v;
	const struct jv *cyc, *w;
	char args[256];

	start_deadlock(_metadata, self);
	start_bystander(_metadata, self, 2);
	pa = self->kids[0];
	pb = self->kids[1];
	pc = self->kids[2];

	/* Exactly one cycle, of A and B, naming both locks. */
	ASSERT_EQ(1, run_ctl_json("deadlocks --json", &v));
	EXPECT_EQ(0, jnum(&v, "unopened"));
	ASSERT_EQ(J_ARR, jget(&v, "deadlocks")->t);
	ASSERT_EQ(1, jget(&v, "deadlocks")->n);
	cyc = jget(jat(jget(&v, "deadlocks"), 0), "owners");
	ASSERT_EQ(2, cyc->n);
	for (int i = 0; i < 2; i++) {
		const struct jv *o = jat(cyc, i);
		bool is_a = jnum(o, "pid") == pa;

		EXPECT_TRUE(is_a || jnum(o, "pid") == pb) TH_LOG("pid %lld", jnum(o, "pid"));
		EXPECT_NE(pc, jnum(o, "pid"));
		EXPECT_EQ(jnum(o, "pid"), jnum(o, "tid"));
		EXPECT_STREQ(is_a ? "a" : "b", jstr(jget(jget(o, "holds"), "object"), "name"));
		EXPECT_STREQ(is_a ? "b" : "a",
			     jstr(jget(jget(o, "waits_for"), "object"), "name"));
		EXPECT_STREQ(is_a ? self->n2 : self->n1, jstr(jget(o, "waits_for"), "region"));
		EXPECT_EQ(is_a ? 0x40 : 0, jnum(jget(o, "waits_for"), "offset"));
	}
	EXPECT_NE(jnum(jat(cyc, 0), "pid"), jnum(jat(cyc, 1), "pid"));
	jv_free(&v);

	/* The same as text, for people. */
	EXPECT_EQ(1, run_ctl("deadlocks", text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "deadlock: 2 owners")) TH_LOG("%s", text);
	snprintf(args, sizeof(args), "pid %d tid %d holds lock 'a' (region %s, 0x0) and "
		 "waits for lock 'b' (region %s, 0x40)", pa, pa, self->n1, self->n2);
	EXPECT_NE(NULL, strstr(text, args)) TH_LOG("%s", text);

	/* 'a' is waited for by B, then C, in that order. */
	int dev = open("/dev/syncmem", O_RDWR | O_CLOEXEC);
	struct syncmem_on_close oc = {
		.region_fd = syncmem_region_fd(self->r1), .size = 4, .offset = 0x80,
		.value = 5, .user_data = 1,
	};

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, ioctl(dev, SYNCMEM_IOC_ARM_ON_CLOSE, &oc));
	snprintf(args, sizeof(args), "waiters %s --json", self->n1);
	ASSERT_EQ(0, run_ctl_json(args, &v));
	/* With what this process promised to do to the region if it dies. */
	ASSERT_EQ(1, jget(&v, "armed")->n);
	EXPECT_EQ(getpid(), jnum(jat(jget(&v, "armed"), 0), "pid"));
	EXPECT_EQ(0x80, jnum(jat(jget(&v, "armed"), 0), "offset"));
	EXPECT_EQ(5, jnum(jat(jget(&v, "armed"), 0), "value"));
	close(dev);
	EXPECT_STREQ(self->n1, jstr(&v, "region"));
	w = jget(&v, "waiters");
	ASSERT_EQ(2, w->n);
	for (int i = 0; i < 2; i++) {
		const struct jv *e = jat(w, i);

		EXPECT_EQ(i ? pc : pb, jnum(e, "pid"));
		EXPECT_EQ(i ? pc : pb, jnum(e, "tid"));
		EXPECT_EQ(i, jnum(e, "position"));
		EXPECT_EQ(0, jnum(e, "offset"));
		EXPECT_EQ(1, jnum(e, "lock"));
		EXPECT_STREQ("sync", jstr(e, "kind"));
		EXPECT_STREQ("a", jstr(jget(e, "object"), "name"));
		EXPECT_STREQ("lock", jstr(jget(e, "object"), "kind"));
		EXPECT_LE(0, jnum(e, "waited_ns"));
		EXPECT_LT(0, jnum(e, "left_ns"));
	}
	EXPECT_GE(jnum(jat(w, 0), "waited_ns"), jnum(jat(w, 1), "waited_ns"));
	jv_free(&v);

	/* A holds 'a'; B and C queue for it. */
	snprintf(args, sizeof(args), "locks %s --json", self->n1);
	ASSERT_EQ(0, run_ctl_json(args, &v));
	ASSERT_EQ(1, jget(&v, "locks")->n);
	{
		const struct jv *l = jat(jget(&v, "locks"), 0);

		EXPECT_STREQ("a", jstr(l, "name"));
		EXPECT_STREQ("held", jstr(l, "state"));
		EXPECT_EQ(pa, jnum(jget(l, "holder"), "pid"));
		EXPECT_EQ(pa, jnum(jget(l, "holder"), "tid"));
		ASSERT_EQ(2, jget(l, "waiters")->n);
		EXPECT_EQ(pb, jnum(jat(jget(l, "waiters"), 0), "pid"));
		EXPECT_EQ(pc, jnum(jat(jget(l, "waiters"), 1), "pid"));
	}
	EXPECT_EQ(0, jget(&v, "unnamed")->n);
	jv_free(&v);
}

TEST_F_TIMEOUT(ctl, no_deadlock_exits_0, 120)
{
	struct jv v;
	char args[256];
	int go;

	/* A holds 'a' (and waits for 'b', free: it gets it); C waits for 'a'. */
	self->kids[0] = locker(self->r1, self->a, self->r2, self->b, &go);
	ASSERT_LT(0, self->kids[0]);
	self->nkids = 1;
	start_bystander(_metadata, self, 1);

	ASSERT_EQ(0, run_ctl_json("deadlocks --json", &v));
	EXPECT_EQ(0, jget(&v, "deadlocks")->n);
	EXPECT_LE(1, jnum(&v, "lock_waiters"));
	jv_free(&v);
	snprintf(args, sizeof(args), "deadlocks %s %s --json", self->n1, self->n2);
	ASSERT_EQ(0, run_ctl_json(args, &v));
	EXPECT_EQ(2, jnum(&v, "regions"));
	EXPECT_EQ(1, jnum(&v, "lock_waiters"));
	jv_free(&v);

	/* One sample of the busiest words: 'a', one waiter. */
	snprintf(args, sizeof(args), "top %s --iterations 1 --json", self->n1);
	ASSERT_EQ(0, run_ctl_json(args, &v));
	ASSERT_EQ(1, jget(&v, "top")->n);
	EXPECT_STREQ(self->n1, jstr(jat(jget(&v, "top"), 0), "region"));
	EXPECT_EQ(1, jnum(jat(jget(&v, "top"), 0), "waiters"));
	EXPECT_STREQ("a", jstr(jget(jat(jget(&v, "top"), 0), "object"), "name"));
	jv_free(&v);

	EXPECT_EQ(0, release(&go));
}

TEST_F(ctl, a_rwlocks_readers_are_listed)
{
	struct syncmem_rwlock *rw = (struct syncmem_rwlock *)((char *)syncmem_base(self->r1) + 0x400);
	const struct jv *l, *readers;
	char args[256];
	struct jv v;

	syncmem_rwlock_init(rw);
	ASSERT_EQ(0, syncmem_name_object(self->r1, rw, sizeof(*rw), SYNCMEM_OBJ_RWLOCK, "cfg"));
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r1, rw));
	snprintf(args, sizeof(args), "locks %s --json", self->n1);
	ASSERT_EQ(0, run_ctl_json(args, &v));
	ASSERT_EQ(2, jget(&v, "locks")->n);		/* 'a', then 'cfg' */
	l = jat(jget(&v, "locks"), 1);
	EXPECT_STREQ("cfg", jstr(l, "name"));
	EXPECT_STREQ("free", jstr(l, "state"));	/* its turnstile: no writer */
	readers = jget(l, "readers");
	ASSERT_EQ(1, readers->n);
	EXPECT_STREQ("held", jstr(jat(readers, 0), "state"));
	EXPECT_EQ(getpid(), jnum(jget(jat(readers, 0), "holder"), "pid"));
	EXPECT_EQ(1, jnum(jat(readers, 0), "shares"));
	jv_free(&v);
	ASSERT_EQ(0, syncmem_rwlock_unlock(self->r1, rw));
}

/*
 * A Web Locks client: takes @hold in @hold_flags' mode (if any), says so on
 * @ready, waits for a byte on @go, then requests @want (mode @want_flags)
 * for a long time. Its pid.
 */
static pid_t weblocker(struct syncmem_locks *m, const char *hold, unsigned hold_flags,
		       const char *want, unsigned want_flags, int *go)
{
	int ready[2], gofd[2];
	pid_t pid;
	char c = 0;

	if (pipe(ready) || pipe(gofd))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct syncmem_held *h, *w;

		if (hold && syncmem_locks_request(m, hold, strlen(hold), hold_flags, -1, &h))
			_exit(10);
		if (write(ready[1], &c, 1) != 1 || read(gofd[0], &c, 1) != 1)
			_exit(11);
		_exit(syncmem_locks_request(m, want, strlen(want), want_flags, LONG_WAIT_NS, &w) ?
		      12 : 0);
	}
	close(ready[1]);
	close(gofd[0]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	*go = gofd[1];
	return pid;
}

TEST_F_TIMEOUT(ctl, web_locks_names_queues_and_a_deadlock, 120)
{
	static char text[1 << 16];
	const struct jv *mgr, *names, *cyc;
	struct syncmem_region *r;
	struct syncmem_locks *m;
	size_t len = syncmem_locks_footprint(8, 32);
	char rname[64], args[256];
	int go_a, go_b, go_c;
	pid_t pa, pb, pc;
	struct jv v;

	snprintf(rname, sizeof(rname), "ctl-%d-web", getpid());
	ASSERT_EQ(0, syncmem_open(rname, 1 << 20, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r));
	ASSERT_EQ(0, syncmem_locks_init(r, syncmem_base(r), len, &m));
	ASSERT_EQ(0, syncmem_name_object(r, syncmem_base(r), len, SYNCMEM_OBJ_LOCKS, "web"));
	/* A holds "db" and wants "cache"; B holds "cache" (shared) and wants "db"; C too. */
	pa = weblocker(m, "db", 0, "cache", 0, &go_a);
	ASSERT_LT(0, pa);
	self->kids[self->nkids++] = pa;
	pb = weblocker(m, "cache", SYNCMEM_LOCKS_SHARED, "db", 0, &go_b);
	ASSERT_LT(0, pb);
	self->kids[self->nkids++] = pb;
	pc = weblocker(m, NULL, 0, "db", SYNCMEM_LOCKS_SHARED, &go_c);
	ASSERT_LT(0, pc);
	self->kids[self->nkids++] = pc;
	ASSERT_EQ(0, release(&go_a));
	ASSERT_TRUE(await_queued(r, 1));
	ASSERT_EQ(0, release(&go_b));
	ASSERT_TRUE(await_queued(r, 2));
	ASSERT_EQ(0, release(&go_c));
	ASSERT_TRUE(await_queued(r, 3));

	/* Each name with its holders, then its queue in order. */
	snprintf(args, sizeof(args), "locks %s --json", rname);
	ASSERT_EQ(0, run_ctl_json(args, &v));
	ASSERT_EQ(1, jget(&v, "managers")->n);
	mgr = jat(jget(&v, "managers"), 0);
	EXPECT_STREQ("web", jstr(mgr, "name"));
	EXPECT_STREQ("locks", jstr(mgr, "kind"));
	EXPECT_EQ(J_NULL, jget(mgr, "error")->t);
	names = jget(mgr, "names");
	ASSERT_EQ(2, names->n);
	EXPECT_STREQ("db", jstr(jat(names, 0), "name"));
	ASSERT_EQ(1, jget(jat(names, 0), "held")->n);
	EXPECT_EQ(pa, jnum(jat(jget(jat(names, 0), "held"), 0), "pid"));
	EXPECT_STREQ("exclusive", jstr(jat(jget(jat(names, 0), "held"), 0), "mode"));
	ASSERT_EQ(2, jget(jat(names, 0), "pending")->n);
	EXPECT_EQ(pb, jnum(jat(jget(jat(names, 0), "pending"), 0), "pid"));
	EXPECT_EQ(0, jnum(jat(jget(jat(names, 0), "pending"), 0), "position"));
	EXPECT_EQ(pc, jnum(jat(jget(jat(names, 0), "pending"), 1), "pid"));
	EXPECT_STREQ("shared", jstr(jat(jget(jat(names, 0), "pending"), 1), "mode"));
	EXPECT_STREQ("cache", jstr(jat(names, 1), "name"));
	EXPECT_EQ(pb, jnum(jat(jget(jat(names, 1), "held"), 0), "pid"));
	EXPECT_STREQ("shared", jstr(jat(jget(jat(names, 1), "held"), 0), "mode"));
	EXPECT_EQ(pa, jnum(jat(jget(jat(names, 1), "pending"), 0), "pid"));
	EXPECT_LE(0, jnum(jat(jget(jat(names, 1), "pending"), 0), "waited_ns"));
	/* Their words are the manager's, not unnamed locks. */
	EXPECT_EQ(0, jget(&v, "unnamed")->n);
	jv_free(&v);
	snprintf(args, sizeof(args), "locks %s", rname);
	EXPECT_EQ(0, run_ctl(args, text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "locks 'web' at 0x0: 2 held, 3 pending")) TH_LOG("%s", text);
	EXPECT_NE(NULL, strstr(text, "queued 1")) TH_LOG("%s", text);

	/* A and B wait for each other; C waits behind, in no cycle. */
	snprintf(args, sizeof(args), "deadlocks %s --json", rname);
	ASSERT_EQ(1, run_ctl_json(args, &v));
	ASSERT_EQ(1, jget(&v, "deadlocks")->n);
	EXPECT_EQ(3, jnum(&v, "lock_waiters"));
	cyc = jget(jat(jget(&v, "deadlocks"), 0), "owners");
	ASSERT_EQ(2, cyc->n);
	for (int i = 0; i < 2; i++) {
		const struct jv *o = jat(cyc, i);
		bool is_a = jnum(o, "pid") == pa;

		EXPECT_TRUE(is_a || jnum(o, "pid") == pb);
		EXPECT_STREQ(is_a ? "db" : "cache", jstr(jget(o, "holds"), "name"));
		EXPECT_STREQ(is_a ? "cache" : "db", jstr(jget(o, "waits_for"), "name"));
		EXPECT_STREQ("web", jstr(jget(jget(o, "waits_for"), "object"), "name"));
		EXPECT_STREQ(rname, jstr(jget(o, "waits_for"), "region"));
	}
	jv_free(&v);
	snprintf(args, sizeof(args), "deadlocks %s", rname);
	EXPECT_EQ(1, run_ctl(args, text, sizeof(text)));
	snprintf(args, sizeof(args), "pid %d (the process) holds name \"db\" in locks 'web' "
		 "(region %s, 0x0) and waits for name \"cache\"", pa, rname);
	EXPECT_NE(NULL, strstr(text, args)) TH_LOG("%s", text);
	syncmem_locks_detach(m);
	syncmem_close(r);
	syncmem_unlink(rname);
}

TEST_F(ctl, errors_exit_2_with_the_reason)
{
	static char text[4096];
	struct jv v;

	EXPECT_EQ(2, run_ctl("waiters ctl-no-such-region 2>&1", text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "syncmemctl: waiters: cannot open region "
			       "'ctl-no-such-region': No such file or directory")) TH_LOG("%s", text);
	EXPECT_EQ(2, run_ctl("locks 2>&1", text, sizeof(text)));
	EXPECT_NE(NULL, strstr(text, "usage: syncmemctl version"));
	EXPECT_EQ(2, run_ctl("deadlocks ctl-no-such-region --json 2>/dev/null", text, sizeof(text)));
	EXPECT_EQ(-1, jv_parse(text, &v));	/* no document on stdout */
}

TEST_F(ctl, region_names_of_any_bytes_survive_json)
{
	struct syncmem_region *r;
	char evil[64];
	struct jv v;
	const struct jv *list;
	int found = 0;

	/* Quotes, a backslash, a newline, an escape sequence, DEL and a high byte. */
	snprintf(evil, sizeof(evil), "ctl-%d-\"\\\n\x1b[2J\xff\x7f", getpid());
	umask(022);
	ASSERT_EQ(0, syncmem_open(evil, PG, SYNCMEM_CREATE | SYNCMEM_EXCL, 0640, &r));
	syncmem_close(r);
	ASSERT_EQ(0, run_ctl_json("regions --json", &v));
	list = jget(&v, "regions");
	for (int i = 0; i < list->n; i++) {
		const struct jv *e = jat(list, i);

		if (strcmp(jstr(e, "name"), evil))
			continue;
		found++;
		EXPECT_EQ(PG, jnum(e, "size"));
		EXPECT_STREQ("0640", jstr(e, "mode"));
		EXPECT_EQ(0, jnum(e, "objects"));
	}
	EXPECT_EQ(1, found);
	jv_free(&v);
	syncmem_unlink(evil);
}

TEST_HARNESS_MAIN
