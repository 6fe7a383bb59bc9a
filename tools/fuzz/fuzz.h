/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The syncmem kernel fuzzer: declarations shared by its parts.
 *
 * A supervisor (main.c) forks workers (worker.c); each runs several threads
 * that pick operations (ops_*.c) on a per-process table of fds and mappings
 * (objects.c), with arguments that are mostly valid and meaningful and
 * sometimes not. Every result is checked against the documented set of its
 * call (expect.c) and counted in memory shared by all processes (tally.c).
 * Each thread also drives a private handle whose every outcome it can
 * predict (ledger.c). Findings are collected and printed by the supervisor.
 */
#ifndef SYNCMEM_FUZZ_H
#define SYNCMEM_FUZZ_H

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include <linux/syncmem.h>

/* ---- deterministic random numbers (rng.c) ------------------------------- */

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n); 0 when n is 0. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* True with probability num/den. */
bool rng_chance(struct rng *r, unsigned int num, unsigned int den);
/* A seed for a sub-stream: the same parent and labels give the same seed. */
uint64_t seed_derive(uint64_t parent, uint64_t a, uint64_t b);

/* ---- operations and results (tally.c, expect.c) ------------------------- */

enum op {
	/* Handle ioctls. */
	OP_VERSION,
	OP_REGION_OPEN,
	OP_REGION_UNLINK,
	OP_STATS,
	OP_SET_EVENTFD,
	OP_WAIT_ASYNC,
	OP_CANCEL,
	OP_CANCEL_ALL,
	OP_POST,
	OP_ARM_ON_CLOSE,
	OP_DISARM,
	OP_REGION_LIST,
	/* Region fd ioctls. */
	OP_REGION_INFO,
	OP_WAIT,
	OP_NOTIFY,
	OP_HANDOFF,
	OP_HANDOFF_ADD,
	OP_OWNER,
	OP_LOCK_WAIT,
	OP_UNLOCK,
	OP_HANDLE_OPEN,
	/* Region fd introspection ioctls. */
	OP_WAITERS,
	OP_WHO,
	OP_OBJECT_NAME,
	OP_OBJECTS,
	OP_ARMED,
	/* An ioctl number the fd does not know (or of the other fd kind). */
	OP_UNKNOWN_IOCTL,
	/* Other calls on syncmem files. */
	OP_READ,
	OP_POLL,
	OP_MMAP,
	OP_MPROTECT,
	OP_MREMAP,
	/* Reading /proc/self/fdinfo of a table fd: its bytes. */
	OP_FDINFO,
	/* The CQE of an io_uring command on a region fd: its res. */
	OP_URING_CMD,
	/* The same of a SYNCMEM_URING_NOTIFY: a count, as the ioctl's. */
	OP_URING_NOTIFY,
	OP_NR,
	OP_FIRST_NON_IOCTL = OP_READ,
};

const char *op_name(enum op op);

/* How a result is judged. */
enum judge {
	JUDGE_DOCUMENTED,	/* any result documented for the call */
	JUDGE_EXACT,		/* exactly want (a result or -errno) */
	JUDGE_FAILS,		/* a documented error: the call must fail */
	JUDGE_NONE,		/* count only: the fd changed under the call */
};

#define DOCUMENTED	((struct verdict){ JUDGE_DOCUMENTED, 0 })
#define EXACTLY(v)	((struct verdict){ JUDGE_EXACT, (v) })
#define FAILS		((struct verdict){ JUDGE_FAILS, 0 })
#define UNJUDGED	((struct verdict){ JUDGE_NONE, 0 })

struct verdict {
	enum judge judge;
	long want;
};

/*
 * Count @ret (a non-negative result or -errno) of @op and judge it.
 * @what describes the call for a finding. Returns false on a finding.
 */
bool tally(enum op op, long ret, struct verdict v, const char *what);

/* Is @ret documented for @op? (expect.c) */
bool expect_documented(enum op op, long ret);
/* The documented errnos of @op as text, for findings. */
void expect_describe(enum op op, char *buf, size_t len);

/* Record a finding: printed by the supervisor, fails the run. */
void finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Who this thread is, for findings: "worker 2.1 thread 3 seed 0x..." */
extern __thread char fz_who[96];

