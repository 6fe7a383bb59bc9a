// SPDX-License-Identifier: GPL-2.0
/*
 * Collisions: two calls on the same objects started at the same instant on
 * two threads, so that their windows in the kernel overlap even on a kernel
 * without preemption (the debug kernel), where a race needs both vCPUs in
 * the module at once. Each worker has a partner thread; a fuzzing thread
 * hands it one side of a pair (WAIT_ASYNC against CANCEL of the same
 * user_data, against CANCEL_ALL, against close of the handle; two CANCELs
 * of one wait; NOTIFY against a deadline; ARM_ON_CLOSE against close; REGION_OPEN against
 * REGION_UNLINK; POST against WAIT_ASYNC of one user_data; read against
 * CANCEL_ALL; WAITERS and fdinfo against the queueing, cancelling and
 * closing of what they list; OBJECT_NAME against OBJECTS and close; ARMED
 * against ARM_ON_CLOSE, DISARM and the close of the handle), both
 * spin on a start flag, and both results are judged.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz.h"

enum collide_state {
	C_IDLE,
	C_POSTED,	/* a job waits for the partner */
	C_READY,	/* the partner took it and spins */
	C_GO,
	C_DONE,		/* the partner finished its side */
};

struct side {
	void (*fn)(struct thread_ctx *t, const struct side *s);
	struct obj h, r;	/* a handle and a region of the table */
	int hslot, rslot;
	uint64_t user_data, offset, expected, deadline;
	uint32_t width;
	unsigned int delay;	/* spins before the call: sweeps the overlap */
};

static unsigned int log_uniform(struct rng *r)
{
	unsigned int scale = 1u << rng_below(r, 15);

	return scale + (unsigned int)rng_below(r, scale);
}

static void delay(unsigned int spins)
{
	for (volatile unsigned int i = 0; i < spins; i++)
		;
}

static struct {
	pthread_mutex_t submit;
	atomic_int state;
	struct side job;
	bool running;
	char who[96];	/* the worker's name, for findings */
} partner = { .submit = PTHREAD_MUTEX_INITIALIZER };

