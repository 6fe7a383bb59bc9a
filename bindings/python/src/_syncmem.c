// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * _syncmem: the CPython extension under the syncmem package.
 *
 * Types: Region (the buffer protocol over a mapping, atomics, wait and
 * notify), Loop (a syncmem_loop whose fd asyncio watches), Lock (a robust
 * struct syncmem_lock in a region), Pool (the block allocator) and, for Web
 * Locks, Manager and Held. The pure-Python layer (syncmem/__init__.py)
 * gives them their public shape; everything here is called from it.
 *
 * The GIL is released around every call that may block. A region counts
 * those calls (busy) and the buffers it exports: close() refuses while
 * either is non-zero, so no call ever uses a mapping that is gone.
 * Callbacks of a Loop take the GIL themselves (PyGILState_Ensure), so a
 * run with the GIL released may call them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "syncmem.h"

#if PY_VERSION_HEX < 0x030d0000
#define PyLong_AsInt _PyLong_AsInt
#endif

/* Exception classes of syncmem._errors, fetched at import. */
static PyObject *OwnerDiedError;
static PyObject *ModuleNotLoadedError;
/* "ok", "not-equal", "timed-out": the results of waits, as Atomics.wait's. */
static PyObject *result_str[3];

/* ---- errors ----------------------------------------------------------------- */

/*
 * Raise the Python exception for a negative errno: ValueError for bad
 * arguments, OwnerDiedError, ModuleNotLoadedError (/dev/syncmem missing),
 * else OSError(errno, text), which Python turns into its subclass
 * (TimeoutError, FileNotFoundError, PermissionError...). Returns NULL.
 */
