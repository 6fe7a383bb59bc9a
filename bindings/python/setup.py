# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build the syncmem package: the _syncmem extension and the pure-Python layer.

The extension compiles libsyncmem's own sources (../../lib/*.c) into itself,
so it needs no installed library: only Debian's python3-dev, setuptools,
gcc and liburing-dev. Nothing is downloaded. From a checkout:

    make python                                  # into build/python
    pip install --no-index --no-build-isolation bindings/python
"""
import glob
import os
import re

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
LIB = os.path.join(ROOT, "lib")
INCLUDE = os.path.join(ROOT, "include")

if not os.path.exists(os.path.join(INCLUDE, "syncmem.h")):
    raise SystemExit(
        "syncmem: build bindings/python from a syncmem checkout: "
        f"{INCLUDE}/syncmem.h is missing")

# The library's sources, by absolute path: setuptools then keeps their
# objects inside its build directory.
lib_sources = sorted(glob.glob(os.path.join(LIB, "*.c")))

# Features of the library this checkout has (the Web Locks calls arrived
# after the rest): the extension offers what the header declares.
header = open(os.path.join(INCLUDE, "syncmem.h"), encoding="utf-8").read()
macros = []
if re.search(r"^int\s+syncmem_locks_request_async\s*\(", header, re.M):
    macros.append(("SYNCMEM_HAVE_LOCKS_ASYNC", "1"))
if re.search(r"^int\s+syncmem_lock_async_timed\s*\(", header, re.M) and \
        re.search(r"^int\s+syncmem_loop_abort\s*\(", header, re.M):
    macros.append(("SYNCMEM_HAVE_LOCK_ASYNC_TIMED", "1"))
if re.search(r"^int\s+syncmem_locks_query\s*\(", header, re.M):
    macros.append(("SYNCMEM_HAVE_LOCKS_QUERY", "1"))

version_h = open(os.path.join(INCLUDE, "syncmem_version.h"), encoding="utf-8").read()

ext = Extension(
    "syncmem._syncmem",
    sources=[os.path.join(HERE, "src", "_syncmem.c")] + lib_sources,
    include_dirs=[INCLUDE, os.path.join(INCLUDE, "uapi"), LIB],
    define_macros=macros,
    libraries=["uring"],
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-Wall", "-Wextra",
                        "-Wno-missing-field-initializers", "-Wno-cast-function-type",
                        "-Werror"],
    depends=[os.path.join(HERE, "src", "locks.inc")] + glob.glob(os.path.join(LIB, "*.h")) +
            [os.path.join(INCLUDE, "syncmem.h")],
)

setup(
    name="syncmem",
    version=".".join(re.search(r"#define SYNCMEM_VERSION_%s\s+(\d+)" % part, version_h).group(1)
                     for part in ("MAJOR", "MINOR", "PATCH")),
    description="Shared memory, wait/notify and Web Locks across processes (syncmem)",
    license="LGPL-2.1-or-later",
    packages=["syncmem"],
    ext_modules=[ext],
    python_requires=">=3.9",
)
