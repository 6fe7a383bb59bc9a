/* One lock per user id in a table of keys, shared by two processes. */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

static int deposit(struct syncmem_region *r, struct syncmem_keyed *k,
		   long *balance, uint32_t user)
{
	char key[SYNCMEM_KEY_MAX];
	struct syncmem_key_part parts[] = {
		SYNCMEM_KEY_STR("user"), SYNCMEM_KEY_VAL(user),
	};
	int len = syncmem_key_build(key, sizeof(key), parts, 2);
	int err = len;

	if (len > 0)
		err = syncmem_keyed_lock(r, k, key, len, SYNCMEM_FOREVER);
	if (err && err != -EOWNERDEAD)
		return err;
	balance[user]++;		/* only this user's entry is locked */
	return syncmem_keyed_unlock(r, k, key, len);
}

int main(void)
{
	struct syncmem_region *r;
	struct syncmem_keyed *k;
	size_t need = syncmem_keyed_footprint(64);
	int err = syncmem_open(NULL, need + 4096, 0, 0, &r);

	if (!err)
		err = syncmem_keyed_init(syncmem_base(r), need, 64, &k);
	if (err) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	long *balance = (long *)((char *)syncmem_base(r) + need);
	pid_t child = fork();

	if (child == 0)			/* a process attaches by address */
		syncmem_keyed_attach(syncmem_base(r), need, &k);
	for (int i = 0; i < 3000 && !err; i++)
		err = deposit(r, k, balance, i % 3);
	if (child == 0)
		return err ? 1 : 0;
	waitpid(child, NULL, 0);
	printf("%s; balances %ld %ld %ld\n", syncmem_strerror(err),
	       balance[0], balance[1], balance[2]);
	syncmem_close(r);
	return 0;
}
