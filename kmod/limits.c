// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem limits: what one user, one IPC namespace and the whole system may
 * hold, and the charging that enforces it.
 *
 * Regions (their count and their bytes, which are unswappable kernel
 * memory) are charged to their creator's user, to the IPC namespace they are
 * created in, and to the system. Async waits and on-close actions are
 * charged to the user who opened the handle they belong to. A user is a uid
 * in a user namespace. What a user in a user namespace other than the
 * initial one is charged is charged to that namespace as a whole too (a
 * node of its own, held to the same per-user limits), then to the owner of
 * the namespace one level up, its namespace, and so on (as the kernel's
 * ucounts do). So all the uids of a container share one container's
 * limits, whatever IPC namespaces they make, and the uids a user maps
 * into namespaces of its own, nested or not, share that user's limits.
 * Uid 0 of the initial user namespace is counted but never limited: it is
 * the administrator, and the owner of every container root makes, whose
 * containers must not share one quota (each is limited on its own).
 *
 * CAP_SYS_RESOURCE (in the initial user namespace) at creation time lifts
 * the user and namespace limits and lets the system's reserve be used: the
 * last reserve_percent of max_regions and max_total_bytes is only ever
 * given to such callers, so root can still act when everybody else is out.
 *
 * Charging adds first and checks after, taking the charge back on failure:
 * lock-free, and a race can only make a concurrent caller fail early, never
 * let usage pass a limit for long.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/rhashtable.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>

#include "syncmem_core.h"

unsigned long syncmem_max_region_size = 1UL << 30;
module_param_named(max_region_size, syncmem_max_region_size, ulong, 0644);
MODULE_PARM_DESC(max_region_size, "Largest region in bytes (default 1 GiB); larger is -E2BIG");

static unsigned int syncmem_max_regions = 65536;
module_param_named(max_regions, syncmem_max_regions, uint, 0644);
MODULE_PARM_DESC(max_regions, "Most regions in the system (default 65536); more is -ENOSPC");

static unsigned long syncmem_max_total_bytes;
module_param_named(max_total_bytes, syncmem_max_total_bytes, ulong, 0644);
MODULE_PARM_DESC(max_total_bytes, "Most bytes in all regions (0, the default: half of RAM); more is -ENOMEM");

static unsigned int syncmem_reserve_percent = 5;
module_param_named(reserve_percent, syncmem_reserve_percent, uint, 0644);
MODULE_PARM_DESC(reserve_percent, "Share of max_regions and max_total_bytes kept for CAP_SYS_RESOURCE (default 5)");

static unsigned int syncmem_max_ns_regions = 32768;
module_param_named(max_ns_regions, syncmem_max_ns_regions, uint, 0644);
MODULE_PARM_DESC(max_ns_regions, "Most regions per IPC namespace (default 32768); more is -ENOSPC");

static unsigned long syncmem_max_ns_bytes;
module_param_named(max_ns_bytes, syncmem_max_ns_bytes, ulong, 0644);
MODULE_PARM_DESC(max_ns_bytes, "Most region bytes per IPC namespace (0, the default: half of the system's); more is -ENOMEM");

static unsigned int syncmem_max_user_regions = 8192;
module_param_named(max_user_regions, syncmem_max_user_regions, uint, 0644);
MODULE_PARM_DESC(max_user_regions, "Most regions per user, and per user namespace as a whole (default 8192); more is -EDQUOT");

static unsigned long syncmem_max_user_bytes;
module_param_named(max_user_bytes, syncmem_max_user_bytes, ulong, 0644);
MODULE_PARM_DESC(max_user_bytes, "Most region bytes per user, and per user namespace as a whole (0, the default: a quarter of the system's); more is -EDQUOT");

unsigned int syncmem_max_async_waits = 1U << 17;
module_param_named(max_async_waits, syncmem_max_async_waits, uint, 0644);
MODULE_PARM_DESC(max_async_waits, "Most outstanding async waits per handle (default 131072); more is -EAGAIN");

static unsigned int syncmem_max_user_async_waits = 1U << 18;
module_param_named(max_user_async_waits, syncmem_max_user_async_waits, uint, 0644);
MODULE_PARM_DESC(max_user_async_waits, "Most outstanding async waits per user, and per user namespace as a whole, all handles (default 262144); more is -EDQUOT");

