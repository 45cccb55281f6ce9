/* SPDX-License-Identifier: MIT */
/*
 * Run a command where ptrace(2) is denied, as a container's seccomp
 * policy or Yama's ptrace_scope=3 would: `no_ptrace trace-record ...`
 * tests trace-record's fallback.  Only PTRACE_SEIZE (what trace-record
 * asks) is refused, so that LeakSanitizer, which attaches with
 * PTRACE_ATTACH, still checks a sanitized trace-record at exit.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: no_ptrace COMMAND [ARG...]\n");
		return 2;
	}
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_SEIZE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "no_ptrace: seccomp: %s\n", strerror(errno));
		return 2;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_ptrace: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
