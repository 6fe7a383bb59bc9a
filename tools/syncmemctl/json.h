/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small JSON writer: one document at a time, on one line, commas and
 * key quoting done here. Strings are bytes: '"' and '\' are escaped, and
 * every byte below 0x20 or above 0x7e as \u00XX, so any name (up to 255
 * arbitrary bytes) comes out as valid ASCII JSON.
 *
 * Every call takes a @key: the member's name inside an object, NULL for an
 * element of an array (or the document itself).
 */
#ifndef SYNCMEMCTL_JSON_H
#define SYNCMEMCTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define JSON_DEPTH_MAX	16	/* syncmemctl nests 5 deep at most */

struct json {
	FILE *f;
	unsigned int depth;
	bool more[JSON_DEPTH_MAX];	/* a member was written at this depth */
};

void json_start(struct json *j, FILE *f);
/* Ends the document with a newline and flushes it. */
void json_finish(struct json *j);

void json_object(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array(struct json *j, const char *key);
void json_array_end(struct json *j);

void json_str(struct json *j, const char *key, const char *s);
void json_bytes(struct json *j, const char *key, const char *s, size_t len);
void json_int(struct json *j, const char *key, long long v);
void json_uint(struct json *j, const char *key, unsigned long long v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);

#endif /* SYNCMEMCTL_JSON_H */