static unsigned int syncmem_max_user_on_close = 4096;
module_param_named(max_user_on_close, syncmem_max_user_on_close, uint, 0644);
MODULE_PARM_DESC(max_user_on_close, "Most armed on-close actions per user, and per user namespace as a whole (default 4096); more is -EDQUOT");

unsigned int syncmem_protected_names = 1;
module_param_named(protected_names, syncmem_protected_names, uint, 0644);
MODULE_PARM_DESC(protected_names, "1 (default): CREATE without EXCL does not open another user's region (-EACCES)");

static struct syncmem_usage syncmem_total;

unsigned long syncmem_max_regions_now(void)
{
	return READ_ONCE(syncmem_max_regions);
}

unsigned long syncmem_max_total_bytes_now(void)
{
	unsigned long v = READ_ONCE(syncmem_max_total_bytes);

	return v ? v : (totalram_pages() / 2) << PAGE_SHIFT;
}

/* A derived default: @v, or @fallback when @v is 0. */
static unsigned long or_default(unsigned long v, unsigned long fallback)
{
	return v ? v : fallback;
}

/* The user limit of a usage field. */
static unsigned long user_limit(size_t field)
{
	switch (field) {
	case SYNCMEM_USAGE(regions):
		return READ_ONCE(syncmem_max_user_regions);
	case SYNCMEM_USAGE(bytes):
		return or_default(READ_ONCE(syncmem_max_user_bytes),
				  syncmem_max_total_bytes_now() / 4);
	case SYNCMEM_USAGE(async_waits):
		return READ_ONCE(syncmem_max_user_async_waits);
	case SYNCMEM_USAGE(on_close):
		return READ_ONCE(syncmem_max_user_on_close);
	}
	return 0;
}

static atomic_long_t *usage_field(struct syncmem_usage *usage, size_t field)
{
	return (atomic_long_t *)((char *)usage + field);
}

/* Add @n to @v unless that passes @limit: true if added. */
static bool usage_add(atomic_long_t *v, long n, unsigned long limit)
{
	if ((unsigned long)atomic_long_add_return(n, v) <= limit)
		return true;
	atomic_long_sub(n, v);
	return false;
}

/*
 * Is @u held to the user limits? (See the comment at the top.) Every user
 * namespace's own node is; of the initial namespace's users, all but root.
 */
static bool user_limited(const struct syncmem_user *u)
{
	return u->user_ns != &init_user_ns || !uid_eq(u->uid, GLOBAL_ROOT_UID);
}

/* Charge @n to @field of @u and every user above it, or to none. */
static bool chain_add(struct syncmem_user *u, size_t field, long n,
		      bool unlimited)
{
	unsigned long limit = unlimited ? ULONG_MAX : user_limit(field);
	struct syncmem_user *p, *undo;

	for (p = u; p; p = p->parent) {
		if (!usage_add(usage_field(&p->usage, field), n,
			       user_limited(p) ? limit : ULONG_MAX))
			goto fail;
	}
	return true;
fail:
	for (undo = u; undo != p; undo = undo->parent)
		atomic_long_sub(n, usage_field(&undo->usage, field));
	return false;
}

static void chain_sub(struct syncmem_user *u, size_t field, long n)
{
	for (; u; u = u->parent)
		atomic_long_sub(n, usage_field(&u->usage, field));
}

/**
 * syncmem_charge_user - charge one async wait or on-close action
 * @u:		The user (the handle's opener).
 * @field:	SYNCMEM_USAGE(async_waits) or SYNCMEM_USAGE(on_close).
 * @unlimited:	The handle was opened with CAP_SYS_RESOURCE.
 *
 * Returns 0 or -EDQUOT.
 */
int syncmem_charge_user(struct syncmem_user *u, size_t field, bool unlimited)
{
	return chain_add(u, field, 1, unlimited) ? 0 : -EDQUOT;
}

void syncmem_uncharge_user(struct syncmem_user *u, size_t field)
{
	chain_sub(u, field, 1);
}

/* The system's caps, less the reserve unless @unlimited. */
static unsigned long system_limit(unsigned long cap, bool unlimited)
{
	unsigned int pct = min(READ_ONCE(syncmem_reserve_percent), 100U);

	return unlimited ? cap : cap - cap / 100 * pct - cap % 100 * pct / 100;
}

