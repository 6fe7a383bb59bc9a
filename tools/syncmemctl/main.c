// SPDX-License-Identifier: GPL-2.0
/*
 * syncmemctl: inspect and manage the syncmem module from the shell
 * (Documentation/syncmem/syncmemctl.rst). This file reads the command line
 * and runs the command; each command lives in a file of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "syncmemctl.h"

#define OPT_TOP		0x1	/* takes --interval and --iterations */

struct command {
	const char *name;
	int min_args, max_args;	/* max -1: any number */
	unsigned int opts;
	int (*run)(const struct options *o);
};

static const struct command commands[] = {
	{ "version",   0, 0,  0,       cmd_version },
	{ "stats",     0, 0,  0,       cmd_stats },
	{ "regions",   0, 0,  0,       cmd_regions },
	{ "create",    2, 3,  0,       cmd_create },
	{ "unlink",    1, 1,  0,       cmd_unlink },
	{ "waiters",   1, 1,  0,       cmd_waiters },
	{ "locks",     1, 1,  0,       cmd_locks },
	{ "top",       0, -1, OPT_TOP, cmd_top },
	{ "deadlocks", 0, -1, 0,       cmd_deadlocks },
};

static int usage(FILE *f)
{
	fprintf(f,
		"usage: syncmemctl version [--json]\n"
		"       syncmemctl stats [--json]\n"
		"       syncmemctl regions [--json]\n"
		"       syncmemctl create NAME SIZE [MODE] [--json]\n"
		"       syncmemctl unlink NAME [--json]\n"
		"       syncmemctl waiters REGION [--json]\n"
		"       syncmemctl locks REGION [--json]\n"
		"       syncmemctl top [REGION...] [--interval MS] [--iterations N] [--json]\n"
		"       syncmemctl deadlocks [REGION...] [--json]\n");
	return f == stdout ? 0 : EXIT_ERROR;
}

int fail(const char *cmd, int err, const char *what, ...)
{
	va_list ap;

	fprintf(stderr, "syncmemctl: %s: ", cmd);
	va_start(ap, what);
	vfprintf(stderr, what, ap);
	va_end(ap);
	fprintf(stderr, ": %s%s\n", syncmem_strerror(err),
		err == -ENOTTY ? " (the loaded module has no introspection ioctls)" : "");
	return EXIT_ERROR;
}

/* A whole decimal number in [min, max], for an option's value. */
static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/*
 * Options may come anywhere after the command; "--" ends them. The value
 * of --interval and --iterations comes as the next argument or after '='.
 */
static bool parse_options(const struct command *c, int argc, char **argv,
			  struct options *o)
{
	bool dashdash = false;

	o->args = argv;
	o->nargs = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		long *dest;

		if (dashdash || a[0] != '-' || !a[1]) {
			o->args[o->nargs++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			dashdash = true;
			continue;
		}
		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!(c->opts & OPT_TOP))
			return false;
		if (!strncmp(a, "--interval", 10) && (!a[10] || a[10] == '=')) {
			dest = &o->interval_ms;
			val = a[10] ? a + 11 : NULL;
		} else if (!strncmp(a, "--iterations", 12) && (!a[12] || a[12] == '=')) {
			dest = &o->iterations;
			val = a[12] ? a + 13 : NULL;
		} else {
			return false;
		}
		if (!val) {
			if (++i == argc)
				return false;
			val = argv[i];
		}
		if (!parse_long(val, 1, INT_MAX, dest))
			return false;
	}
	return o->nargs >= c->min_args && (c->max_args < 0 || o->nargs <= c->max_args);
}

int main(int argc, char **argv)
{
	struct options o = { .interval_ms = 1000 };

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "help")))
		return usage(stdout);
	if (argc < 2)
		return usage(stderr);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];

		if (strcmp(argv[1], c->name))
			continue;
		if (!parse_options(c, argc - 2, argv + 2, &o))
			return usage(stderr);
		return c->run(&o);
	}
	return usage(stderr);
}