static PyObject *set_error(int err)
{
	const char *text = syncmem_strerror(err);
	PyObject *type = PyExc_OSError, *exc;

	if (err >= 0)
		err = -EIO;
	if (err == -EINVAL || err == -ERANGE) {
		PyErr_SetString(PyExc_ValueError, text);
		return NULL;
	}
	if (err == -ENOMEM) {
		PyErr_NoMemory();
		return NULL;
	}
	if (err == -EOWNERDEAD && OwnerDiedError)
		type = OwnerDiedError;
	else if (err == -ENODEV && ModuleNotLoadedError)
		type = ModuleNotLoadedError;
	exc = PyObject_CallFunction(type, "is", -err, text);
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* Seconds (None or negative: forever) to nanoseconds. -1 with an exception set on error. */
static int timeout_ns(PyObject *o, int64_t *out)
{
	double s;

	if (o == NULL || o == Py_None) {
		*out = SYNCMEM_FOREVER;
		return 0;
	}
	s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (s != s) {
		PyErr_SetString(PyExc_ValueError, "timeout must not be NaN");
		return -1;
	}
	if (s < 0)
		*out = SYNCMEM_FOREVER;
	else if (s >= 9.2e9)
		*out = SYNCMEM_FOREVER;	/* beyond 292 years: no limit */
	else
		*out = (int64_t)(s * 1e9);
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* What is left of a relative timeout that began at @start (never below 0). */
static int64_t remaining(int64_t timeout, int64_t start)
{
	int64_t left;

	if (timeout < 0)
		return timeout;
	left = timeout - (now_ns() - start);
	return left < 0 ? 0 : left;
}

/* ---- Region ----------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	struct syncmem_region *r;	/* NULL once closed */
	char *base;
	Py_ssize_t size;
	int readonly;
	Py_ssize_t exports;		/* buffers handed out and not released */
	Py_ssize_t busy;		/* calls under way without the GIL, pending
					 * async acquisitions and held Web Locks */
	PyObject *name;			/* str, or None for an anonymous region */
	PyObject *weakreflist;
} RegionObject;

static PyTypeObject RegionType;

static int region_check(RegionObject *self)
{
	if (self->r == NULL) {
		PyErr_SetString(PyExc_ValueError, "syncmem: the region is closed");
		return -1;
	}
	return 0;
}

static PyObject *region_wrap(PyTypeObject *type, struct syncmem_region *r, PyObject *name,
			     int readonly)
{
	RegionObject *self = (RegionObject *)type->tp_alloc(type, 0);

	if (self == NULL) {
		syncmem_close(r);
		return NULL;
	}
	self->r = r;
	self->base = syncmem_base(r);
	self->size = (Py_ssize_t)syncmem_size(r);
	self->readonly = readonly;
	Py_INCREF(name);
	self->name = name;
	return (PyObject *)self;
}

/* _syncmem.open(name or None, size, flags, mode) -> Region */
static PyObject *mod_open(PyObject *mod, PyObject *args)
{
	PyObject *name_obj, *bytes = NULL, *ret;
	Py_ssize_t size;
	unsigned int flags, mode;
	struct syncmem_region *r = NULL;
	const char *name = NULL;
	int err;

	(void)mod;
	if (!PyArg_ParseTuple(args, "OnII", &name_obj, &size, &flags, &mode))
		return NULL;
	if (size < 0) {
		PyErr_SetString(PyExc_ValueError, "size must not be negative");
		return NULL;
	}
	if (name_obj != Py_None) {
		if (!PyUnicode_Check(name_obj)) {
			PyErr_SetString(PyExc_TypeError, "name must be a str or None");
			return NULL;
		}
		bytes = PyUnicode_AsUTF8String(name_obj);
		if (bytes == NULL)
			return NULL;
		if (strlen(PyBytes_AS_STRING(bytes)) != (size_t)PyBytes_GET_SIZE(bytes)) {
			Py_DECREF(bytes);
			PyErr_SetString(PyExc_ValueError, "name must not contain NUL");
			return NULL;
		}
		name = PyBytes_AS_STRING(bytes);
	}
	Py_BEGIN_ALLOW_THREADS
	err = syncmem_open(name, (size_t)size, flags, (mode_t)mode, &r);
	Py_END_ALLOW_THREADS
	Py_XDECREF(bytes);
	if (err < 0)
		return set_error(err);
	ret = region_wrap(&RegionType, r, name_obj, (flags & SYNCMEM_RDONLY) != 0);
	return ret;
}

/* _syncmem.from_fd(fd) -> Region over a dup of @fd (the caller keeps @fd). */
static PyObject *mod_from_fd(PyObject *mod, PyObject *arg)
{
	struct syncmem_region *r = NULL;
	int fd, dup_fd, err, acc;

	(void)mod;
	fd = PyLong_AsInt(arg);
	if (fd == -1 && PyErr_Occurred())
		return NULL;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return set_error(-errno);
	acc = fcntl(dup_fd, F_GETFL);
	err = syncmem_open_fd(dup_fd, &r);
	if (err < 0) {
		close(dup_fd);
		return set_error(err);
	}
	return region_wrap(&RegionType, r, Py_None, acc >= 0 && (acc & O_ACCMODE) == O_RDONLY);
}

static PyObject *mod_unlink(PyObject *mod, PyObject *arg)
{
	const char *name;
	int err;

	(void)mod;
	name = PyUnicode_AsUTF8(arg);
	if (name == NULL)
		return NULL;
	err = syncmem_unlink(name);
	if (err < 0)
		return set_error(err);
	Py_RETURN_NONE;
}

static PyObject *mod_strerror(PyObject *mod, PyObject *arg)
{
	int err = PyLong_AsInt(arg);

	(void)mod;
	if (err == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(syncmem_strerror(err));
}

static PyObject *mod_version(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyUnicode_FromString(syncmem_version());
}

static PyObject *region_close(RegionObject *self, PyObject *unused)
{
	(void)unused;
	if (self->r == NULL)
		Py_RETURN_NONE;
	if (self->exports > 0) {
		PyErr_SetString(PyExc_BufferError,
				"syncmem: cannot close a region while buffers (memoryview, numpy arrays) over it exist");
		return NULL;
	}
	if (self->busy > 0) {
		PyErr_SetString(PyExc_BufferError,
				"syncmem: cannot close a region in use: a thread waits on it, an async lock request is pending, or a Web Lock in it is held");
		return NULL;
	}
	syncmem_close(self->r);
	self->r = NULL;
	self->base = NULL;
	Py_RETURN_NONE;
}

static void region_dealloc(RegionObject *self)
{
	if (self->weakreflist)
		PyObject_ClearWeakRefs((PyObject *)self);
	if (self->r)
		syncmem_close(self->r);
	Py_XDECREF(self->name);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int region_getbuffer(RegionObject *self, Py_buffer *view, int flags)
{
	if (region_check(self) < 0) {
		view->obj = NULL;
		PyErr_SetString(PyExc_BufferError, "syncmem: the region is closed");
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)self, self->base, self->size, self->readonly,
			      flags) < 0)
		return -1;
	self->exports++;
	return 0;
}

static void region_releasebuffer(RegionObject *self, Py_buffer *view)
{
	(void)view;
	self->exports--;
}

static PyBufferProcs region_as_buffer = {
	.bf_getbuffer = (getbufferproc)region_getbuffer,
	.bf_releasebuffer = (releasebufferproc)region_releasebuffer,
};

/* The address of the @size-byte word at @offset, or NULL with ValueError. */
static void *region_word(RegionObject *self, Py_ssize_t offset, int size)
{
	if (region_check(self) < 0)
		return NULL;
	if (size != 4 && size != 8) {
		PyErr_SetString(PyExc_ValueError, "size must be 4 or 8");
		return NULL;
	}
	if (offset < 0 || offset > self->size - size || offset % size) {
		PyErr_Format(PyExc_ValueError,
			     "offset %zd is not a %d-byte aligned word inside the region (%zd bytes)",
			     offset, size, self->size);
		return NULL;
	}
	return self->base + offset;
}

static int region_writable(RegionObject *self)
{
	if (self->readonly) {
		set_error(-EBADF);
		return -1;
	}
	return 0;
}

/* A value for a word: ints in [-2^(8*size-1), 2^(8*size)) taken modulo 2^(8*size). */
static int word_value(PyObject *o, int size, uint64_t *out)
{
	int overflow = 0;
	long long v = PyLong_AsLongLongAndOverflow(o, &overflow);

	if (v == -1 && PyErr_Occurred())
		return -1;
	if (overflow > 0) {
		unsigned long long u = PyLong_AsUnsignedLongLong(o);

		if (u == (unsigned long long)-1 && PyErr_Occurred())
			return -1;
		*out = u;
		return 0;
	}
	if (overflow < 0) {
		PyErr_SetString(PyExc_OverflowError, "value does not fit in 64 bits");
		return -1;
	}
	if (size == 4 && (v < INT32_MIN || v > (long long)UINT32_MAX)) {
		PyErr_SetString(PyExc_OverflowError, "value does not fit in 32 bits");
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

static PyObject *word_object(uint64_t v, int size)
{
	return size == 4 ? PyLong_FromUnsignedLong((uint32_t)v) : PyLong_FromUnsignedLongLong(v);
}

enum { OP_LOAD, OP_STORE, OP_ADD, OP_SUB, OP_AND, OP_OR, OP_XOR, OP_XCHG };

static PyObject *region_atomic(RegionObject *self, PyObject *args, PyObject *kw, int op)
{
	static char *kwlist[] = { "offset", "value", "size", NULL };
	static char *kwlist_load[] = { "offset", "size", NULL };
	Py_ssize_t offset;
	PyObject *val = NULL;
	int size = 4;
	uint64_t v = 0, old = 0;
	void *p;

	if (op == OP_LOAD) {
		if (!PyArg_ParseTupleAndKeywords(args, kw, "n|$i", kwlist_load, &offset, &size))
			return NULL;
	} else if (!PyArg_ParseTupleAndKeywords(args, kw, "nO|$i", kwlist, &offset, &val, &size)) {
		return NULL;
	}
	p = region_word(self, offset, size);
	if (p == NULL)
		return NULL;
	if (op != OP_LOAD && (region_writable(self) < 0 || word_value(val, size, &v) < 0))
		return NULL;
	if (size == 4) {
		_Atomic uint32_t *w = p;
		uint32_t v32 = (uint32_t)v;

		switch (op) {
		case OP_LOAD: old = atomic_load(w); break;
		case OP_STORE: atomic_store(w, v32); old = v32; break;
		case OP_ADD: old = atomic_fetch_add(w, v32); break;
		case OP_SUB: old = atomic_fetch_sub(w, v32); break;
		case OP_AND: old = atomic_fetch_and(w, v32); break;
		case OP_OR: old = atomic_fetch_or(w, v32); break;
		case OP_XOR: old = atomic_fetch_xor(w, v32); break;
		case OP_XCHG: old = atomic_exchange(w, v32); break;
		}
	} else {
		_Atomic uint64_t *w = p;

		switch (op) {
		case OP_LOAD: old = atomic_load(w); break;
		case OP_STORE: atomic_store(w, v); old = v; break;
		case OP_ADD: old = atomic_fetch_add(w, v); break;
		case OP_SUB: old = atomic_fetch_sub(w, v); break;
		case OP_AND: old = atomic_fetch_and(w, v); break;
		case OP_OR: old = atomic_fetch_or(w, v); break;
		case OP_XOR: old = atomic_fetch_xor(w, v); break;
		case OP_XCHG: old = atomic_exchange(w, v); break;
		}
	}
	return word_object(old, size);
}

#define ATOMIC_METHOD(fn, op) \
	static PyObject *fn(RegionObject *self, PyObject *args, PyObject *kw) \
	{ return region_atomic(self, args, kw, op); }
ATOMIC_METHOD(region_load, OP_LOAD)
ATOMIC_METHOD(region_store, OP_STORE)
ATOMIC_METHOD(region_add, OP_ADD)
ATOMIC_METHOD(region_sub, OP_SUB)
ATOMIC_METHOD(region_and, OP_AND)
ATOMIC_METHOD(region_or, OP_OR)
ATOMIC_METHOD(region_xor, OP_XOR)
ATOMIC_METHOD(region_exchange, OP_XCHG)

static PyObject *region_compare_exchange(RegionObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "expected", "desired", "size", NULL };
	Py_ssize_t offset;
	PyObject *eo, *dobj;
	int size = 4;
	uint64_t e, d;
	void *p;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "nOO|$i", kwlist, &offset, &eo, &dobj, &size))
		return NULL;
	p = region_word(self, offset, size);
	if (p == NULL || region_writable(self) < 0 || word_value(eo, size, &e) < 0 ||
	    word_value(dobj, size, &d) < 0)
		return NULL;
	if (size == 4) {
		uint32_t e32 = (uint32_t)e;

		atomic_compare_exchange_strong((_Atomic uint32_t *)p, &e32, (uint32_t)d);
		return word_object(e32, 4);
	}
	atomic_compare_exchange_strong((_Atomic uint64_t *)p, &e, d);
	return word_object(e, 8);
}