/**
 * syncmem_charge_region - charge a new region of @bytes
 * @u:		Its creator.
 * @ns:		The IPC namespace it is created in.
 * @bytes:	Its size in whole pages.
 * @unlimited:	The creator has CAP_SYS_RESOURCE.
 *
 * Returns 0; -ENOSPC (max_regions, max_ns_regions), -ENOMEM (max_total_bytes,
 * max_ns_bytes) or -EDQUOT (max_user_regions, max_user_bytes), charging
 * nothing then.
 */
int syncmem_charge_region(struct syncmem_user *u, struct syncmem_ns *ns,
			  u64 bytes, bool unlimited)
{
	unsigned long total = syncmem_max_total_bytes_now();
	unsigned long ns_regions = unlimited ? ULONG_MAX :
				   READ_ONCE(syncmem_max_ns_regions);
	unsigned long ns_bytes = unlimited ? ULONG_MAX :
				 or_default(READ_ONCE(syncmem_max_ns_bytes), total / 2);
	int err;

	if (bytes > LONG_MAX)
		return -ENOMEM;
	if (!usage_add(&syncmem_total.regions, 1,
		       system_limit(syncmem_max_regions_now(), unlimited)))
		return -ENOSPC;
	err = -ENOMEM;
	if (!usage_add(&syncmem_total.bytes, bytes, system_limit(total, unlimited)))
		goto out_total_regions;
	err = -ENOSPC;
	if (!usage_add(&ns->usage.regions, 1, ns_regions))
		goto out_total_bytes;
	err = -ENOMEM;
	if (!usage_add(&ns->usage.bytes, bytes, ns_bytes))
		goto out_ns_regions;
	err = -EDQUOT;
	if (!chain_add(u, SYNCMEM_USAGE(regions), 1, unlimited))
		goto out_ns_bytes;
	if (!chain_add(u, SYNCMEM_USAGE(bytes), bytes, unlimited))
		goto out_user_regions;
	return 0;

out_user_regions:
	chain_sub(u, SYNCMEM_USAGE(regions), 1);
out_ns_bytes:
	atomic_long_sub(bytes, &ns->usage.bytes);
out_ns_regions:
	atomic_long_dec(&ns->usage.regions);
out_total_bytes:
	atomic_long_sub(bytes, &syncmem_total.bytes);
out_total_regions:
	atomic_long_dec(&syncmem_total.regions);
	return err;
}

void syncmem_uncharge_region(struct syncmem_user *u, struct syncmem_ns *ns,
			     u64 bytes)
{
	chain_sub(u, SYNCMEM_USAGE(bytes), bytes);
	chain_sub(u, SYNCMEM_USAGE(regions), 1);
	atomic_long_sub(bytes, &ns->usage.bytes);
	atomic_long_dec(&ns->usage.regions);
	atomic_long_sub(bytes, &syncmem_total.bytes);
	atomic_long_dec(&syncmem_total.regions);
}

/* ---- users ------------------------------------------------------------ */

struct syncmem_user_key {
	struct user_namespace *user_ns;
	kuid_t uid;
};

static u32 syncmem_user_hashfn(const void *data, u32 len, u32 seed)
{
	const struct syncmem_user_key *k = data;

	return jhash_2words(__kuid_val(k->uid), hash_ptr(k->user_ns, 32), seed);
}

static u32 syncmem_user_obj_hashfn(const void *data, u32 len, u32 seed)
{
	const struct syncmem_user *u = data;
	struct syncmem_user_key k = { .user_ns = u->user_ns, .uid = u->uid };

	return syncmem_user_hashfn(&k, 0, seed);
}

static int syncmem_user_cmpfn(struct rhashtable_compare_arg *arg,
			      const void *obj)
{
	const struct syncmem_user_key *k = arg->key;
	const struct syncmem_user *u = obj;

	return !(u->user_ns == k->user_ns && uid_eq(u->uid, k->uid));
}

static const struct rhashtable_params syncmem_user_params = {
	.head_offset	= offsetof(struct syncmem_user, node),
	.hashfn		= syncmem_user_hashfn,
	.obj_hashfn	= syncmem_user_obj_hashfn,
	.obj_cmpfn	= syncmem_user_cmpfn,
	.automatic_shrinking = true,
};

/* Users with something charged or a handle open; lookups under RCU. */
static struct rhashtable syncmem_users;
static DEFINE_MUTEX(syncmem_users_mutex);	/* insertions and removals */