/* "-EINVAL", "3" */
const char *result_text(long ret, char *buf, size_t len);

/* ---- state shared by every process of a run (main.c) -------------------- */

#define MAX_ERRNO	134
#define RESULT_SLOTS	(6 + MAX_ERRNO)	/* 0..4, >= 5, then -1..-133 */
#define MAX_FINDINGS	64
#define FINDING_LEN	400
#define MAX_PROCS	96

struct shared {
	uint64_t master_seed;
	atomic_bool stop;
	atomic_uint_least64_t ioctls;		/* all processes, all ops < OP_READ */
	atomic_uint_least64_t ops_budget;	/* stop after this many ioctls; 0: none */
	atomic_uint_least64_t results[OP_NR][RESULT_SLOTS];
	atomic_uint_least64_t raced[OP_NR];	/* fd closed or reused meanwhile */
	atomic_uint_least64_t signals;		/* signal handlers run in workers */
	atomic_uint_least64_t forks, fd_passes, kills, restarts, ledger_checks;
	atomic_uint_least64_t scribbles, namespaces;
	atomic_uint_least64_t collisions, collisions_alone;	/* paired, or one side after the other */
	atomic_uint nfindings;			/* all of them */
	atomic_uint nkinds;			/* distinct ones (same_finding.h) */
	char findings[MAX_FINDINGS][FINDING_LEN];
	atomic_uint finding_count[MAX_FINDINGS];
	atomic_bool finding_ready[MAX_FINDINGS];
	atomic_int procs[MAX_PROCS];		/* pids alive, 0 for free slots */
	atomic_int killed[512];			/* pids the supervisor SIGKILLed */
	atomic_uint nkilled;
	/* What each process did last (static strings: the same in every process). */
	const char *_Atomic doing[MAX_PROCS];
	bool abi2_checks;	/* the module reports all of ABI 2: check it */
	bool introspect;	/* it reports SYNCMEM_FEAT_INTROSPECT: check those calls */
	bool fdinfo;		/* /proc/self/fdinfo can be read */
	uint64_t max_region_size;		/* from VERSION */
	uint64_t max_async_waits;		/* module parameter */
	int mailbox[4][2];			/* SOCK_DGRAM pairs for fd passing */
};

extern struct shared *shared;

/* Register this process (a slot the supervisor can kill); false when full. */
bool proc_register(void);
/* Note what this process is doing, for a process that does not end. */
void proc_doing(const char *what);
void proc_unregister(pid_t pid);
int proc_count(void);
/* Judge how a process that was reaped ended (and unregister it). */
void judge_exit(pid_t pid, int status, const char *what);
/* Reap this process's exited children (WNOHANG). */
void reap_children(void);

/* ---- fd numbers --------------------------------------------------------- */

/*
 * Fds of the object table are the lowest numbers. Fds a thread keeps for
 * itself (its ledger) live at PRIVATE_FD_BASE and above, the run's own
 * (mailboxes, the supervisor's handle) at INFRA_FD_BASE and above, so a
 * stale table fd number never reaches them.
 */
#define TABLE_FD_LIMIT	900
#define PRIVATE_FD_BASE	1000
#define INFRA_FD_BASE	3000
#define FD_LIMIT	4096

/* Move @fd to the first free number >= @base (closing the old one). */
int fd_move_above(int fd, int base);

/* ---- the object table of a process (objects.c) -------------------------- */

enum kind {
	K_FREE,
	K_HANDLE,
	K_REGION,	/* a region fd, rw or ro */
	K_EVENTFD,
	K_OTHER,	/* pipe, /dev/null, socket: not syncmem */
};

struct obj {
	int fd;
	enum kind kind;
	uint32_t gen;		/* bumped when the slot changes */
	uint64_t rid;		/* region identity (dups share it) */
	uint64_t size;		/* region size */
	bool rdonly;		/* a handle: made by HANDLE_OPEN (see obj_limited()) */
};

/*
 * A handle made from a region fd (HANDLE_OPEN): REGION_OPEN, REGION_UNLINK,
 * REGION_LIST and STATS on it are -EPERM, whatever their arguments.
 */
