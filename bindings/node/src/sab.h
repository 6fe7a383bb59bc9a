/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SharedArrayBuffers over the addon's own memory (sab.cc, V8's API). */
#ifndef SM_SAB_H
#define SM_SAB_H

#include <stddef.h>
#include <node_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called once, on any thread, when the last SharedArrayBuffer over @data is gone. */
typedef void (*sm_sab_deleter)(void *data, size_t len, void *deleter_data);

/*
 * A new SharedArrayBuffer of @len bytes at @data, in the current isolate's
 * handle scope. @deleter runs when V8 frees the memory's last buffer (the
 * buffer and every copy of it posted to other threads). NULL on failure
 * (then @deleter has run).
 */
napi_value sm_sab_new(void *data, size_t len, sm_sab_deleter deleter, void *deleter_data);

/* The memory of a SharedArrayBuffer: 0, or -1 when @value is not one. */
int sm_sab_info(napi_value value, void **data, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