static struct syncmem_user *syncmem_user_lookup(struct user_namespace *user_ns,
						kuid_t uid)
{
	struct syncmem_user_key k = { .user_ns = user_ns, .uid = uid };
	struct syncmem_user *u;

	rcu_read_lock();
	u = rhashtable_lookup(&syncmem_users, &k, syncmem_user_params);
	if (u && !refcount_inc_not_zero(&u->ref))
		u = NULL;
	rcu_read_unlock();
	return u;
}

/*
 * The key of the user that @k's user is charged together with, one step up
 * the chain: a uid's user namespace as a whole, then that namespace's owner
 * in the namespace above. False at the top (a user of the initial one).
 */
static bool syncmem_user_key_up(struct syncmem_user_key *k)
{
	if (k->user_ns == &init_user_ns)
		return false;
	if (uid_valid(k->uid)) {
		k->uid = INVALID_UID;
	} else {
		k->uid = k->user_ns->owner;
		k->user_ns = k->user_ns->parent;
	}
	return true;
}

/*
 * The user of @k, made with @parent (whose reference it takes) unless
 * another caller made it meanwhile; NULL without memory.
 */
static struct syncmem_user *syncmem_user_make(const struct syncmem_user_key *k,
					      struct syncmem_user *parent)
{
	struct syncmem_user *u;

	mutex_lock(&syncmem_users_mutex);
	u = rhashtable_lookup_fast(&syncmem_users, k, syncmem_user_params);
	if (u && refcount_inc_not_zero(&u->ref))
		goto out;	/* another caller made it meanwhile */
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		goto out;
	u->user_ns = get_user_ns(k->user_ns);
	u->uid = k->uid;
	refcount_set(&u->ref, 1);
	u->parent = parent;
	if (rhashtable_insert_fast(&syncmem_users, &u->node, syncmem_user_params)) {
		put_user_ns(u->user_ns);
		kfree(u);
		u = NULL;
		goto out;
	}
	parent = NULL;	/* now the new user's */
out:
	mutex_unlock(&syncmem_users_mutex);
	syncmem_user_put(parent);
	return u;
}

/*
 * The user of (@user_ns, @uid), with a reference, made if needed with every
 * user above it that is missing (two per level of nesting, 32 levels: made
 * from the top down in a loop, not by recursion); NULL without memory.
 */
static struct syncmem_user *syncmem_user_get(struct user_namespace *user_ns,
					     kuid_t uid)
{
	const struct syncmem_user_key want = { .user_ns = user_ns, .uid = uid };
	struct syncmem_user *u, *held = NULL;
	struct syncmem_user_key k, missing;

	for (;;) {
		/* Climb to the first user that exists (@u, NULL past the top). */
		k = want;
		missing.user_ns = NULL;
		while (!(u = syncmem_user_lookup(k.user_ns, k.uid))) {
			missing = k;
			if (!syncmem_user_key_up(&k))
				break;
		}
		if (missing.user_ns) {
			/* Make the highest one missing, below @u. */
			u = syncmem_user_make(&missing, u);
			if (u && (missing.user_ns != want.user_ns ||
				  !uid_eq(missing.uid, want.uid))) {
				/* Held until the next one down holds it. */
				syncmem_user_put(held);
				held = u;
				continue;
			}
		}
		syncmem_user_put(held);
		return u;
	}
}

/* The caller's user (real uid), created if needed; NULL without memory. */
struct syncmem_user *syncmem_user_get_current(void)
{
	return syncmem_user_get(current_user_ns(), current_uid());
}

/* The caller's user if it has one (for STATS); NULL otherwise. */
struct syncmem_user *syncmem_user_find_current(void)
{
	return syncmem_user_lookup(current_user_ns(), current_uid());
}

void syncmem_user_put(struct syncmem_user *u)
{
	while (u && refcount_dec_and_mutex_lock(&u->ref, &syncmem_users_mutex)) {
		struct syncmem_user *parent = u->parent;

		rhashtable_remove_fast(&syncmem_users, &u->node, syncmem_user_params);
		mutex_unlock(&syncmem_users_mutex);
		put_user_ns(u->user_ns);
		kfree_rcu(u, rcu);
		u = parent;
	}
}

int syncmem_limits_init(void)
{
	return rhashtable_init(&syncmem_users, &syncmem_user_params);
}

/* Module exit: every object, hence every user, is gone. */
void syncmem_limits_exit(void)
{
	rhashtable_destroy(&syncmem_users);
}
