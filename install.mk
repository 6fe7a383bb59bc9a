# make install / make uninstall: the library (shared, with its SONAME and
# symbol versions, and static), headers, syncmem.pc, syncmemctl, man pages,
# the udev rule and the modules-load.d entry. The module itself is built
# and installed by DKMS (make dkms).
#
#   make install PREFIX=/usr/local DESTDIR= LIBDIR=$(PREFIX)/lib ...

VERSION := $(shell tools/version)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# udev and modules-load.d read /usr/lib/... for packages, /etc/... for the
# administrator's own installs.
ifeq ($(PREFIX),/usr)
UDEVRULESDIR ?= /usr/lib/udev/rules.d
MODULESLOADDIR ?= /usr/lib/modules-load.d
else
UDEVRULESDIR ?= /etc/udev/rules.d
MODULESLOADDIR ?= /etc/modules-load.d
endif

INSTALL_FILES := \
	$(LIBDIR)/libsyncmem.so.$(VERSION) $(LIBDIR)/$(SONAME) $(LIBDIR)/libsyncmem.so \
	$(LIBDIR)/libsyncmem.a $(INCLUDEDIR)/syncmem.h $(INCLUDEDIR)/syncmem_version.h \
	$(INCLUDEDIR)/linux/syncmem.h $(PKGCONFIGDIR)/syncmem.pc $(BINDIR)/syncmemctl \
	$(UDEVRULESDIR)/60-syncmem.rules $(MODULESLOADDIR)/syncmem.conf

# Man pages, generated from include/syncmem.h and the guides (tools/man/mkman).
MAN_SRCS := include/syncmem.h $(wildcard Documentation/syncmem/*.rst) tools/man/mkman \
	$(wildcard tools/man/examples/*.c) README.md include/uapi/linux/syncmem.h
$(BUILD)/man/.stamp: $(MAN_SRCS) include/syncmem_version.h
	rm -rf $(BUILD)/man
	tools/man/mkman $(BUILD)/man $(VERSION)
	touch $@
man: $(BUILD)/man/.stamp

# The installed syncmemctl uses the installed shared library (the one in
# build/tools is static, for the busybox guest).
$(BUILD)/installed/syncmemctl: $(SYNCMEMCTL_SRCS) $(SYNCMEMCTL_HDRS) lib/$(SONAME) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) $(CPPFLAGS) $(CPPFLAGS_ALL) $(LDFLAGS) -o $@ \
		$(SYNCMEMCTL_SRCS) lib/$(SONAME)

.PHONY: install uninstall man
install: lib $(BUILD)/installed/syncmemctl $(BUILD)/man/.stamp
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/linux $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(BINDIR) $(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(MODULESLOADDIR)
	install -m 755 lib/$(SONAME) $(DESTDIR)$(LIBDIR)/libsyncmem.so.$(VERSION)
	ln -sf libsyncmem.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsyncmem.so
	install -m 644 lib/libsyncmem.a $(DESTDIR)$(LIBDIR)/
	install -m 644 include/syncmem.h include/syncmem_version.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/uapi/linux/syncmem.h $(DESTDIR)$(INCLUDEDIR)/linux/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' tools/install/syncmem.pc.in \
		>$(DESTDIR)$(PKGCONFIGDIR)/syncmem.pc
	install -m 755 $(BUILD)/installed/syncmemctl $(DESTDIR)$(BINDIR)/
	install -m 644 tools/install/60-syncmem.rules $(DESTDIR)$(UDEVRULESDIR)/
	install -m 644 tools/install/modules-load.conf $(DESTDIR)$(MODULESLOADDIR)/syncmem.conf
	for d in man3 man4 man7 man8; do \
		install -d $(DESTDIR)$(MANDIR)/$$d && \
		install -m 644 $(BUILD)/man/$$d/* $(DESTDIR)$(MANDIR)/$$d/ || exit 1; done
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi
	@echo "installed syncmem $(VERSION) under $(DESTDIR)$(PREFIX)"

uninstall: $(BUILD)/man/.stamp
	rm -f $(addprefix $(DESTDIR),$(INSTALL_FILES))
	for f in $(BUILD)/man/man*/*; do rm -f $(DESTDIR)$(MANDIR)/$${f#$(BUILD)/man/}; done
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# DKMS: the module's sources and dkms.conf under $(DKMS_SRC) (default
# /usr/src/syncmem-VERSION, where dkms looks for them); make dkms then adds,
# builds and installs it for the running kernel, and DKMS rebuilds it for
# each kernel installed later.
DKMS_SRC ?= /usr/src/syncmem-$(VERSION)
.PHONY: dkms-source dkms dkms-remove
dkms-source:
	rm -rf $(DESTDIR)$(DKMS_SRC)
	install -d $(DESTDIR)$(DKMS_SRC)/kmod $(DESTDIR)$(DKMS_SRC)/include/uapi/linux
	install -m 644 $(filter-out %.mod.c,$(wildcard kmod/*.c)) kmod/*.h kmod/Kbuild \
		$(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 644 include/syncmem_version.h $(DESTDIR)$(DKMS_SRC)/include/
	install -m 644 include/uapi/linux/syncmem.h $(DESTDIR)$(DKMS_SRC)/include/uapi/linux/
	sed 's|@VERSION@|$(VERSION)|' tools/install/dkms.conf.in >$(DESTDIR)$(DKMS_SRC)/dkms.conf

dkms: dkms-source
	dkms add -m syncmem -v $(VERSION)
	dkms build -m syncmem -v $(VERSION)
	dkms install -m syncmem -v $(VERSION)

dkms-remove:
	dkms remove -m syncmem -v $(VERSION) --all
	rm -rf $(DKMS_SRC)

# Debian packages (debian/): libsyncmem1, libsyncmem-dev, syncmem-tools and
# syncmem-dkms, built with dpkg-buildpackage from a copy of the tree in
# build/deb (the working tree stays clean); the .debs land in build/deb.
DEB_DIR := $(BUILD)/deb
.PHONY: deb
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/syncmem-$(VERSION)
	tar -c --exclude=./build --exclude=./.git --exclude='*.o' --exclude='*.ko' \
		--exclude=./lib/libsyncmem.a --exclude='./lib/libsyncmem.so*' . | \
		tar -x -C $(DEB_DIR)/syncmem-$(VERSION)
	cd $(DEB_DIR)/syncmem-$(VERSION) && dpkg-buildpackage -us -uc -b -j$(JOBS) >../build.log 2>&1 || \
		{ tail -40 $(DEB_DIR)/build.log; exit 1; }
	@ls $(DEB_DIR)/*.deb
