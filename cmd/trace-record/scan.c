/* SPDX-License-Identifier: MIT */
/*
 * Following processes without ptrace (--no-ptrace, or ptrace denied by
 * Yama or a seccomp policy): every tick, the children of the processes
 * we know are read from /proc/PID/task/TID/children (or, without that
 * file, from a scan of all of /proc).  trace-record is a child
 * subreaper, so orphans come back to it and are reaped with their exit
 * status and resource use, like the command itself.  The others end
 * when they disappear: their exit status is their parent's to know, so
 * it is recorded as unknown, with the resources of the last sample, and
 * a process that lives less than a tick can be missed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"

static int children_files = -1;   /* /proc/.../children exists */

static void
found(const struct recorder *rc, pid_t pid, pid_t ppid)
{
	struct rec_proc *p = rec_proc_find(pid);
	if (p && (!p->end || rec_proc_same(p)))
		return; /* known; or ended, and a zombie its parent still lists */
	/* start 0: derived from /proc, as the process's spool does */
	rec_proc_add(rc, pid, ppid, 0);
}

static void
children_of(const struct recorder *rc, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char cp[400];
		snprintf(cp, sizeof(cp), "%s/%s/children", path, de->d_name);
		FILE *f = fopen(cp, "re");
		if (!f)
			continue;
		int child;
		while (fscanf(f, "%d", &child) == 1)
			found(rc, child, pid);
		fclose(f);
	}
	closedir(d);
}

/* Without children files: every process whose parent we know. */
static void
scan_all(const struct recorder *rc)
{
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *de;
	int added;
	do {
		added = 0;
		rewinddir(d);
		while ((de = readdir(d))) {
			char *end;
			long pid = strtol(de->d_name, &end, 10);
			if (*end || pid <= 0 || rec_proc_find((pid_t)pid))
				continue;
			char path[64], buf[512];
			snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
			FILE *f = fopen(path, "re");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = 0;
			char *p = strrchr(buf, ')');
			int ppid;
			char st;
			if (!p || sscanf(p + 2, "%c %d", &st, &ppid) != 2)
				continue;
			struct rec_proc *parent = rec_proc_find(ppid);
			if ((parent && !parent->end) || ppid == getpid()) {
				found(rc, (pid_t)pid, ppid);
				added = 1;
			}
		}
	} while (added);
	closedir(d);
}

void
rec_scan_tick(const struct recorder *rc, int64_t now)
{
	pid_t self = getpid();
	if (children_files < 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)self,
		         (int)self);
		children_files = access(path, R_OK) == 0;
	}
	/* gone since the last tick; our own children (the command, adopted
	 * orphans) are reaped instead, with their status */
	for (size_t i = 0; rec_proc_at(i); i++) {
		struct rec_proc *p = rec_proc_at(i);
		if (p->end || rec_proc_sample(p, now) == 0)
			continue;
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == p->pid)
			continue;
		rec_proc_ended(rc, p, now, NULL, NULL);
		rec_spools_process_gone(p->pid, now, 0);
		rec_spool_remove_pid(p->pid);
	}
	if (!children_files) {
		scan_all(rc);
		return;
	}
	children_of(rc, self);
	for (size_t i = 0; rec_proc_at(i); i++) {
		struct rec_proc *p = rec_proc_at(i);
		if (!p->end)
			children_of(rc, p->pid);
	}
}

void
rec_scan_reaped(const struct recorder *rc, pid_t pid, int status,
                const struct rusage *ru)
{
	struct rec_proc *p = rec_proc_find(pid);
	if (!p || p->end)
		return; /* an orphan that lived and died between two ticks */
	int64_t now = rec_now();
	rec_proc_ended(rc, p, now, &status, ru);
	rec_spools_process_gone(pid, now, 0);
	rec_spool_remove_pid(pid);
}
