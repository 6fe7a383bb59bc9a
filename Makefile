# syncmem top-level build.
#
#   make deps        install the Debian packages the project needs
#   make             module (kmod/syncmem.ko), library, selftests, tools
#   make check       everything above, then every test (host, stock VM, debug VM,
#                    PREEMPT_RT VM)
#   make demo        the demo in the VM
#   make install     library, headers, syncmem.pc, syncmemctl, udev rule
#                    (PREFIX, DESTDIR, LIBDIR...: see install.mk); uninstall
#   make dkms        the module's sources in /usr/src, built and installed by
#                    DKMS for the running kernel and every later one
#   make deb         Debian packages in build/deb (libsyncmem1, libsyncmem-dev,
#                    syncmem-tools, syncmem-dkms)
#   make checkpatch  checkpatch.pl --strict over kmod/ and the uapi header
#   make sparse      the module under sparse (C=1)
#   make bench       the benchmarks in the VM
#   make python      the Python package (bindings/python) in build/python
#   make node        the Node.js package's native addon (bindings/node), offline
#   make fuzz        a long fuzzing pass: the kernel fuzzer on the debug kernel
#                    (FUZZ_OPS ioctls, default 1000000; FUZZ_SEED), then the
#                    library fuzzer on the host (FUZZ_LIB_SECONDS per phase)
#
# KDIR selects the kernel tree for kmod/syncmem.ko, the module for this
# machine: by default the running kernel's build tree when its headers are
# installed, else the installed Debian linux-headers-6.1*-amd64 (the build
# says which kernel it built for). The VM always boots Debian's 6.1 kernels
# and gets modules built for them in build/kmod-stock, -debug and -rt.

SHELL := /bin/bash
ROOT := $(CURDIR)
BUILD := $(ROOT)/build
LINUX_FILES := $(BUILD)/linux-files

# [0-9]-amd64: the stock headers, not linux-headers-6.1*-rt-amd64.
STOCK_HEADERS := $(lastword $(sort $(wildcard /usr/src/linux-headers-6.1*[0-9]-amd64)))
RT_HEADERS := $(lastword $(sort $(wildcard /usr/src/linux-headers-6.1*-rt-amd64)))
RUNNING_BUILD := /lib/modules/$(shell uname -r)/build
KDIR ?= $(if $(wildcard $(RUNNING_BUILD)/Makefile),$(RUNNING_BUILD),$(STOCK_HEADERS))

CC := gcc
# make check's builds use every core even when make itself was run without -j.
JOBS := $(shell nproc)
CSTD := -std=c11
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
LIB_WARN := $(WARN) -Wmissing-prototypes
CPPFLAGS_ALL := -I$(ROOT)/include -I$(ROOT)/include/uapi
CFLAGS ?= -O2 -g
# Hidden by default: only what include/syncmem.h declares is exported (its
# declarations say visibility default), at the version of lib/libsyncmem.map.
LIB_CFLAGS := $(CSTD) $(LIB_WARN) $(CFLAGS) -fPIC -fvisibility=hidden $(CPPFLAGS_ALL)
LIB_MAP := lib/libsyncmem.map
# Test programs run in the busybox guest: link them statically.
PROG_CFLAGS := $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS_ALL) -isystem $(LINUX_FILES)/tools/testing/selftests
PROG_LDFLAGS := -static -pthread

