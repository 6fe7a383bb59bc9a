// SPDX-License-Identifier: GPL-2.0
/* syncmemctl's JSON writer (json.h). */
#include <string.h>

#include "json.h"

void json_start(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->more[0] = false;
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

/* @len bytes as a JSON string. */
static void put_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The separator and the key before a value at the current depth. */
static void member(struct json *j, const char *key)
{
	if (j->more[j->depth])
		fputc(',', j->f);
	j->more[j->depth] = true;
	if (key) {
		put_string(j->f, key, strlen(key));
		fputc(':', j->f);
	}
}

static void container_open(struct json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_DEPTH_MAX)
		j->depth++;
	j->more[j->depth] = false;
}

static void container_close(struct json *j, char c)
{
	fputc(c, j->f);
	if (j->depth)
		j->depth--;
}

void json_object(struct json *j, const char *key)
{
	container_open(j, key, '{');
}

void json_object_end(struct json *j)
{
	container_close(j, '}');
}

void json_array(struct json *j, const char *key)
{
	container_open(j, key, '[');
}

void json_array_end(struct json *j)
{
	container_close(j, ']');
}

void json_bytes(struct json *j, const char *key, const char *s, size_t len)
{
	member(j, key);
	put_string(j->f, s, len);
}

void json_str(struct json *j, const char *key, const char *s)
{
	if (s)
		json_bytes(j, key, s, strlen(s));
	else
		json_null(j, key);
}

void json_int(struct json *j, const char *key, long long v)
{
	member(j, key);
	fprintf(j->f, "%lld", v);
}

void json_uint(struct json *j, const char *key, unsigned long long v)
{
	member(j, key);
	fprintf(j->f, "%llu", v);
}

void json_bool(struct json *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}