/*
 * region.wait(offset, expected, timeout=None, *, size=4) -> "ok",
 * "not-equal" or "timed-out", with the GIL released. A signal whose
 * Python handler raises ends the wait with that exception; otherwise the
 * wait goes on with what is left of the timeout (PEP 475).
 */
static PyObject *region_wait(RegionObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "expected", "timeout", "size", NULL };
	Py_ssize_t offset;
	PyObject *eo, *to = Py_None;
	int size = 4, rc;
	uint64_t expected;
	int64_t timeout, start;
	void *p;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "nO|O$i", kwlist, &offset, &eo, &to, &size))
		return NULL;
	p = region_word(self, offset, size);
	if (p == NULL || word_value(eo, size, &expected) < 0 || timeout_ns(to, &timeout) < 0)
		return NULL;
	start = now_ns();
	self->busy++;
	for (;;) {
		int64_t left = remaining(timeout, start);

		Py_BEGIN_ALLOW_THREADS
		if (size == 4)
			rc = syncmem_wait32_interruptible(self->r, p, (uint32_t)expected, left);
		else
			rc = syncmem_wait64_interruptible(self->r, p, expected, left);
		Py_END_ALLOW_THREADS
		if (rc != -EINTR)
			break;
		if (PyErr_CheckSignals() < 0) {
			self->busy--;
			return NULL;
		}
	}
	self->busy--;
	if (rc < 0)
		return set_error(rc);
	if (rc > SYNCMEM_TIMED_OUT)
		return set_error(-EPROTO);
	Py_INCREF(result_str[rc]);
	return result_str[rc];
}

/* region.notify(offset, count=ALL) -> how many woke */
static PyObject *region_notify(RegionObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "offset", "count", NULL };
	Py_ssize_t offset;
	PyObject *co = Py_None;
	uint32_t count = SYNCMEM_ALL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "n|O", kwlist, &offset, &co))
		return NULL;
	if (region_check(self) < 0)
		return NULL;
	if (co != Py_None) {
		long long c = PyLong_AsLongLong(co);

		if (c == -1 && PyErr_Occurred())
			return NULL;
		if (c < 0) {
			PyErr_SetString(PyExc_ValueError, "count must not be negative");
			return NULL;
		}
		count = c >= (long long)SYNCMEM_ALL ? SYNCMEM_ALL : (uint32_t)c;
	}
	if (offset < 0 || offset > self->size - 4 || offset % 4) {
		PyErr_Format(PyExc_ValueError,
			     "offset %zd is not a 4-byte aligned word inside the region", offset);
		return NULL;
	}
	rc = syncmem_notify(self->r, self->base + offset, count);
	if (rc < 0)
		return set_error(rc);
	return PyLong_FromLong(rc);
}

/* region.waiters(offset) -> how many wait on the word now (introspection) */
static PyObject *region_waiters(RegionObject *self, PyObject *arg)
{
	Py_ssize_t offset = PyLong_AsSsize_t(arg);
	int rc;

	if (offset == -1 && PyErr_Occurred())
		return NULL;
	if (region_check(self) < 0)
		return NULL;
	if (offset < 0 || offset > self->size - 4 || offset % 4) {
		PyErr_Format(PyExc_ValueError,
			     "offset %zd is not a 4-byte aligned word inside the region", offset);
		return NULL;
	}
	rc = syncmem_waiters(self->r, self->base + offset, NULL, 0);
	if (rc < 0)
		return set_error(rc);
	return PyLong_FromLong(rc);
}