static inline bool obj_limited(const struct obj *o)
{
	return o->kind == K_HANDLE && o->rdonly;
}

/* The verdict of a call only the device node allows, on handle @h. */
#define NODE_ONLY(h, v)	(obj_limited(h) ? EXACTLY(-EPERM) : (v))

#define NOBJ	40
#define NMAP	12

struct mapping {
	void *_Atomic addr;	/* NULL: a free slot */
	size_t len;
	uint64_t rid;
	bool writable;
	atomic_int users;	/* readers inside; -1 while being unmapped */
};

/* Pick a random object of @kind (K_FREE: any kind); false if none. */
bool obj_pick(struct rng *r, enum kind kind, struct obj *out, int *slot);
/* Is the slot still what obj_pick returned (same gen)? */
bool obj_unchanged(int slot, const struct obj *o);
/* Add an fd to the table (closing a random old one when full). */
void obj_add(struct rng *r, int fd, enum kind kind, uint64_t rid, uint64_t size, bool rdonly);
/* Close the object of @slot if it is still @o; false if it changed. */
bool obj_close_slot(int slot, const struct obj *o);
/* Close a random object; false if none. */
bool obj_close_random(struct rng *r);
/* Close every object and mapping (a process about to exit orderly). */
void obj_close_all(void);
/*
 * fork() with the table locked, so the child never inherits a slot another
 * thread was closing. The child must call obj_after_fork().
 */
pid_t obj_fork(void);
/*
 * After fork in the child: locks and counts of the parent's threads reset;
 * low fds that are not in the table (being created by other threads) closed.
 */
void obj_after_fork(void);
uint64_t obj_new_rid(void);
int obj_count(enum kind kind);

/* Map an object's region; unmap one. */
bool map_add(void *addr, size_t len, uint64_t rid, bool writable);
bool map_remove_random(struct rng *r);
/* Enter a random mapping (of region @rid, or any when 0); leave it after. */
struct mapping *map_enter(struct rng *r, uint64_t rid, bool writable);
void map_leave(struct mapping *m);

/* ---- operations (ops_*.c) ----------------------------------------------- */

struct thread_ctx {
	struct rng rng;
	int index;
	pid_t tid;
	bool unprivileged;
	struct ledger *ledger;	/* this thread's private handle */
	int scratch_handle;	/* lazily opened, table-independent */
};

