// SPDX-License-Identifier: GPL-2.0
/*
 * Processes and signals: fork (the child inherits every fd and mapping and
 * keeps fuzzing), fds passed between processes over the run's mailboxes
 * (SCM_RIGHTS), and signals that interrupt waits, which must restart.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz.h"

#define PASS_MAX 3

/* What the receiver needs to know of each fd. */
struct pass_msg {
	uint32_t n;
	struct {
		uint32_t kind;
		uint32_t rdonly;
		uint64_t rid;
		uint64_t size;
	} o[PASS_MAX];
};

static void send_fds(struct thread_ctx *t)
{
	int box = (int)rng_below(&t->rng, 4), fds[PASS_MAX], n = 1 + (int)rng_below(&t->rng, PASS_MAX);
	char control[CMSG_SPACE(sizeof(fds))] = { 0 };
	struct pass_msg m = { 0 };
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control };
	struct cmsghdr *c;
	int got = 0;

	for (int i = 0; i < n; i++) {
		struct obj o;
		int slot, fd;

		if (!obj_pick(&t->rng, K_FREE, &o, &slot))
			break;
		/* A private copy, and only if it is the file the table says. */
		fd = fcntl(o.fd, F_DUPFD_CLOEXEC, PRIVATE_FD_BASE);
		if (fd < 0)
			continue;
		if (!obj_unchanged(slot, &o)) {
			close(fd);
			continue;
		}
		fds[got] = fd;
		m.o[got].kind = o.kind;
		m.o[got].rdonly = o.rdonly;
		m.o[got].rid = o.rid;
		m.o[got].size = o.size;
		got++;
	}
	if (!got)
		return;
	m.n = (uint32_t)got;
	msg.msg_controllen = CMSG_SPACE(got * sizeof(int));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(got * sizeof(int));
	memcpy(CMSG_DATA(c), fds, got * sizeof(int));
	if (sendmsg(shared->mailbox[box][0], &msg, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
		atomic_fetch_add(&shared->fd_passes, 1);
	for (int i = 0; i < got; i++)
		close(fds[i]);
}

static void receive_fds(struct thread_ctx *t)
{
	int box = (int)rng_below(&t->rng, 4), fds[PASS_MAX], nfds = 0;
	char control[CMSG_SPACE(sizeof(fds))];
	struct pass_msg m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *c;
	ssize_t len;

	len = recvmsg(shared->mailbox[box][1], &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (len < 0)
		return;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		if (nfds > PASS_MAX)
			nfds = PASS_MAX;
		memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
	}
	for (int i = 0; i < nfds; i++) {
		if (len != sizeof(m) || m.n != (uint32_t)nfds) {
			close(fds[i]);	/* not a message of this run: cannot happen */
			continue;
		}
		obj_add(&t->rng, fds[i], (enum kind)m.o[i].kind, m.o[i].rid, m.o[i].size,
			m.o[i].rdonly);
	}
}

static void fork_child(struct thread_ctx *t)
{
	uint64_t seed = rng_next(&t->rng);
	pid_t pid;

	if (proc_count() > MAX_PROCS / 2)
		return;
	pid = obj_fork();
	if (pid == 0)
		child_main(t, seed);
	if (pid > 0)
		atomic_fetch_add(&shared->forks, 1);
}

static void signal_thread(struct thread_ctx *t)
{
	pid_t tid = random_thread(&t->rng);

	if (tid > 0)
		syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
}

void op_process(struct thread_ctx *t)
{
	reap_children();
	switch (rng_below(&t->rng, 10)) {
	case 0:
		fork_child(t);
		break;
	case 1: case 2:
		send_fds(t);
		break;
	case 3: case 4: case 5:
		receive_fds(t);
		break;
	default:
		signal_thread(t);
		break;
	}
}