static PyObject *region_enter(RegionObject *self, PyObject *unused)
{
	(void)unused;
	if (region_check(self) < 0)
		return NULL;
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *region_exit(RegionObject *self, PyObject *args)
{
	(void)args;
	return region_close(self, NULL);
}

static PyObject *region_get_fd(RegionObject *self, void *c)
{
	(void)c;
	if (region_check(self) < 0)
		return NULL;
	return PyLong_FromLong(syncmem_region_fd(self->r));
}

static PyObject *region_get_size(RegionObject *self, void *c)
{
	(void)c;
	return PyLong_FromSsize_t(self->size);
}

static PyObject *region_get_closed(RegionObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(self->r == NULL);
}

static PyObject *region_get_address(RegionObject *self, void *c)
{
	(void)c;
	if (region_check(self) < 0)
		return NULL;
	return PyLong_FromVoidPtr(self->base);
}

static PyObject *region_repr(RegionObject *self)
{
	if (self->name == Py_None)
		return PyUnicode_FromFormat("<syncmem.Region anonymous, %zd bytes%s>", self->size,
					    self->r ? "" : ", closed");
	return PyUnicode_FromFormat("<syncmem.Region %R, %zd bytes%s>", self->name, self->size,
				    self->r ? "" : ", closed");
}

static PyMethodDef region_methods[] = {
	{ "close", (PyCFunction)region_close, METH_NOARGS,
	  "Unmap and close. BufferError while buffers over it exist or a thread waits on it." },
	{ "load", (PyCFunction)(void (*)(void))region_load, METH_VARARGS | METH_KEYWORDS,
	  "load(offset, *, size=4): the word, read atomically." },
	{ "store", (PyCFunction)(void (*)(void))region_store, METH_VARARGS | METH_KEYWORDS,
	  "store(offset, value, *, size=4): write the word atomically; returns value." },
	{ "add", (PyCFunction)(void (*)(void))region_add, METH_VARARGS | METH_KEYWORDS,
	  "add(offset, value, *, size=4): atomic fetch-add; returns the old value." },
	{ "sub", (PyCFunction)(void (*)(void))region_sub, METH_VARARGS | METH_KEYWORDS,
	  "sub(offset, value, *, size=4): atomic fetch-sub; returns the old value." },
	{ "and_", (PyCFunction)(void (*)(void))region_and, METH_VARARGS | METH_KEYWORDS,
	  "and_(offset, value, *, size=4): atomic fetch-and; returns the old value." },
	{ "or_", (PyCFunction)(void (*)(void))region_or, METH_VARARGS | METH_KEYWORDS,
	  "or_(offset, value, *, size=4): atomic fetch-or; returns the old value." },
	{ "xor", (PyCFunction)(void (*)(void))region_xor, METH_VARARGS | METH_KEYWORDS,
	  "xor(offset, value, *, size=4): atomic fetch-xor; returns the old value." },
	{ "exchange", (PyCFunction)(void (*)(void))region_exchange, METH_VARARGS | METH_KEYWORDS,
	  "exchange(offset, value, *, size=4): atomic swap; returns the old value." },
	{ "compare_exchange", (PyCFunction)(void (*)(void))region_compare_exchange,
	  METH_VARARGS | METH_KEYWORDS,
	  "compare_exchange(offset, expected, desired, *, size=4): returns the old value." },
	{ "wait", (PyCFunction)(void (*)(void))region_wait, METH_VARARGS | METH_KEYWORDS,
	  "wait(offset, expected, timeout=None, *, size=4) -> 'ok', 'not-equal' or 'timed-out'.\n"
	  "Sleeps (GIL released) while the word holds expected, until a notify or the timeout\n"
	  "(seconds; None: none)." },
	{ "notify", (PyCFunction)(void (*)(void))region_notify, METH_VARARGS | METH_KEYWORDS,
	  "notify(offset, count=None): wake up to count waiters (None: all); returns how many woke." },
	{ "waiters", (PyCFunction)region_waiters, METH_O,
	  "waiters(offset): how many processes and tasks wait on the word now." },
	{ "__enter__", (PyCFunction)region_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)region_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef region_getset[] = {
	{ "fd", (getter)region_get_fd, NULL, "The region fd (pass it to another process).", NULL },
	{ "size", (getter)region_get_size, NULL, "Bytes mapped.", NULL },
	{ "closed", (getter)region_get_closed, NULL, "True once closed.", NULL },
	{ "address", (getter)region_get_address, NULL, "The mapping's address in this process.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMemberDef region_members[] = {
	{ "name", T_OBJECT, offsetof(RegionObject, name), READONLY,
	  "The region's name, or None when anonymous." },
	{ "readonly", T_BOOL, offsetof(RegionObject, readonly), READONLY,
	  "True when mapped read-only." },
	{ NULL, 0, 0, 0, NULL },
};

static PyTypeObject RegionType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syncmem.Region",
	.tp_basicsize = sizeof(RegionObject),
	.tp_dealloc = (destructor)region_dealloc,
	.tp_repr = (reprfunc)region_repr,
	.tp_as_buffer = &region_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Shared memory from /dev/syncmem: syncmem.open(), anonymous() or from_fd().",
	.tp_weaklistoffset = offsetof(RegionObject, weakreflist),
	.tp_methods = region_methods,
	.tp_members = region_members,
	.tp_getset = region_getset,
};

/* An object of @len bytes at @offset (aligned to @align) inside @region, or NULL. */
static void *region_object(RegionObject *region, Py_ssize_t offset, Py_ssize_t len,
			   Py_ssize_t align)
{
	if (region_check(region) < 0)
		return NULL;
	if (offset < 0 || len > region->size || offset > region->size - len || offset % align) {
		PyErr_Format(PyExc_ValueError,
			     "offset %zd: %zd bytes aligned to %zd do not fit in the region (%zd bytes)",
			     offset, len, align, region->size);
		return NULL;
	}
	return region->base + offset;
}

/* ---- Loop: async waits delivered through a pollable fd ------------------------ */

typedef struct {
	PyObject_HEAD
	struct syncmem_loop *loop;	/* NULL once closed */
	int fd;
	pid_t pid;			/* the process that made it */
} LoopObject;

static PyTypeObject LoopType;

/* What a pending callback keeps alive. */
struct pycb {
	PyObject *fn;		/* fn(result) */
	PyObject *keep;		/* the region or lock the wait uses */
	RegionObject *pinned;	/* busy while pending: the library writes it */
};

static struct pycb *pycb_new(PyObject *fn, PyObject *keep)
{
	struct pycb *c = PyMem_RawMalloc(sizeof(*c));

	if (c == NULL) {
		PyErr_NoMemory();
		return NULL;
	}
	Py_INCREF(fn);
	Py_XINCREF(keep);
	c->fn = fn;
	c->keep = keep;
	c->pinned = NULL;
	return c;
}

/* Drop a callback that will never run (the call that would queue it failed). */
static void pycb_drop(struct pycb *c)
{
	if (c->pinned)
		c->pinned->busy--;
	Py_DECREF(c->fn);
	Py_XDECREF(c->keep);
	PyMem_RawFree(c);
}

/* Callbacks due while the interpreter shuts down are dropped (leaked). */
static int finalizing(void)
{
#if PY_VERSION_HEX >= 0x030d0000
	return Py_IsFinalizing();
#else
	return _Py_IsFinalizing();
#endif
}

static void pycb_call(void *arg, int result)
{
	struct pycb *c = arg;
	PyGILState_STATE g;
	PyObject *ret;

	if (finalizing())
		return;
	g = PyGILState_Ensure();
	ret = PyObject_CallFunction(c->fn, "i", result);

	if (ret == NULL)
		PyErr_WriteUnraisable(c->fn);
	Py_XDECREF(ret);
	pycb_drop(c);
	PyGILState_Release(g);
}

static int loop_check(LoopObject *self)
{
	if (self->loop == NULL) {
		PyErr_SetString(PyExc_ValueError, "syncmem: the loop is closed");
		return -1;
	}
	if (self->pid != getpid()) {
		PyErr_SetString(PyExc_RuntimeError,
				"syncmem: this loop belongs to the parent process; a forked child makes its own");
		return -1;
	}
	return 0;
}

static PyObject *loop_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	LoopObject *self;
	struct syncmem_loop *loop = NULL;
	int err;

	if (!PyArg_ParseTuple(args, ":Loop") || (kw && PyDict_Size(kw))) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "Loop() takes no arguments");
		return NULL;
	}
	err = syncmem_loop_new(&loop);
	if (err < 0)
		return set_error(err);
	self = (LoopObject *)type->tp_alloc(type, 0);
	if (self == NULL) {
		syncmem_loop_free(loop);
		return NULL;
	}
	self->loop = loop;
	self->fd = syncmem_loop_fd(loop);
	self->pid = getpid();
	return (PyObject *)self;
}