/* ioctl(): its result or -errno. */
static inline long xioctl(int fd, unsigned long cmd, void *arg)
{
	long ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/* The verdict for a call whose fds may have changed under it. */
static inline struct verdict if_stable(struct verdict v, bool stable)
{
	return stable ? v : UNJUDGED;
}

/* Current CLOCK_MONOTONIC time in ns. */
uint64_t now_ns(void);

/* Set up the pages bad_pointer() points into (before forking threads). */
void args_init(void);
/*
 * A pointer the kernel cannot use for a struct (or a name of 5 bytes or more):
 * NULL, low, kernel, unmapped, straddling into an unmapped page, or (for
 * @output) read-only memory.
 */
void *bad_pointer(struct rng *r, bool output);

/* A name from the pool (colliding on purpose), or an odd one. */
const char *pool_name(struct rng *r, uint32_t *len);
/* Every name a run may create, for the final unlink. */
size_t pool_all_names(const char **names, uint32_t *lens, size_t max);

/*
 * Results POST uses on shared handles: outside the results of waits, so a
 * record is either a wait's or a post's.
 */
#define POST_RESULT_BASE	0x50000000
#define POST_RESULT_SPAN	0x10000
int32_t pick_post_result(struct rng *r);
/* A record a handle may return: a wait's result or a posted one, pad zero. */
bool record_plausible(const struct syncmem_completion *c);

/* A word offset in a region of @size, aligned for @width, usually hot. */
uint64_t pick_offset(struct rng *r, uint64_t size, uint32_t width);
/* A short absolute deadline, sometimes passed, with @forever sometimes none. */
uint64_t pick_deadline(struct rng *r, bool forever);
/* The current value of the word if a mapping shows it, else a guess. */
uint64_t pick_expected(struct rng *r, uint64_t rid, uint64_t off, uint32_t width);

void op_handle(struct thread_ctx *t);	/* a random handle ioctl */
void op_region(struct thread_ctx *t);	/* a random region fd ioctl */
void op_memory(struct thread_ctx *t);	/* mmap, munmap, mprotect, mremap */
void op_files(struct thread_ctx *t);	/* open, close, dup, eventfds, others */
void op_async(struct thread_ctx *t);	/* async waits on shared handles */
void op_uring(struct thread_ctx *t);	/* io_uring commands on region fds */
/*
 * A forked child forgets its thread's ring without closing it: the child's
 * obj_after_fork() closed the ring's fd as a stray, and the number may now
 * be a region fd of the table, which io_uring_queue_exit() would close.
 */
void uring_after_fork(void);
void op_invalid(struct thread_ctx *t);	/* garbage arguments and commands */
void op_process(struct thread_ctx *t);	/* fork, fd passing, signals */
void op_collide(struct thread_ctx *t);	/* two calls at the same instant */
/* Start this worker's collision partner thread; forget it in a child. */
void collide_start(uint64_t seed, const char *who);
void collide_after_fork(void);

/* Bits @known does not have, at least one: for flags that must be refused. */
uint32_t bad_bits(struct thread_ctx *t, uint32_t known);

/*
 * Open a region (named from the pool, or anonymous) into the table, through
 * handle @h of table slot @slot, or a random handle when @h is NULL.
 */
void open_region(struct thread_ctx *t, const struct obj *h, int slot);
/* Open /dev/syncmem into the table. */
void open_handle(struct thread_ctx *t);
/* Map a region fd of the table and add the mapping. */
void map_object(struct thread_ctx *t, const struct obj *o, int slot);

/* ---- introspection (ops_introspect.c) ----------------------------------- */

/* A random introspection call on region @o of table slot @slot. */
void op_introspect(struct thread_ctx *t, const struct obj *o, int slot);
/* An introspection call with one defect: the errno documented for it. */
void op_introspect_invalid(struct thread_ctx *t);
/* Read the fdinfo of a random fd of the table. */
void op_fdinfo(struct thread_ctx *t);
/*
 * One call on region @o (WAITERS of the word at @offset, WHO of it, a name
 * at it; UINT64_MAX: chosen here), and fdinfo of any table fd, judged.
 */
void introspect_waiters(struct thread_ctx *t, const struct obj *o, int slot, uint64_t offset);
void introspect_who(struct thread_ctx *t, const struct obj *o, int slot, uint64_t offset);
void introspect_name(struct thread_ctx *t, const struct obj *o, int slot, uint64_t offset);
void introspect_objects(struct thread_ctx *t, const struct obj *o, int slot);
void introspect_armed(struct thread_ctx *t, const struct obj *o, int slot);
void introspect_fdinfo(struct thread_ctx *t, const struct obj *o, int slot);

/*
 * What holds for any answer, whatever others did meanwhile (@in: the call
 * as made, @out: as returned, @e: its entries, @size: the region's); false
 * after a finding.
 */
bool waiters_sane(const struct syncmem_waiter_list *in, const struct syncmem_waiter_list *out,
		  const struct syncmem_waiter_entry *e, uint64_t size, const char *what);
bool who_sane(const struct syncmem_who *in, const struct syncmem_who *out, const char *what);
bool objects_sane(const struct syncmem_object_list *in, const struct syncmem_object_list *out,
		  const struct syncmem_object_entry *e, uint64_t size, const char *what);
bool armed_sane(const struct syncmem_object_list *in, const struct syncmem_object_list *out,
		const struct syncmem_armed_entry *e, uint64_t size, const char *what);

/*
 * OBJECT_NAME of the object at @offset (inside a region of @size bytes): a
 * valid name (into @buf, 64 bytes) or a removal, with defect number
 * @defect (below name_defects(@remove); -1: none). *@want is the errno of
 * the defect (0 without), *@why describes it.
 */
uint32_t name_defects(bool remove);
void object_name_args(struct rng *r, uint64_t size, uint64_t offset, bool remove, int defect,
		      char *buf, struct syncmem_object_name *arg, long *want, const char **why);

/* What fdinfo says, parsed. */
#define FDINFO_WAITS	32	/* waiters, actions, pending waits an fdinfo lists at most */
#define FDINFO_MAX	256	/* syncmem-wait lines kept */

struct fdinfo_entry {	/* a syncmem-wait or syncmem-on-close line */
	uint64_t region, offset, user_data, value, owner, since;
	uint32_t position, size;
	int32_t pid, tid;	/* -1: absent */
	bool async, observer;
};

struct fdinfo {
	char bad[160];		/* why the text is malformed; empty if it is not */
	bool region, handle;	/* syncmem-region, syncmem-eventfd seen */
	bool name;		/* syncmem-name seen */
	/* -1: absent */
	int64_t ino, named, size, mode, rdonly, objects, armed, waiters, eventfd, outstanding;
	unsigned int nwaits, non_close;	/* lines, even those not kept */
	struct fdinfo_entry waits[FDINFO_MAX], on_close[FDINFO_WAITS];
};

/*
 * Read /proc/self/fdinfo/@fd whole, in pieces of a random size, and parse
 * it into @fi: its length, or -errno (-ENOMEM: ours).
 */
long fdinfo_read(struct rng *r, int fd, struct fdinfo *fi);

/* ---- the private handle of a thread (ledger.c) -------------------------- */

struct ledger;

struct ledger *ledger_new(struct thread_ctx *t);
/* One random operation on the private handle, with exact expectations. */
void ledger_step(struct thread_ctx *t, struct ledger *l);
/* Cancel and read everything; check every wait completed exactly once. */
void ledger_check(struct thread_ctx *t, struct ledger *l);
/* Close the handle; check the on-close actions ran. Frees @l. */
void ledger_close(struct thread_ctx *t, struct ledger *l);

/* ---- processes (worker.c, scribbler.c) ---------------------------------- */

/* The loop of one fuzzing thread; returns when told to stop. */
void thread_loop(struct thread_ctx *t, uint64_t max_ops);
/* Body of a worker process (forked by the supervisor); never returns. */
void worker_main(int index, uint64_t seed, bool unprivileged) __attribute__((noreturn));
/* Continue in a forked child with @seed; never returns. */
void child_main(struct thread_ctx *parent, uint64_t seed) __attribute__((noreturn));
/* Start the scribbler thread of this process. */
void scribbler_start(uint64_t seed);

/* ---- the supervisor (supervisor.c, baseline.c) -------------------------- */

struct run_options {
	uint64_t seed;
	unsigned int seconds;	/* 0: until ops */
	uint64_t ops;		/* 0: until seconds */
	unsigned int workers;
	unsigned int kill_ms;	/* mean time between SIGKILLs; 0: none */
	unsigned int unprivileged_every;	/* every n-th worker runs as 65534 */
};

/* Run the workers until the time or the ioctls are used up; returns seconds taken. */
double supervise(const struct run_options *o);

/* STATS of the caller's namespace, as root and as 65534. */
struct baseline {
	struct syncmem_stats root, nobody;
};
bool baseline_take(int handle, struct baseline *b);
/* Unlink every name the run may have created. */
void baseline_unlink_names(int handle);
/* Wait until STATS is back at @b (bounded); a finding when it is not. */
void baseline_check(int handle, const struct baseline *b);

/* Whether the run should end. */
bool should_stop(void);
/*
 * A call that may block for good (a wait without deadline whose region
 * another thread closes, a read nobody posts to) runs between
 * FOREVER_BEGIN() and forever_end(): the SIGUSR2 the supervisor sends at the
 * stop then jumps out of it, and FOREVER_BEGIN() evaluates to true.
 */
extern __thread sigjmp_buf forever_env;
extern __thread volatile sig_atomic_t forever_armed;
#define FOREVER_BEGIN() (sigsetjmp(forever_env, 1) ? (forever_armed = 0, true) : \
			 (forever_armed = 1, false))
static inline void forever_end(void)
{
	forever_armed = 0;
}

/* The thread id of a random fuzzing thread of this process. */
pid_t random_thread(struct rng *r);
/* SIGUSR1 handler installed (SA_RESTART): waits must restart by themselves. */
void signals_init(void);

#endif /* SYNCMEM_FUZZ_H */
