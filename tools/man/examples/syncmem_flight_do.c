/* Three processes ask for one value at once: it is computed once. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <syncmem.h>

static int compute(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	sleep(1);			/* slow: the others join this flight */
	int n = snprintf(out, cap, "computed by %d", (int)getpid());

	*len = (size_t)n + 1;
	return 0;
}

int main(void)
{
	struct syncmem_region *r;
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
	size_t pl = syncmem_pool_footprint(64, 8);
	size_t fl = syncmem_flight_footprint(8);
	int err = syncmem_open(NULL, pl + fl, 0, 0, &r);
	char *base = syncmem_base(r), out[64];

	if (err || (err = syncmem_pool_init(base, pl, 64, 8, &pool)) ||
	    (err = syncmem_flight_init(r, base + pl, fl, 8, pool, &f))) {
		fprintf(stderr, "%s\n", syncmem_strerror(err));
		return 1;
	}
	for (int i = 0; i < 2; i++)
		if (fork() == 0)
			break;
	err = syncmem_flight_do(r, f, "config", 6, compute, NULL,
				out, sizeof(out));
	if (err < 0)
		snprintf(out, sizeof(out), "%s", syncmem_strerror(err));
	printf("%d got \"%s\"\n", (int)getpid(), out);
	while (wait(NULL) > 0)
		;
	return 0;
}