static void loop_free(LoopObject *self)
{
	struct syncmem_loop *loop = self->loop;

	self->loop = NULL;
	if (loop)
		syncmem_loop_free(loop);
}

static void loop_dealloc(LoopObject *self)
{
	loop_free(self);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Close: every pending callback runs with -ECANCELED (or its real result). */
static PyObject *loop_close(LoopObject *self, PyObject *unused)
{
	(void)unused;
	loop_free(self);
	Py_RETURN_NONE;
}

static PyObject *loop_run_once(LoopObject *self, PyObject *args)
{
	PyObject *to = NULL;
	int64_t timeout;
	int rc;

	if (!PyArg_ParseTuple(args, "|O", &to))
		return NULL;
	if (loop_check(self) < 0)
		return NULL;
	if (to == NULL) {
		timeout = 0;
	} else if (timeout_ns(to, &timeout) < 0) {
		return NULL;
	}
	if (timeout == 0) {
		rc = syncmem_loop_run_once(self->loop, 0);
	} else {
		Py_BEGIN_ALLOW_THREADS
		rc = syncmem_loop_run_once(self->loop, timeout);
		Py_END_ALLOW_THREADS
	}
	if (PyErr_Occurred())
		return NULL;
	if (rc < 0)
		return set_error(rc);
	return PyLong_FromLong(rc);
}

/*
 * loop.wait(region, offset, expected, timeout, size, fn) -> (status, id):
 * status 1 (not-equal) or 2 (timed-out) with nothing queued, or 3 (pending)
 * and fn(result) runs later from run_once() or close().
 */
static PyObject *loop_wait(LoopObject *self, PyObject *args)
{
	RegionObject *region;
	Py_ssize_t offset;
	PyObject *eo, *to, *fn;
	int size, rc;
	uint64_t expected, id = 0;
	int64_t timeout;
	struct pycb *c;
	void *p;

	if (!PyArg_ParseTuple(args, "O!nOOiO", &RegionType, &region, &offset, &eo, &to, &size, &fn))
		return NULL;
	if (loop_check(self) < 0)
		return NULL;
	p = region_word(region, offset, size);
	if (p == NULL || word_value(eo, size, &expected) < 0 || timeout_ns(to, &timeout) < 0)
		return NULL;
	c = pycb_new(fn, (PyObject *)region);
	if (c == NULL)
		return NULL;
	if (size == 4)
		rc = syncmem_wait_async32(self->loop, region->r, p, (uint32_t)expected, timeout,
					  pycb_call, c, &id);
	else
		rc = syncmem_wait_async64(self->loop, region->r, p, expected, timeout, pycb_call, c,
					  &id);
	if (rc != SYNCMEM_PENDING)
		pycb_drop(c);
	if (rc < 0)
		return set_error(rc);
	return Py_BuildValue("iK", rc, (unsigned long long)id);
}

/* loop.cancel(id) -> True if it was still queued (its fn gets -ECANCELED). */
static PyObject *loop_cancel(LoopObject *self, PyObject *arg)
{
	unsigned long long id = PyLong_AsUnsignedLongLong(arg);
	int rc;

	if (id == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	if (loop_check(self) < 0)
		return NULL;
	rc = syncmem_wait_cancel(self->loop, id);
	if (rc == -ENOENT)
		Py_RETURN_FALSE;
	if (rc < 0)
		return set_error(rc);
	Py_RETURN_TRUE;
}

static PyObject *loop_get_fd(LoopObject *self, void *c)
{
	(void)c;
	if (loop_check(self) < 0)
		return NULL;
	return PyLong_FromLong(self->fd);
}

static PyObject *loop_get_pending(LoopObject *self, void *c)
{
	(void)c;
	if (self->loop == NULL)
		return PyLong_FromLong(0);
	return PyLong_FromSize_t(syncmem_loop_pending(self->loop));
}

static PyObject *loop_get_closed(LoopObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(self->loop == NULL);
}

static PyObject *loop_lock(LoopObject *self, PyObject *args);
static PyObject *loop_abort(LoopObject *self, PyObject *arg);
static PyObject *loop_locks_request(LoopObject *self, PyObject *args);
static PyObject *loop_locks_abort(LoopObject *self, PyObject *arg);

static PyMethodDef loop_methods[] = {
	{ "close", (PyCFunction)loop_close, METH_NOARGS,
	  "Free the loop; pending callbacks run with -ECANCELED." },
	{ "run_once", (PyCFunction)loop_run_once, METH_VARARGS,
	  "run_once(timeout=0): run the callbacks that are ready; returns how many ran." },
	{ "wait", (PyCFunction)loop_wait, METH_VARARGS,
	  "wait(region, offset, expected, timeout, size, fn) -> (status, id)" },
	{ "cancel", (PyCFunction)loop_cancel, METH_O, "cancel(id) -> bool" },
	{ "lock", (PyCFunction)loop_lock, METH_VARARGS,
	  "lock(lock, fn, timeout=None) -> id or None: acquire asynchronously" },
	{ "abort", (PyCFunction)loop_abort, METH_O,
	  "abort(id) -> bool: abort a pending acquisition of the lock family" },
	{ "locks_request", (PyCFunction)loop_locks_request, METH_VARARGS,
	  "locks_request(manager, name, flags, fn) -> id" },
	{ "locks_abort", (PyCFunction)loop_locks_abort, METH_O, "locks_abort(id) -> bool" },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef loop_getset[] = {
	{ "fd", (getter)loop_get_fd, NULL, "Readable when run_once(0) has work.", NULL },
	{ "pending", (getter)loop_get_pending, NULL, "Callbacks that have not run yet.", NULL },
	{ "closed", (getter)loop_get_closed, NULL, "True once closed.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject LoopType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syncmem._syncmem.Loop",
	.tp_basicsize = sizeof(LoopObject),
	.tp_dealloc = (destructor)loop_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A syncmem event loop (one per thread): its fd is watched by asyncio.",
	.tp_methods = loop_methods,
	.tp_getset = loop_getset,
	.tp_new = loop_new,
};

/* ---- Lock: a robust mutex in a region ----------------------------------------- */

typedef struct {
	PyObject_HEAD
	RegionObject *region;
	Py_ssize_t offset;
	PyObject *weakreflist;
	PyObject *dict;
} LockObject;

static PyTypeObject LockType;

static int lock_init(LockObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "region", "offset", "init", "fair", NULL };
	RegionObject *region;
	Py_ssize_t offset = 0;
	int init = 0, fair = 0;
	void *l;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|n$pp", kwlist, &RegionType, &region,
					 &offset, &init, &fair))
		return -1;
	l = region_object(region, offset, sizeof(struct syncmem_lock), 8);
	if (l == NULL)
		return -1;
	if (init) {
		if (region_writable(region) < 0)
			return -1;
		syncmem_lock_init(l, fair ? SYNCMEM_LOCK_FAIR : 0);
	}
	Py_INCREF(region);
	Py_XSETREF(self->region, region);
	self->offset = offset;
	return 0;
}

static void lock_dealloc(LockObject *self)
{
	PyObject_GC_UnTrack(self);
	if (self->weakreflist)
		PyObject_ClearWeakRefs((PyObject *)self);
	Py_CLEAR(self->region);
	Py_CLEAR(self->dict);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int lock_traverse(LockObject *self, visitproc visit, void *arg)
{
	Py_VISIT(self->region);
	Py_VISIT(self->dict);
	return 0;
}

static int lock_clear(LockObject *self)
{
	Py_CLEAR(self->dict);
	return 0;
}

static struct syncmem_lock *lock_ptr(LockObject *self)
{
	if (self->region == NULL) {
		PyErr_SetString(PyExc_ValueError, "syncmem: the lock was not initialised");
		return NULL;
	}
	if (region_check(self->region) < 0)
		return NULL;
	return (struct syncmem_lock *)(self->region->base + self->offset);
}

/* OwnerDiedError(EOWNERDEAD, text) whose .lock is @self: the caller holds it. */
static PyObject *owner_died(PyObject *self)
{
	PyObject *exc = PyObject_CallFunction(OwnerDiedError, "is", EOWNERDEAD,
					      syncmem_strerror(-EOWNERDEAD));

	if (exc == NULL)
		return NULL;
	if (PyObject_SetAttrString(exc, "lock", self) == 0)
		PyErr_SetObject(OwnerDiedError, exc);
	Py_DECREF(exc);
	return NULL;
}

/*
 * acquire(blocking=True, timeout=None) -> True, or False when not blocking
 * or the timeout passed. OwnerDiedError: acquired from a holder that died.
 */
static PyObject *lock_acquire(LockObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "blocking", "timeout", NULL };
	struct syncmem_lock *l;
	PyObject *to = Py_None;
	int blocking = 1, rc;
	int64_t timeout, start;

	if (args == NULL || (PyTuple_GET_SIZE(args) == 0 && kw == NULL)) {
		timeout = SYNCMEM_FOREVER;	/* the common case, parsed fast */
	} else {
		if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO", kwlist, &blocking, &to))
			return NULL;
		if (timeout_ns(to, &timeout) < 0)
			return NULL;
		if (!blocking && to != Py_None && timeout >= 0) {
			PyErr_SetString(PyExc_ValueError,
					"can't specify a timeout for a non-blocking call");
			return NULL;
		}
	}
	l = lock_ptr(self);
	if (l == NULL)
		return NULL;
	rc = syncmem_trylock(self->region->r, l);
	if (rc == -EBUSY && blocking && timeout != 0) {
		RegionObject *region = self->region;

		start = now_ns();
		region->busy++;
		for (;;) {
			int64_t left = remaining(timeout, start);

			Py_BEGIN_ALLOW_THREADS
			rc = syncmem_lock_interruptible(region->r, l, left);
			Py_END_ALLOW_THREADS
			if (rc != -EINTR)
				break;
			if (PyErr_CheckSignals() < 0) {
				region->busy--;
				return NULL;
			}
		}
		region->busy--;
	}
	if (rc == 0)
		Py_RETURN_TRUE;
	if (rc == -EBUSY || rc == -ETIMEDOUT)
		Py_RETURN_FALSE;
	if (rc == -EDEADLK && (!blocking || timeout == 0))
		Py_RETURN_FALSE;	/* as threading.Lock: not available now */
	if (rc == -EOWNERDEAD)
		return owner_died((PyObject *)self);
	return set_error(rc);
}

static PyObject *lock_release(LockObject *self, PyObject *unused)
{
	struct syncmem_lock *l = lock_ptr(self);
	int rc;

	(void)unused;
	if (l == NULL)
		return NULL;
	rc = syncmem_unlock(self->region->r, l);
	if (rc == -EPERM) {
		PyErr_SetString(PyExc_RuntimeError,
				"syncmem: release of a lock this thread does not hold");
		return NULL;
	}
	if (rc < 0)
		return set_error(rc);
	Py_RETURN_NONE;
}

static PyObject *lock_consistent(LockObject *self, PyObject *unused)
{
	struct syncmem_lock *l = lock_ptr(self);
	int rc;

	(void)unused;
	if (l == NULL)
		return NULL;
	rc = syncmem_lock_consistent(self->region->r, l);
	if (rc < 0)
		return set_error(rc);
	Py_RETURN_NONE;
}

static PyObject *lock_locked(LockObject *self, PyObject *unused)
{
	struct syncmem_lock *l = lock_ptr(self);

	(void)unused;
	if (l == NULL)
		return NULL;
	return PyBool_FromLong(atomic_load((_Atomic uint64_t *)&l->word) != 0);
}

static PyObject *lock_enter(LockObject *self, PyObject *unused)
{
	PyObject *r;

	(void)unused;
	r = lock_acquire(self, NULL, NULL);
	if (r == NULL)
		return NULL;
	Py_DECREF(r);
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *lock_exit(LockObject *self, PyObject *args)
{
	(void)args;
	return lock_release(self, NULL);
}

/*
 * Loop.lock(lock, fn, timeout=None) -> id or None: fn(0 or -EOWNERDEAD)
 * runs later with the lock held by this process, or fn(-ETIMEDOUT),
 * fn(-ECANCELED). The id (a library with syncmem_lock_async_timed()) is
 * for abort().
 */
static PyObject *loop_lock(LoopObject *self, PyObject *args)
{
	LockObject *lock;
	PyObject *fn, *to = Py_None;
	struct syncmem_lock *l;
	struct pycb *c;
	int64_t timeout;
	int rc;

	if (!PyArg_ParseTuple(args, "O!O|O", &LockType, &lock, &fn, &to))
		return NULL;
	if (loop_check(self) < 0 || timeout_ns(to, &timeout) < 0)
		return NULL;
	l = lock_ptr(lock);
	if (l == NULL)
		return NULL;
	c = pycb_new(fn, (PyObject *)lock);
	if (c == NULL)
		return NULL;
	c->pinned = lock->region;	/* kept alive by c->keep */
	c->pinned->busy++;
#ifdef SYNCMEM_HAVE_LOCK_ASYNC_TIMED
	{
		uint64_t id = 0;

		rc = syncmem_lock_async_timed(self->loop, lock->region->r, l, timeout, pycb_call, c,
					      &id);
		if (rc < 0) {
			pycb_drop(c);
			return set_error(rc);
		}
		return PyLong_FromUnsignedLongLong(id);
	}
#else
	if (timeout >= 0) {
		pycb_drop(c);
		PyErr_SetString(PyExc_NotImplementedError,
				"syncmem: this libsyncmem has no syncmem_lock_async_timed()");
		return NULL;
	}
	rc = syncmem_lock_async(self->loop, lock->region->r, l, pycb_call, c);
	if (rc < 0) {
		pycb_drop(c);
		return set_error(rc);
	}
	Py_RETURN_NONE;
#endif
}

/* Loop.abort(id) -> True if the acquisition was pending (its fn gets -ECANCELED). */
static PyObject *loop_abort(LoopObject *self, PyObject *arg)
{
#ifdef SYNCMEM_HAVE_LOCK_ASYNC_TIMED
	unsigned long long id = PyLong_AsUnsignedLongLong(arg);
	int rc;

	if (id == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	if (loop_check(self) < 0)
		return NULL;
	rc = syncmem_loop_abort(self->loop, id);
	if (rc == -ENOENT)
		Py_RETURN_FALSE;
	if (rc < 0)
		return set_error(rc);
	Py_RETURN_TRUE;
#else
	(void)self;
	(void)arg;
	Py_RETURN_FALSE;
#endif
}

static PyMethodDef lock_methods[] = {
	{ "acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_VARARGS | METH_KEYWORDS,
	  "acquire(blocking=True, timeout=None) -> bool. Raises OwnerDiedError (lock held) "
	  "after a holder died." },
	{ "release", (PyCFunction)lock_release, METH_NOARGS, "Release the lock." },
	{ "consistent", (PyCFunction)lock_consistent, METH_NOARGS,
	  "After OwnerDiedError: the protected state is repaired." },
	{ "locked", (PyCFunction)lock_locked, METH_NOARGS, "True when somebody holds it." },
	{ "__enter__", (PyCFunction)lock_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)lock_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyMemberDef lock_members[] = {
	{ "region", T_OBJECT, offsetof(LockObject, region), READONLY, "The region it lives in." },
	{ "offset", T_PYSSIZET, offsetof(LockObject, offset), READONLY, "Its offset there." },
	{ "__dictoffset__", T_PYSSIZET, offsetof(LockObject, dict), READONLY, NULL },
	{ "__weaklistoffset__", T_PYSSIZET, offsetof(LockObject, weakreflist), READONLY, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static PyTypeObject LockType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syncmem._syncmem.Lock",
	.tp_basicsize = sizeof(LockObject),
	.tp_dealloc = (destructor)lock_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)lock_traverse,
	.tp_clear = (inquiry)lock_clear,
	.tp_doc = "A robust mutex (struct syncmem_lock, 64 bytes) in a region.",
	.tp_weaklistoffset = offsetof(LockObject, weakreflist),
	.tp_dictoffset = offsetof(LockObject, dict),
	.tp_methods = lock_methods,
	.tp_members = lock_members,
	.tp_init = (initproc)lock_init,
	.tp_new = PyType_GenericNew,
};

/* ---- Pool: the lock-free block allocator ------------------------------------- */

typedef struct {
	PyObject_HEAD
	RegionObject *region;
	Py_ssize_t offset;
	struct syncmem_pool *p;
	uint32_t block_size;
} PoolObject;

static PyTypeObject PoolType;

static int pool_init(PoolObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "region", "offset", "block_size", "nblocks", "create", NULL };
	RegionObject *region;
	Py_ssize_t offset = 0;
	unsigned int block_size = 0, nblocks = 0;
	int create = 0, err;
	struct syncmem_pool *p = NULL;
	struct syncmem_pool_header *h;
	void *mem;
	size_t len;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|nII$p", kwlist, &RegionType, &region,
					 &offset, &block_size, &nblocks, &create))
		return -1;
	mem = region_object(region, offset, 0, SYNCMEM_POOL_ALIGN);
	if (mem == NULL)
		return -1;
	len = (size_t)(region->size - offset);
	if (self->p) {
		PyErr_SetString(PyExc_RuntimeError, "Pool initialised twice");
		return -1;
	}
	if (create) {
		err = syncmem_pool_init(mem, len, block_size, nblocks, &p);
	} else {
		region->busy++;
		Py_BEGIN_ALLOW_THREADS
		err = syncmem_pool_attach(mem, len, &p);
		Py_END_ALLOW_THREADS
		region->busy--;
	}
	if (err < 0) {
		set_error(err);
		return -1;
	}
	h = mem;
	Py_INCREF(region);
	self->region = region;
	self->offset = offset;
	self->p = p;
	self->block_size = h->requested_size;
	return 0;
}

static void pool_dealloc(PoolObject *self)
{
	if (self->p)
		syncmem_pool_detach(self->p);
	Py_XDECREF(self->region);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int pool_check(PoolObject *self)
{
	if (self->p == NULL) {
		PyErr_SetString(PyExc_ValueError, "syncmem: the pool is not attached");
		return -1;
	}
	return region_check(self->region);
}

static PyObject *pool_alloc(PoolObject *self, PyObject *unused)
{
	uint32_t off = 0;
	int err;

	(void)unused;
	if (pool_check(self) < 0)
		return NULL;
	err = syncmem_pool_alloc_checked(self->p, &off);
	if (err == -ENOMEM) {
		PyErr_SetString(PyExc_MemoryError, "syncmem: the pool is exhausted");
		return NULL;
	}
	if (err < 0)
		return set_error(err);
	return PyLong_FromUnsignedLong(off);
}

static int pool_offset_arg(PyObject *arg, uint32_t *off)
{
	unsigned long v = PyLong_AsUnsignedLong(arg);

	if (v == (unsigned long)-1 && PyErr_Occurred()) {
		if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyErr_Clear();
			PyErr_SetString(PyExc_ValueError, "not a block of this pool");
		}
		return -1;
	}
	if (v > UINT32_MAX) {
		PyErr_SetString(PyExc_ValueError, "not a block of this pool");
		return -1;
	}
	*off = (uint32_t)v;
	return 0;
}

static PyObject *pool_free(PoolObject *self, PyObject *arg)
{
	uint32_t off;
	int err;

	if (pool_check(self) < 0 || pool_offset_arg(arg, &off) < 0)
		return NULL;
	err = syncmem_pool_free(self->p, off);
	if (err == -EINVAL) {
		PyErr_Format(PyExc_ValueError, "%u is not a block of this pool", off);
		return NULL;
	}
	if (err < 0)
		return set_error(err);
	Py_RETURN_NONE;
}

/* The block's offset in the region (for memoryview slices). */
static PyObject *pool_region_offset(PoolObject *self, PyObject *arg)
{
	uint32_t off;
	char *ptr;

	if (pool_check(self) < 0 || pool_offset_arg(arg, &off) < 0)
		return NULL;
	ptr = syncmem_pool_ptr(self->p, off);
	if (ptr == NULL) {
		PyErr_Format(PyExc_ValueError, "%u is not inside this pool", off);
		return NULL;
	}
	return PyLong_FromSsize_t(ptr - self->region->base);
}

static PyObject *pool_reclaim(PoolObject *self, PyObject *unused)
{
	int rc;

	(void)unused;
	if (pool_check(self) < 0)
		return NULL;
	rc = syncmem_pool_reclaim(self->p);
	if (rc < 0)
		return set_error(rc);
	return PyLong_FromLong(rc);
}

static PyObject *pool_close(PoolObject *self, PyObject *unused)
{
	(void)unused;
	if (self->p)
		syncmem_pool_detach(self->p);
	self->p = NULL;
	Py_RETURN_NONE;
}

static PyObject *pool_get_free_count(PoolObject *self, void *c)
{
	(void)c;
	if (pool_check(self) < 0)
		return NULL;
	return PyLong_FromUnsignedLong(syncmem_pool_free_count(self->p));
}

static PyObject *pool_get_block_size(PoolObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(self->block_size);
}

static PyObject *pool_footprint(PyObject *cls, PyObject *args)
{
	unsigned int bs, n;

	(void)cls;
	if (!PyArg_ParseTuple(args, "II", &bs, &n))
		return NULL;
	return PyLong_FromSize_t(syncmem_pool_footprint(bs, n));
}

static PyMethodDef pool_methods[] = {
	{ "alloc", (PyCFunction)pool_alloc, METH_NOARGS,
	  "A free block's offset from the pool start; MemoryError when exhausted." },
	{ "free", (PyCFunction)pool_free, METH_O,
	  "free(off): give a block back (ValueError: not a block; OSError EALREADY: already free)." },
	{ "region_offset", (PyCFunction)pool_region_offset, METH_O,
	  "region_offset(off): the block's offset in the region." },
	{ "reclaim", (PyCFunction)pool_reclaim, METH_NOARGS,
	  "Free every block whose holder died; returns how many." },
	{ "close", (PyCFunction)pool_close, METH_NOARGS, "Detach (the pool lives on)." },
	{ "footprint", (PyCFunction)pool_footprint, METH_VARARGS | METH_STATIC,
	  "footprint(block_size, nblocks): bytes a pool needs (0: impossible)." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef pool_getset[] = {
	{ "free_count", (getter)pool_get_free_count, NULL, "Free blocks now.", NULL },
	{ "block_size", (getter)pool_get_block_size, NULL, "Bytes of one block.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMemberDef pool_members[] = {
	{ "region", T_OBJECT, offsetof(PoolObject, region), READONLY, "The region it lives in." },
	{ "offset", T_PYSSIZET, offsetof(PoolObject, offset), READONLY, "Its offset there." },
	{ NULL, 0, 0, 0, NULL },
};

static PyTypeObject PoolType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "syncmem._syncmem.Pool",
	.tp_basicsize = sizeof(PoolObject),
	.tp_dealloc = (destructor)pool_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "The lock-free fixed-size block allocator in a region.",
	.tp_methods = pool_methods,
	.tp_members = pool_members,
	.tp_getset = pool_getset,
	.tp_init = (initproc)pool_init,
	.tp_new = PyType_GenericNew,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
	if (PyType_Ready(t) < 0)
		return -1;
	Py_INCREF(t);
	if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return 0;
}

#include "locks.inc"

/* ---- module ------------------------------------------------------------------ */

static PyMethodDef module_methods[] = {
	{ "open", mod_open, METH_VARARGS, "open(name or None, size, flags, mode) -> Region" },
	{ "from_fd", mod_from_fd, METH_O, "from_fd(fd) -> Region over a dup of fd" },
	{ "unlink", mod_unlink, METH_O, "unlink(name): remove a region's name" },
	{ "strerror", mod_strerror, METH_O, "strerror(result) -> text" },
	{ "version", mod_version, METH_NOARGS, "The library's version." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "syncmem._syncmem",
	.m_doc = "The C part of the syncmem package (see syncmem).",
	.m_size = -1,
	.m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__syncmem(void)
{
	PyObject *m, *errors;

	errors = PyImport_ImportModule("syncmem._errors");
	if (errors == NULL)
		return NULL;
	OwnerDiedError = PyObject_GetAttrString(errors, "OwnerDiedError");
	ModuleNotLoadedError = PyObject_GetAttrString(errors, "ModuleNotLoadedError");
	Py_DECREF(errors);
	if (OwnerDiedError == NULL || ModuleNotLoadedError == NULL)
		return NULL;
	result_str[SYNCMEM_OK] = PyUnicode_InternFromString("ok");
	result_str[SYNCMEM_NOT_EQUAL] = PyUnicode_InternFromString("not-equal");
	result_str[SYNCMEM_TIMED_OUT] = PyUnicode_InternFromString("timed-out");
	if (!result_str[0] || !result_str[1] || !result_str[2])
		return NULL;
	m = PyModule_Create(&module_def);
	if (m == NULL)
		return NULL;
	if (add_type(m, &RegionType, "Region") < 0 || add_type(m, &LoopType, "Loop") < 0 ||
	    add_type(m, &LockType, "Lock") < 0 || add_type(m, &PoolType, "Pool") < 0 ||
	    locks_add_types(m) < 0 ||
	    PyModule_AddIntConstant(m, "CREATE", SYNCMEM_CREATE) < 0 ||
	    PyModule_AddIntConstant(m, "EXCL", SYNCMEM_EXCL) < 0 ||
	    PyModule_AddIntConstant(m, "RDONLY", SYNCMEM_RDONLY) < 0 ||
	    PyModule_AddIntConstant(m, "OK", SYNCMEM_OK) < 0 ||
	    PyModule_AddIntConstant(m, "NOT_EQUAL", SYNCMEM_NOT_EQUAL) < 0 ||
	    PyModule_AddIntConstant(m, "TIMED_OUT", SYNCMEM_TIMED_OUT) < 0 ||
	    PyModule_AddIntConstant(m, "PENDING", SYNCMEM_PENDING) < 0 ||
	    PyModule_AddIntConstant(m, "LOCK_SIZE", sizeof(struct syncmem_lock)) < 0 ||
	    PyModule_AddIntConstant(m, "LOCKS_SHARED", SYNCMEM_LOCKS_SHARED) < 0 ||
	    PyModule_AddIntConstant(m, "LOCKS_IF_AVAILABLE", SYNCMEM_LOCKS_IF_AVAILABLE) < 0 ||
	    PyModule_AddIntConstant(m, "LOCKS_STEAL", SYNCMEM_LOCKS_STEAL) < 0 ||
	    PyModule_AddIntConstant(m, "LOCKS_NAME_MAX", SYNCMEM_LOCKS_NAME_MAX) < 0 ||
#ifdef SYNCMEM_HAVE_LOCK_ASYNC_TIMED
	    PyModule_AddIntConstant(m, "HAVE_LOCK_ASYNC_TIMED", 1) < 0) {
#else
	    PyModule_AddIntConstant(m, "HAVE_LOCK_ASYNC_TIMED", 0) < 0) {
#endif
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