static void futex_wait(atomic_int *word, int val, long ns)
{
	struct timespec ts = { 0, ns };

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(atomic_int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Spin until *@word leaves @val, yielding now and then; false after @ns (UINT64_MAX: never). */
static bool spin_while(atomic_int *word, int val, uint64_t ns)
{
	uint64_t now = now_ns(), until = ns > UINT64_MAX - now ? UINT64_MAX : now + ns;

	for (unsigned int i = 0; atomic_load(word) == val; i++) {
		if (i % 64 == 63) {
			if (now_ns() > until)
				return false;
			sched_yield();
		}
	}
	return true;
}

/* ---- the sides ---------------------------------------------------------- */

static bool side_stable(const struct side *s)
{
	return obj_unchanged(s->hslot, &s->h) && obj_unchanged(s->rslot, &s->r);
}

static void wait_async(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_wait_async arg = {
		.region_fd = s->r.fd, .size = s->width, .offset = s->offset,
		.expected = s->expected, .deadline_ns = s->deadline, .user_data = s->user_data,
	};
	long ret;

	(void)t;
	ret = xioctl(s->h.fd, SYNCMEM_IOC_WAIT_ASYNC, &arg);

	tally(OP_WAIT_ASYNC, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: WAIT_ASYNC");
}

static void cancel(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_cancel arg = { .user_data = s->user_data };
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_CANCEL, &arg);

	(void)t;
	tally(OP_CANCEL, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: CANCEL");
}

static void cancel_all(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_cancel arg = { .flags = SYNCMEM_CANCEL_ALL };
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_CANCEL, &arg);

	(void)t;
	tally(OP_CANCEL_ALL, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: CANCEL_ALL");
}

static void post(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_post arg = { .user_data = s->user_data,
				    .result = pick_post_result(&t->rng) };
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_POST, &arg);

	tally(OP_POST, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: POST");
}

static void notify(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_notify arg = { .offset = s->offset,
				      .count = rng_chance(&t->rng, 1, 2) ? 1 : UINT32_MAX };
	long ret = xioctl(s->r.fd, SYNCMEM_IOC_NOTIFY, &arg);

	tally(OP_NOTIFY, ret, if_stable(s->r.rdonly ? EXACTLY(-EBADF) : DOCUMENTED,
					side_stable(s)), "collide: NOTIFY");
}

static void handoff(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_handoff arg = { .offset = s->offset, .size = s->width,
				       .value = rng_below(&t->rng, 3) };
	long ret = xioctl(s->r.fd, SYNCMEM_IOC_HANDOFF, &arg);

	tally(OP_HANDOFF, ret, if_stable(s->r.rdonly ? EXACTLY(-EBADF) : DOCUMENTED,
					 side_stable(s)), "collide: HANDOFF");
}

static void arm(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_on_close arg = {
		.region_fd = s->r.fd, .size = s->width, .offset = s->offset,
		.value = rng_below(&t->rng, 3), .user_data = s->user_data,
	};
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_ARM_ON_CLOSE, &arg);

	tally(OP_ARM_ON_CLOSE, ret, if_stable(s->r.rdonly ? EXACTLY(-EBADF) : DOCUMENTED,
					      side_stable(s)), "collide: ARM_ON_CLOSE");
}

static void disarm(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_disarm arg = { .user_data = s->user_data };
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_DISARM, &arg);

	(void)t;
	tally(OP_DISARM, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: DISARM");
}

static void read_nonblocking(struct thread_ctx *t, const struct side *s)
{
	struct syncmem_completion recs[4];
	long ret;

	(void)t;
	if (!(fcntl(s->h.fd, F_GETFL) & O_NONBLOCK))
		return;
	ret = read(s->h.fd, recs, sizeof(recs));
	if (ret < 0)
		ret = -errno;
	tally(OP_READ, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: read");
}

/* Introspection of the word, the region and the handle (ops_introspect.c). */
static void waiters(struct thread_ctx *t, const struct side *s)
{
	introspect_waiters(t, &s->r, s->rslot, s->offset);
}

static void fdinfo_handle(struct thread_ctx *t, const struct side *s)
{
	introspect_fdinfo(t, &s->h, s->hslot);
}

static void fdinfo_region(struct thread_ctx *t, const struct side *s)
{
	introspect_fdinfo(t, &s->r, s->rslot);
}

static void name_object(struct thread_ctx *t, const struct side *s)
{
	introspect_name(t, &s->r, s->rslot, s->offset);
}

static void objects(struct thread_ctx *t, const struct side *s)
{
	introspect_objects(t, &s->r, s->rslot);
}

static void armed(struct thread_ctx *t, const struct side *s)
{
	introspect_armed(t, &s->r, s->rslot);
}

/* Close whatever fd the handle slot holds (the table's close: by number). */
static void close_handle(struct thread_ctx *t, const struct side *s)
{
	(void)t;
	obj_close_slot(s->hslot, &s->h);
}

static void close_region(struct thread_ctx *t, const struct side *s)
{
	(void)t;
	obj_close_slot(s->rslot, &s->r);
}

static void open_name(struct thread_ctx *t, const struct side *s)
{
	static const char *const names[] = { "fuzz-0", "fuzz-1" };
	const char *name = names[s->user_data & 1];
	struct syncmem_region_open arg = {
		.name = (uintptr_t)name, .name_len = (uint32_t)strlen(name),
		.flags = SYNCMEM_REGION_CREATE, .size = 4096, .mode = 0666,
	};
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_REGION_OPEN, &arg);

	tally(OP_REGION_OPEN, ret, if_stable(DOCUMENTED, side_stable(s)), "collide: REGION_OPEN");
	if (ret >= 0)
		obj_add(&t->rng, (int)ret, K_REGION, obj_new_rid(), arg.size, false);
}

static void unlink_name(struct thread_ctx *t, const struct side *s)
{
	static const char *const names[] = { "fuzz-0", "fuzz-1" };
	const char *name = names[s->user_data & 1];
	struct syncmem_region_unlink arg = { .name = (uintptr_t)name,
					     .name_len = (uint32_t)strlen(name) };
	long ret = xioctl(s->h.fd, SYNCMEM_IOC_REGION_UNLINK, &arg);

	(void)t;
	tally(OP_REGION_UNLINK, ret, if_stable(DOCUMENTED, side_stable(s)),
	      "collide: REGION_UNLINK");
}

/*
 * Exact pairs, on a handle and region of the collisions alone (so nobody
 * else queues or completes anything there): one wait queued, then two
 * cancels of it at once. Exactly one of them cancels it, and exactly one
 * record comes.
 */
static int exact_handle = -1, exact_region = -1;
static pthread_mutex_t exact_lock = PTHREAD_MUTEX_INITIALIZER;	/* one exact pair at a time */
static atomic_long exact_result[2];	/* [0]: this thread, [1]: the partner */

static long exact_cancel(bool all)
{
	struct syncmem_cancel arg = { .user_data = 1, .flags = all ? SYNCMEM_CANCEL_ALL : 0 };

	return xioctl(exact_handle, SYNCMEM_IOC_CANCEL, &arg);
}

static void exact_cancel_one(struct thread_ctx *t, const struct side *s)
{
	(void)t;
	atomic_store(&exact_result[s->user_data], exact_cancel(false));
}

static void exact_cancel_all(struct thread_ctx *t, const struct side *s)
{
	(void)t;
	atomic_store(&exact_result[s->user_data], exact_cancel(true));
}

static bool exact_ready(void)
{
	struct syncmem_region_open ro = { .size = 4096 };

	if (exact_handle < 0)
		exact_handle = fd_move_above(open("/dev/syncmem", O_RDWR | O_CLOEXEC | O_NONBLOCK),
					     PRIVATE_FD_BASE);
	if (exact_handle >= 0 && exact_region < 0)
		exact_region = fd_move_above((int)xioctl(exact_handle, SYNCMEM_IOC_REGION_OPEN, &ro),
					     PRIVATE_FD_BASE);
	return exact_handle >= 0 && exact_region >= 0;
}

/* Queue the wait both sides cancel; false if it could not be. */
static bool exact_queue(void)
{
	struct syncmem_wait_async arg = {
		.region_fd = exact_region, .size = 4, .expected = 0,
		.deadline_ns = SYNCMEM_NO_DEADLINE, .user_data = 1,
	};
	long ret = xioctl(exact_handle, SYNCMEM_IOC_WAIT_ASYNC, &arg);

	tally(OP_WAIT_ASYNC, ret, EXACTLY(SYNCMEM_WAIT_QUEUED), "collide: the wait two cancels race for");
	return ret == SYNCMEM_WAIT_QUEUED;
}

/* After both cancels: one cancelled it, and its one record is there. */
static void exact_judge(bool mine_all, bool theirs_all)
{
	long r[2] = { atomic_load(&exact_result[0]), atomic_load(&exact_result[1]) };
	bool all[2] = { mine_all, theirs_all };
	struct syncmem_completion recs[4];
	long won = 0, n;
	char what[120];

	for (int i = 0; i < 2; i++) {
		/* Each alone: CANCEL 0 or -ENOENT, CANCEL_ALL 1 or 0. */
		long a = all[i] ? 1 : 0, b = all[i] ? 0 : -ENOENT;

		tally(all[i] ? OP_CANCEL_ALL : OP_CANCEL, r[i], EXACTLY(r[i] == a ? a : b),
		      "collide: one of two cancels of one wait");
		won += r[i] == a;
	}
	n = read(exact_handle, recs, sizeof(recs));
	n = n < 0 ? -errno : n / (long)sizeof(recs[0]);
	snprintf(what, sizeof(what), "%s and %s at once returned %ld and %ld, then %ld records",
		 mine_all ? "CANCEL_ALL" : "CANCEL", theirs_all ? "CANCEL_ALL" : "CANCEL",
		 r[0], r[1], n);
	if (won != 1 || n != 1 || recs[0].result != -ECANCELED)
		finding("one pending wait, two cancels: exactly one must cancel it and one -ECANCELED record follow: %s",
			what);
	/* Leave nothing behind for the next round. */
	exact_cancel(true);
	while (read(exact_handle, recs, sizeof(recs)) > 0)
		;
}

/* The pairs: what this thread runs, what the partner runs. */
static const struct {
	void (*mine)(struct thread_ctx *t, const struct side *s);
	void (*theirs)(struct thread_ctx *t, const struct side *s);
} pairs[] = {
	{ wait_async, cancel },
	{ wait_async, cancel },
	{ wait_async, cancel },
	{ wait_async, cancel_all },
	{ wait_async, cancel_all },
	{ wait_async, cancel_all },
	{ wait_async, post },
	{ wait_async, notify },
	{ wait_async, handoff },
	{ wait_async, close_handle },
	{ wait_async, close_region },
	{ notify, cancel },
	{ cancel, cancel },
	{ cancel, cancel_all },
	{ cancel_all, cancel_all },
	{ read_nonblocking, cancel_all },
	{ read_nonblocking, notify },
	{ arm, close_handle },
	{ arm, close_region },
	{ open_name, unlink_name },
	{ open_name, open_name },
	{ wait_async, waiters },
	{ waiters, cancel_all },
	{ waiters, close_region },
	{ fdinfo_handle, cancel },
	{ fdinfo_handle, close_handle },
	{ fdinfo_region, wait_async },
	{ fdinfo_region, close_region },
	{ name_object, objects },
	{ name_object, close_region },
	{ armed, arm },
	{ armed, disarm },
	{ armed, close_handle },
};

/* ---- the partner -------------------------------------------------------- */

static void *partner_main(void *arg)
{
	struct thread_ctx t = { .scratch_handle = -1 };

	rng_seed(&t.rng, (uint64_t)(uintptr_t)arg);
	snprintf(fz_who, sizeof(fz_who), "%.70s partner", partner.who);
	while (!should_stop()) {
		int posted = C_POSTED;

		/* A CAS: the requester may take the job back meanwhile. */
		if (!atomic_compare_exchange_strong(&partner.state, &posted, C_READY)) {
			futex_wait(&partner.state, C_IDLE, 20000000);
			continue;
		}
		spin_while(&partner.state, C_READY, UINT64_MAX);	/* the requester always says go */
		delay(partner.job.delay);
		partner.job.fn(&t, &partner.job);
		atomic_store(&partner.state, C_DONE);
	}
	return NULL;
}

void collide_start(uint64_t seed, const char *who)
{
	pthread_t thread;

	snprintf(partner.who, sizeof(partner.who), "%s", who);
	if (pthread_create(&thread, NULL, partner_main, (void *)(uintptr_t)seed) == 0) {
		pthread_detach(thread);
		partner.running = true;
	}
}

void collide_after_fork(void)
{
	/* The partner thread is not in the child, nor are the exact pair's fds. */
	partner.running = false;
	exact_handle = exact_region = -1;
	pthread_mutex_init(&exact_lock, NULL);
	pthread_mutex_init(&partner.submit, NULL);
	atomic_store(&partner.state, C_IDLE);
}

/*
 * Run @mine here and @theirs (in @s, with @s->fn) on the partner, started
 * together; one side later by a random delay. Without a partner (it could
 * not be started, or it does not come), one after the other.
 */
static void run_pair(struct thread_ctx *t, struct side *s,
		     void (*mine)(struct thread_ctx *t, const struct side *s),
		     void (*theirs)(struct thread_ctx *t, const struct side *s), uint64_t theirs_data)
{
	/* The partner is shared by the worker's threads: wait for it. */
	if (!partner.running || pthread_mutex_lock(&partner.submit)) {
		atomic_fetch_add(&shared->collisions_alone, 1);
		mine(t, s);
		s->user_data = theirs_data;
		theirs(t, s);
		return;
	}
	partner.job = *s;
	partner.job.fn = theirs;
	partner.job.user_data = theirs_data;
	/*
	 * One side starts a little later, by an amount spread evenly over the
	 * scales (1 to 32768 spins), so that windows of any width overlap.
	 */
	if (rng_chance(&t->rng, 3, 4))
		partner.job.delay = log_uniform(&t->rng);
	else
		s->delay = log_uniform(&t->rng);
	atomic_store(&partner.state, C_POSTED);
	futex_wake(&partner.state);
	if (!spin_while(&partner.state, C_POSTED, 50000000ull)) {
		int posted = C_POSTED;

		/* The partner did not come (stopping): take the job back, run it here. */
		if (atomic_compare_exchange_strong(&partner.state, &posted, C_IDLE)) {
			pthread_mutex_unlock(&partner.submit);
			atomic_fetch_add(&shared->collisions_alone, 1);
			mine(t, s);
			s->user_data = theirs_data;
			theirs(t, s);
			return;
		}
		spin_while(&partner.state, C_POSTED, UINT64_MAX);
	}
	atomic_fetch_add(&shared->collisions, 1);
	atomic_store(&partner.state, C_GO);
	delay(s->delay);
	mine(t, s);
	spin_while(&partner.state, C_GO, UINT64_MAX);	/* its side never blocks */
	atomic_store(&partner.state, C_IDLE);
	pthread_mutex_unlock(&partner.submit);
}

/* Two cancels of one wait on the collisions' own handle. */
static void collide_exact(struct thread_ctx *t)
{
	bool mine_all = rng_chance(&t->rng, 1, 3), theirs_all = rng_chance(&t->rng, 1, 3);
	struct side s = { .user_data = 0 };

	if (pthread_mutex_trylock(&exact_lock))
		return;
	if (exact_ready() && exact_queue()) {
		run_pair(t, &s, mine_all ? exact_cancel_all : exact_cancel_one,
			 theirs_all ? exact_cancel_all : exact_cancel_one, 1);
		exact_judge(mine_all, theirs_all);
	}
	pthread_mutex_unlock(&exact_lock);
}

void op_collide(struct thread_ctx *t)
{
	unsigned int p = (unsigned int)rng_below(&t->rng, sizeof(pairs) / sizeof(pairs[0]));
	struct side s = { .width = rng_chance(&t->rng, 1, 4) ? 8 : 4 };

	if (rng_chance(&t->rng, 1, 6)) {
		collide_exact(t);
		return;
	}
	if (!obj_pick(&t->rng, K_HANDLE, &s.h, &s.hslot) ||
	    !obj_pick(&t->rng, K_REGION, &s.r, &s.rslot))
		return;
	s.user_data = rng_below(&t->rng, 4);
	s.offset = pick_offset(&t->rng, s.r.size, s.width);
	s.expected = pick_expected(&t->rng, s.r.rid, s.offset, s.width);
	s.deadline = rng_chance(&t->rng, 1, 2) ? SYNCMEM_NO_DEADLINE :
		     now_ns() + rng_below(&t->rng, 100000);
	run_pair(t, &s, pairs[p].mine, pairs[p].theirs, s.user_data);
}