LIB_SRCS := $(sort $(wildcard lib/*.c))
LIB_OBJS := $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRCS))
LIB_HDRS := include/syncmem.h include/syncmem_version.h include/uapi/linux/syncmem.h $(wildcard lib/*.h)
SONAME := libsyncmem.so.1

SELFTEST_SRCS := $(sort $(wildcard selftests/*_test.c))
SELFTESTS := $(patsubst selftests/%.c,$(BUILD)/selftests/%,$(SELFTEST_SRCS))
SELFTEST_SCRIPTS := $(BUILD)/selftests/run-all
HOSTTEST_SRCS := $(sort $(wildcard tests/host/*_test.c))
HOSTTESTS := $(patsubst tests/host/%.c,$(BUILD)/host/%,$(HOSTTEST_SRCS))
# lock_instructions reaches into the library's internals and runs on the host.
TOOL_SRCS := $(sort $(filter-out tools/bench/lock_instructions.c, \
	$(wildcard tools/demo/*.c tools/bench/*.c)))
# syncmemctl is one program made of every tools/syncmemctl/*.c.
SYNCMEMCTL_SRCS := $(sort $(wildcard tools/syncmemctl/*.c))
SYNCMEMCTL_HDRS := $(wildcard tools/syncmemctl/*.h)
TOOLS := $(addprefix $(BUILD)/tools/,$(notdir $(basename $(TOOL_SRCS)))) $(BUILD)/tools/syncmemctl
REPROS := $(patsubst tools/fuzz/repro/%.c,$(BUILD)/tools/repro/%,$(wildcard tools/fuzz/repro/*.c))

# The module's own sources: not the syncmem.mod.c a build writes next to them.
KMOD_OWN := $(filter-out %.mod.c,$(wildcard kmod/*.c)) $(wildcard kmod/*.h) kmod/Kbuild
KMOD_SRCS := $(KMOD_OWN) include/uapi/linux/syncmem.h include/syncmem_version.h
# The modules built for the VM have the test-only hooks the selftests use
# (Documentation/syncmem/testing.rst); kmod/syncmem.ko and DKMS do not.
TEST_HOOKS := SYNCMEM_TEST_HOOKS=y
# Build directories for other kernels hold links to the sources, and nothing
# generated is ever shared: a link to kmod/syncmem.mod.c would let one
# kernel's build write another's module info (vermagic, symbol CRCs).
kmod_links = mkdir -p $(1) && find $(1) -maxdepth 1 -type l -delete && \
	ln -s $(addprefix $(ROOT)/,$(KMOD_OWN)) $(1)/

.PHONY: python bench-python node check-node all deps kmod kmod-stock kmod-debug kmod-rt kmod-6.12 check-6.12 lib selftests hosttests tools check check-host torture \
	check-python check-static check-install check-deb check-dkms check-runner check-stock check-debug check-rt check-fuzz fuzz demo checkpatch sparse bench clean linux-files

all: kmod kmod-stock lib selftests hosttests tools

deps:
	@$(ROOT)/tools/deps

linux-files: $(LINUX_FILES)/.stamp
$(LINUX_FILES)/.stamp:
	@$(ROOT)/tools/linux-files $(LINUX_FILES)

# ---- kernel module --------------------------------------------------------
kmod: kmod/syncmem.ko
kmod/syncmem.ko: $(KMOD_SRCS)
	@test -n "$(KDIR)" || { echo "no kernel headers: install linux-headers-$$(uname -r), or run 'make deps'"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT)/kmod SYNCMEM_ROOT=$(ROOT) W=1 modules
	@echo "kmod/syncmem.ko: built for kernel $$(modinfo -F vermagic $@ | cut -d' ' -f1) ($(KDIR))$$( \
		[ "$$(modinfo -F vermagic $@ | cut -d' ' -f1)" = "$$(uname -r)" ] || \
		echo "; this machine runs $$(uname -r): set KDIR to build for it")"

# The same sources built against Debian's 6.1 headers, for the VM's stock kernel.
kmod-stock: $(BUILD)/kmod-stock/syncmem.ko
$(BUILD)/kmod-stock/syncmem.ko: $(KMOD_SRCS)
	@test -n "$(STOCK_HEADERS)" || { echo "no linux-headers-6.1*-amd64: run 'make deps'"; exit 1; }
	@$(call kmod_links,$(BUILD)/kmod-stock)
	$(MAKE) -C $(STOCK_HEADERS) M=$(BUILD)/kmod-stock SYNCMEM_ROOT=$(ROOT) $(TEST_HOOKS) W=1 modules

# The same sources built against the debug kernel tree, in build/kmod-debug.
kmod-debug: $(BUILD)/kmod-debug/syncmem.ko
$(BUILD)/kmod-debug/syncmem.ko: $(KMOD_SRCS) tools/vm/base.config tools/vm/debug.config
	@tree=$$($(ROOT)/tools/vm/build-kernel debug) && \
	$(call kmod_links,$(BUILD)/kmod-debug) && \
	$(MAKE) -C $$tree M=$(BUILD)/kmod-debug SYNCMEM_ROOT=$(ROOT) $(TEST_HOOKS) W=1 modules

# The same sources built against Debian's PREEMPT_RT headers, in build/kmod-rt.
kmod-rt: $(BUILD)/kmod-rt/syncmem.ko
$(BUILD)/kmod-rt/syncmem.ko: $(KMOD_SRCS)
	@test -n "$(RT_HEADERS)" || { echo "no linux-headers-6.1*-rt-amd64: run 'make deps'"; exit 1; }
	@$(call kmod_links,$(BUILD)/kmod-rt)
	$(MAKE) -C $(RT_HEADERS) M=$(BUILD)/kmod-rt SYNCMEM_ROOT=$(ROOT) $(TEST_HOOKS) W=1 modules

# The same sources built against the 6.12 kernel tree (tools/vm/build-kernel 6.12),
# under sparse (C=1: each file is checked as it is compiled), the log kept
# for check-6.12.
kmod-6.12: $(BUILD)/kmod-6.12/syncmem.ko
$(BUILD)/kmod-6.12/syncmem.ko: $(KMOD_SRCS) tools/vm/base.config tools/vm/6.12.config
	@tree=$$($(ROOT)/tools/vm/build-kernel 6.12) && \
	$(call kmod_links,$(BUILD)/kmod-6.12) && \
	rm -f $(BUILD)/kmod-6.12/*.o && \
	set -o pipefail && $(MAKE) -C $$tree M=$(BUILD)/kmod-6.12 SYNCMEM_ROOT=$(ROOT) $(TEST_HOOKS) W=1 C=1 \
		CF="-Wsparse-error" modules 2>&1 | tee $(BUILD)/kmod-6.12/build.log

# ---- library ----------------------------------------------------------------
lib: lib/libsyncmem.a lib/libsyncmem.so
$(BUILD)/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<
lib/libsyncmem.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^
lib/$(SONAME): $(LIB_OBJS) $(LIB_MAP)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(LIB_MAP) -pthread -o $@ \
		$(LIB_OBJS) -luring
lib/libsyncmem.so: lib/$(SONAME)
	ln -sf $(SONAME) $@

# ---- Node.js (bindings/node) -------------------------------------------------
# node-gyp (the one npm bundles) builds the addon against the installed
# Node's headers (--nodedir): nothing is downloaded. The library's sources
# are compiled into the addon (bindings/node/build-config.js).
NODE ?= $(shell command -v node)
NODE_ADDON := bindings/node/build/Release/syncmem.node
node: $(NODE_ADDON)
$(NODE_ADDON): $(wildcard bindings/node/src/*) bindings/node/binding.gyp bindings/node/build.js \
		bindings/node/build-config.js $(LIB_SRCS) $(LIB_HDRS)
	@[ -n "$(NODE)" ] || { echo "make node: no node in PATH (make deps installs nodejs)" >&2; exit 1; }
	cd bindings/node && $(NODE) build.js

# ---- selftests, host tests, tools -------------------------------------------
# The symbol test once more, linked against the shared library and defining
# the library's internal names too (the VM runner copies the libraries of
# dynamic programs; the rpath finds ours at the same path in the guest).
SELFTESTS_DYNAMIC := $(BUILD)/selftests/symbols_dynamic_test
selftests: $(SELFTESTS) $(SELFTESTS_DYNAMIC) $(SELFTEST_SCRIPTS)
$(BUILD)/selftests/%: selftests/%.c selftests/*.h lib/libsyncmem.a $(LINUX_FILES)/.stamp
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Iselftests -o $@ $< lib/libsyncmem.a $(PROG_LDFLAGS) -luring
# flight_test stops a leader at its on-close ioctls: it wraps ioctl() (see there).
$(BUILD)/selftests/flight_test: PROG_LDFLAGS += -Wl,--wrap=ioctl
$(BUILD)/selftests/symbols_dynamic_test: selftests/symbols_test.c selftests/*.h lib/$(SONAME) \
		$(LINUX_FILES)/.stamp
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -DSYMBOLS_DYNAMIC -Iselftests -o $@ $< lib/$(SONAME) \
		-Wl,-rpath,$(ROOT)/lib -pthread
$(BUILD)/selftests/run-all: selftests/run-all
	@mkdir -p $(@D)
	cp $< $@

# Host tests, plain and with the library built in under ASan+UBSan and TSan.
SAN_ASAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_TSAN := -fsanitize=thread
HOSTTESTS_ASAN := $(patsubst tests/host/%.c,$(BUILD)/host-asan/%,$(HOSTTEST_SRCS))
HOSTTESTS_TSAN := $(patsubst tests/host/%.c,$(BUILD)/host-tsan/%,$(HOSTTEST_SRCS))
HOSTTESTS_ALL := $(HOSTTESTS) $(HOSTTESTS_ASAN) $(HOSTTESTS_TSAN)
hosttests: $(HOSTTESTS_ALL)
HOST_DEPS := $(LIB_SRCS) $(LIB_HDRS) $(wildcard selftests/*.h tests/host/*.h) $(LINUX_FILES)/.stamp
$(BUILD)/host/%: tests/host/%.c lib/libsyncmem.a $(HOST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Iselftests -Ilib -o $@ $< lib/libsyncmem.a -pthread -luring
# The library is compiled once per sanitizer into an archive the tests link:
# $(call host_san,DIR,FLAGS) gives build/DIR its objects, archive and tests.
define host_san
$(BUILD)/$(1)/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(PROG_CFLAGS) $(2) -c -o $$@ $$<
$(BUILD)/$(1)/libsyncmem.a: $(patsubst lib/%.c,$(BUILD)/$(1)/lib/%.o,$(LIB_SRCS))
	rm -f $$@ && $(AR) rcs $$@ $$^
$(BUILD)/$(1)/%: tests/host/%.c $(BUILD)/$(1)/libsyncmem.a $(HOST_DEPS)
	@mkdir -p $$(@D)
	$(CC) $(PROG_CFLAGS) $(2) -Iselftests -Ilib -o $$@ $$< $(BUILD)/$(1)/libsyncmem.a -pthread -luring
endef
$(eval $(call host_san,host-asan,$(SAN_ASAN)))
$(eval $(call host_san,host-tsan,$(SAN_TSAN)))

tools: $(TOOLS) $(BUILD)/tools/fuzz $(BUILD)/tools/libfuzz $(REPROS)
$(BUILD)/tools/%: tools/*/%.c lib/libsyncmem.a $(wildcard tools/bench/*.h selftests/*.h)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Iselftests -o $@ $< lib/libsyncmem.a $(PROG_LDFLAGS) -luring

$(BUILD)/tools/syncmemctl: $(SYNCMEMCTL_SRCS) $(SYNCMEMCTL_HDRS) lib/libsyncmem.a
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -o $@ $(SYNCMEMCTL_SRCS) lib/libsyncmem.a $(PROG_LDFLAGS) -luring

# The kernel fuzzer: raw ioctls, no library (tools/fuzz, Documentation/syncmem/testing.rst).
FUZZ_SRCS := $(sort $(wildcard tools/fuzz/*.c))
$(BUILD)/tools/fuzz: $(FUZZ_SRCS) tools/fuzz/fuzz.h include/uapi/linux/syncmem.h
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -o $@ $(FUZZ_SRCS) $(PROG_LDFLAGS) -luring

# The library fuzzer, under ASan+UBSan; dynamically linked (the VM runner
# copies its libraries), -rdynamic for the stacks of stuck workers.
LIBFUZZ_SRCS := $(sort $(wildcard tools/fuzz/lib/*.c))
$(BUILD)/tools/libfuzz: $(LIBFUZZ_SRCS) tools/fuzz/lib/libfuzz.h tools/fuzz/same_finding.h \
		$(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $(SAN_ASAN) -rdynamic -Wl,--wrap=ioctl -Ilib -o $@ $(LIBFUZZ_SRCS) \
		$(LIB_SRCS) -pthread -luring

# Minimal reproducers of what the fuzzer found, as /work/tools/repro/* in the guest.
$(BUILD)/tools/repro/%: tools/fuzz/repro/%.c include/uapi/linux/syncmem.h
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -o $@ $< $(PROG_LDFLAGS)

# Benchmarks print syncmem's figure next to its baseline's, as a ratio. The
# kernel ones run in the VM; the pool needs no kernel and runs on the host's
# real CPU, with instruction counts from callgrind.
BENCHES := wake_pingpong notify_all async_pingpong lock_bench rwlock_bench keyed_bench locks_bench uring_pingpong
# The Node.js package's benchmarks run in the same boot (bindings/node/bench).
NODE_BENCHES := roundtrip locks overhead
bench: all node $(BUILD)/bench/pool_bench $(BUILD)/bench/lock_instructions
	$(ROOT)/tools/vm/run --kernel stock --timeout 1200 --add $(NODE) --add bindings/node -- sh -c \
		'for b in $(BENCHES); do tools/$$b || exit 1; done; \
		for b in $(NODE_BENCHES); do SYNCMEM_C_PINGPONG=tools/async_pingpong \
			./node bindings/node/bench/$$b.js || exit 1; done'
	$(BUILD)/bench/pool_bench
	$(ROOT)/tools/bench/pool-instructions $(BUILD)/bench/pool_bench
	$(ROOT)/tools/bench/lock-instructions $(BUILD)/bench/lock_instructions
	$(MAKE) --no-print-directory bench-python

# The Python package's benchmarks (bindings/python/bench), in the VM, with a
# /dev/shm for the POSIX semaphores of multiprocessing.Lock.
bench-python: python $(BUILD)/python/overhead
	$(ROOT)/tools/vm/run --kernel stock --python --add $(BUILD)/python --timeout 900 -- \
		sh -c 'mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm && \
		PYTHONPATH=/work/build/python/lib python3 build/python/bench.py build/python/overhead'

$(BUILD)/python/overhead: bindings/python/bench/overhead.c lib/libsyncmem.a
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -o $@ $< lib/libsyncmem.a $(PROG_LDFLAGS) -luring

$(BUILD)/bench/pool_bench: tools/bench/pool_bench.c lib/libsyncmem.a $(wildcard tools/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -o $@ $< lib/libsyncmem.a -pthread -luring

$(BUILD)/bench/lock_instructions: tools/bench/lock_instructions.c lib/libsyncmem.a $(LIB_HDRS) \
		$(wildcard tools/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -Ilib -o $@ $< lib/libsyncmem.a -pthread -luring

# ---- Python package -----------------------------------------------------------
# bindings/python built with Debian's python3 and setuptools (no download),
# the package importable from build/python/lib (PYTHONPATH).
PYTHON := /usr/bin/python3
PY_SRCS := $(wildcard bindings/python/setup.py bindings/python/src/* bindings/python/syncmem/*.py bindings/python/bench/*.py)
python: $(BUILD)/python/.stamp
$(BUILD)/python/.stamp: $(PY_SRCS) $(LIB_SRCS) $(LIB_HDRS)
	cd bindings/python && $(PYTHON) setup.py -q build --build-base $(BUILD)/python/build \
		build_ext --build-lib $(BUILD)/python/lib build_py --build-lib $(BUILD)/python/lib
	cp bindings/python/bench/bench.py $(BUILD)/python/bench.py
	@touch $@

include install.mk

# ---- tests ------------------------------------------------------------------
# Each step appends its TAP to build/check/*.tap; tools/tap-summary prints the
# closing "N passed, N failed" line and fails on any failure.
check:
	@$(ROOT)/tools/deps
	@$(MAKE) --no-print-directory -j$(JOBS) all kmod-debug kmod-rt kmod-6.12
	@rm -rf $(BUILD)/check && mkdir -p $(BUILD)/check
	@status=0; \
	$(MAKE) --no-print-directory check-static || status=1; \
	$(MAKE) --no-print-directory check-host || status=1; \
	$(MAKE) --no-print-directory check-install || status=1; \
	$(MAKE) --no-print-directory check-dkms || status=1; \
	$(MAKE) --no-print-directory check-deb || status=1; \
	$(MAKE) --no-print-directory check-runner || status=1; \
	$(MAKE) --no-print-directory check-stock || status=1; \
	$(MAKE) --no-print-directory check-python || status=1; \
	$(MAKE) --no-print-directory check-debug || status=1; \
	$(MAKE) --no-print-directory check-rt || status=1; \
	$(MAKE) --no-print-directory check-6.12 || status=1; \
	$(MAKE) --no-print-directory check-fuzz || status=1; \
	$(MAKE) --no-print-directory check-node || status=1; \
	$(ROOT)/tools/tap-summary $(BUILD)/check/*.tap || status=1; \
	exit $$status

# The host tests run side by side (many of them mostly sleep or wait), each
# one's output printed in turn;
# tests/install/man_examples: every man page's EXAMPLE, as generated, builds;
# tests/install/errors_check: every errno a test expects is in the header.
check-host: hosttests lib man
	@mkdir -p $(BUILD)/check
	@echo "== host tests"
	@printf '%s\n' $(HOSTTESTS_ALL) | xargs -P $$(( $(JOBS) * 2 )) -I{} sh -c \
		'{} >{}.out 2>&1 || echo "not ok - {} exited $$?" >>{}.out'
	@set -o pipefail; { for t in $(HOSTTESTS_ALL); do echo "# $$t"; cat $$t.out; \
		done; $(ROOT)/tools/check-symbols lib/$(SONAME) include/syncmem.h; \
		echo "# tests/install/man_examples"; \
		$(ROOT)/tests/install/man_examples $(BUILD)/man include lib/$(SONAME) || \
		echo "not ok - man page examples"; \
		echo "# tests/install/errors_check"; \
		$(ROOT)/tests/install/errors_check $(ROOT) || echo "not ok - errors_check"; } 2>&1 | \
		tee $(BUILD)/check/host.tap

# make install into a scratch DESTDIR, a program built there with pkg-config only.
check-install: all
	@mkdir -p $(BUILD)/check
	@echo "== install"
	@set -o pipefail; $(ROOT)/tests/install/install_test $(BUILD) | tee $(BUILD)/check/install.tap

# The Debian packages: built with dpkg-buildpackage, their contents checked.
check-deb:
	@mkdir -p $(BUILD)/check
	@echo "== Debian packages"
	@set -o pipefail; $(ROOT)/tests/install/deb_test $(BUILD) | tee $(BUILD)/check/deb.tap

# The DKMS sources built by dkms for Debian's 6.1 kernel, loaded in the VM.
check-dkms: all
	@mkdir -p $(BUILD)/check
	@echo "== dkms"
	@set -o pipefail; $(ROOT)/tests/install/dkms_test $(BUILD) $(STOCK_HEADERS) | \
		tee $(BUILD)/check/dkms.tap

# checkpatch, sparse and a W=1 build of the module, as TAP lines.
check-static: $(LINUX_FILES)/.stamp
	@mkdir -p $(BUILD)/check
	@echo "== static checks"
	@set -o pipefail; { \
	if $(MAKE) --no-print-directory checkpatch >$(BUILD)/check/checkpatch.log 2>&1; \
		then echo "ok - checkpatch --strict"; \
		else cat $(BUILD)/check/checkpatch.log; echo "not ok - checkpatch --strict"; fi; \
	touch kmod/main.c; \
	if $(MAKE) --no-print-directory -j$(JOBS) sparse >$(BUILD)/check/sparse.log 2>&1 && \
		! grep -E "warning:|error:" $(BUILD)/check/sparse.log; \
		then echo "ok - sparse and W=1 build without warnings"; \
		else cat $(BUILD)/check/sparse.log; echo "not ok - sparse and W=1 build"; fi; \
	if $(ROOT)/tools/check-docs >$(BUILD)/check/docs.log 2>&1; \
		then echo "ok - Documentation parses without warnings"; \
		else cat $(BUILD)/check/docs.log; echo "not ok - Documentation"; fi; \
	} | tee $(BUILD)/check/static.tap

check-runner: all
	@mkdir -p $(BUILD)/check
	@echo "== VM runner"
	@set -o pipefail; $(ROOT)/tests/vm/runner_test 2>&1 | tee $(BUILD)/check/runner.tap

check-stock: all
	@mkdir -p $(BUILD)/check
	@echo "== kselftests on the stock kernel"
	@set -o pipefail; SYNCMEM_VM_LOGDIR=$(BUILD)/vm-stock $(ROOT)/tools/vm/run --kernel stock \
		--timeout 900 -- selftests/run-all 2>&1 | tee $(BUILD)/check/stock.tap; \
		rc=$$?; [ $$rc = 0 ] || echo "not ok - stock VM run exited $$rc" >>$(BUILD)/check/stock.tap; exit $$rc

# The Python package's pytest suites, with Debian's python3 in the guest.
PYTEST_VM := SYNCMEM_TAP=1 PYTHONPATH=/work/build/python/lib PYTHONDONTWRITEBYTECODE=1 \
	python3 -m pytest -p no:cacheprovider -q -s bindings/python/tests
check-python: all python
	@mkdir -p $(BUILD)/check
	@echo "== the Python package on the stock kernel"
	@set -o pipefail; SYNCMEM_VM_LOGDIR=$(BUILD)/vm-python $(ROOT)/tools/vm/run --kernel stock \
		--python --add $(BUILD)/python/lib --add bindings/python/tests \
		--add bindings/python/examples --timeout 900 -- \
		sh -c '$(PYTEST_VM)' 2>&1 | tee $(BUILD)/check/python.tap; \
		rc=$$?; [ $$rc = 0 ] || echo "not ok - python VM run exited $$rc" >>$(BUILD)/check/python.tap; exit $$rc

check-debug: all kmod-debug
	@mkdir -p $(BUILD)/check
	@echo "== kselftests on the debug kernel"
	@set -o pipefail; SYNCMEM_VM_LOGDIR=$(BUILD)/vm-debug $(ROOT)/tools/vm/run --kernel debug \
		--timeout 1500 -- selftests/run-all 2>&1 | tee $(BUILD)/check/debug.tap; \
		rc=$$?; [ $$rc = 0 ] || echo "not ok - debug VM run exited $$rc" >>$(BUILD)/check/debug.tap; exit $$rc

# PREEMPT_RT turns spinlocks into sleeping locks and hard-irq work into
# threads: sleeping-in-atomic bugs show there first.
check-rt: all kmod-rt
	@mkdir -p $(BUILD)/check
	@echo "== kselftests on the PREEMPT_RT kernel"
	@set -o pipefail; SYNCMEM_VM_LOGDIR=$(BUILD)/vm-rt $(ROOT)/tools/vm/run --kernel rt \
		--timeout 900 -- selftests/run-all 2>&1 | tee $(BUILD)/check/rt.tap; \
		rc=$$?; [ $$rc = 0 ] || echo "not ok - PREEMPT_RT VM run exited $$rc" >>$(BUILD)/check/rt.tap; exit $$rc

check-6.12: all kmod-6.12
	@mkdir -p $(BUILD)/check
	@echo "== the 6.12 kernel: sparse, then the kselftests"
	@if grep -q "CHECK .*/main.c" $(BUILD)/kmod-6.12/build.log && \
		! grep -E "warning:|error:" $(BUILD)/kmod-6.12/build.log; \
	then echo "ok - sparse and W=1 build on 6.12 without warnings"; \
	else echo "not ok - sparse and W=1 build on 6.12"; fi \
		>$(BUILD)/check/6.12-static.tap; cat $(BUILD)/check/6.12-static.tap
	@set -o pipefail; SYNCMEM_VM_LOGDIR=$(BUILD)/vm-6.12 $(ROOT)/tools/vm/run --kernel 6.12 \
		--timeout 900 -- selftests/run-all 2>&1 | tee $(BUILD)/check/6.12.tap; \
		rc=$$?; [ $$rc = 0 ] || echo "not ok - 6.12 VM run exited $$rc" >>$(BUILD)/check/6.12.tap; exit $$rc

# A short fixed-seed pass of both fuzzers (tools/fuzz/check).
check-fuzz: all kmod-debug
	@mkdir -p $(BUILD)/check
	@echo "== fuzzers (fixed seed)"
	@set -o pipefail; $(ROOT)/tools/fuzz/check 2>&1 | tee $(BUILD)/check/fuzz.tap

# The Node.js package's node --test suites, in the stock VM with the host's
# node copied in (bindings/node/test/run prints their TAP), and python3 with
# the Python package for the tests of locks shared between the two.
check-node: all node python
	@mkdir -p $(BUILD)/check
	@echo "== Node.js package (bindings/node): index.d.ts with tsc"
	@if tsc -p bindings/node/test/types >$(BUILD)/check/node-types.log 2>&1; \
	then echo "ok - node: index.d.ts type-checks (tsc)"; \
	else cat $(BUILD)/check/node-types.log; echo "not ok - node: index.d.ts type-checks (tsc)"; fi \
		| tee $(BUILD)/check/node-types.tap
	@echo "== Node.js package (bindings/node) on the stock kernel"
	@set -o pipefail; SYNCMEM_VM_LOGDIR=$(BUILD)/vm-node $(ROOT)/tools/vm/run --kernel stock \
		--timeout 900 --add $(NODE) --add bindings/node --python --add $(BUILD)/python/lib -- \
		sh bindings/node/test/run /work/node 2>&1 | tee $(BUILD)/check/node.tap; \
		rc=$$?; [ $$rc = 0 ] || echo "not ok - Node.js VM run exited $$rc" >>$(BUILD)/check/node.tap; exit $$rc

FUZZ_OPS ?= 1000000
FUZZ_SEED ?= $(shell date +%s)
FUZZ_LIB_SECONDS ?= 60
fuzz: all kmod-debug
	$(ROOT)/tools/vm/run --kernel debug --timeout $$(( $(FUZZ_OPS) / 500 + 900 )) -- \
		tools/fuzz --seed $(FUZZ_SEED) --ops $(FUZZ_OPS) --seconds 0
	$(BUILD)/tools/libfuzz --seed $(FUZZ_SEED) --seconds $(FUZZ_LIB_SECONDS)

# The kill torture for long, on the debug kernel (make check runs it for 20 s).
TORTURE_SECONDS ?= 900
torture: all kmod-debug
	SYNCMEM_VM_LOGDIR=$(BUILD)/vm-torture $(ROOT)/tools/vm/run --kernel debug \
		--timeout $$(( $(TORTURE_SECONDS) + 600 )) -- \
		sh -c 'SYNCMEM_TORTURE_SECONDS=$(TORTURE_SECONDS) selftests/torture_test'

demo:
	@$(ROOT)/tools/deps
	@$(MAKE) --no-print-directory all
	$(ROOT)/tools/vm/run --kernel stock -- tools/demo

checkpatch: $(LINUX_FILES)/.stamp
	$(LINUX_FILES)/scripts/checkpatch.pl --strict --no-tree --terse --show-types \
		-f $(filter-out %.mod.c,$(wildcard kmod/*.c)) kmod/*.h include/uapi/linux/syncmem.h

sparse:
	$(MAKE) -C $(KDIR) M=$(ROOT)/kmod SYNCMEM_ROOT=$(ROOT) W=1 C=2 \
		CF="-Wsparse-error" modules

clean:
	-$(MAKE) -C $(KDIR) M=$(ROOT)/kmod clean
	rm -rf $(BUILD) lib/libsyncmem.a lib/libsyncmem.so lib/$(SONAME)
