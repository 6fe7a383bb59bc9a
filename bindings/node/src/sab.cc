// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one part of the addon that needs V8's own API: a SharedArrayBuffer
 * over memory the addon owns (a region's mapping). Node-API has no external
 * SharedArrayBuffer on Node 18 and 20, so this file builds one with
 * v8::SharedArrayBuffer::NewBackingStore and a deleter, and reads a
 * SharedArrayBuffer's address back. Everything else is Node-API, in C.
 *
 * Node-API values are V8 locals: napi_value is a v8::Local<v8::Value>
 * reinterpreted (node's js_native_api_v8.h does the same casts, and every
 * Node release since Node-API began keeps them so).
 */
#include <cstring>

#include <node_api.h>
#include <v8.h>

#include "sab.h"

static_assert(sizeof(v8::Local<v8::Value>) == sizeof(napi_value),
	      "napi_value is a v8::Local");

static inline v8::Local<v8::Value> to_v8(napi_value v)
{
	v8::Local<v8::Value> local;

	memcpy(static_cast<void *>(&local), &v, sizeof(v));
	return local;
}

static inline napi_value to_napi(v8::Local<v8::Value> local)
{
	return reinterpret_cast<napi_value>(*local);
}

extern "C" napi_value sm_sab_new(void *data, size_t len, sm_sab_deleter deleter,
				 void *deleter_data)
{
	v8::Isolate *isolate = v8::Isolate::GetCurrent();
	std::unique_ptr<v8::BackingStore> store =
		v8::SharedArrayBuffer::NewBackingStore(data, len, deleter, deleter_data);
	v8::Local<v8::SharedArrayBuffer> sab =
		v8::SharedArrayBuffer::New(isolate, std::move(store));

	return to_napi(sab);
}

extern "C" int sm_sab_info(napi_value value, void **data, size_t *len)
{
	v8::Local<v8::Value> v = to_v8(value);

	if (v.IsEmpty() || !v->IsSharedArrayBuffer())
		return -1;
	std::shared_ptr<v8::BackingStore> store =
		v.As<v8::SharedArrayBuffer>()->GetBackingStore();
	*data = store->Data();
	*len = store->ByteLength();
	return 0;
}
