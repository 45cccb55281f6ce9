/* SPDX-License-Identifier: MIT */
/*
 * The commands' heap (cmd/common/heap.c): after cmd_heap_init(), a
 * buffer of 1 MiB comes from the heap, and the heap's pages are advised
 * for huge pages (VmFlags "hg" in /proc/self/smaps); a buffer larger
 * than the advised reserve has a mapping of its own; with a malloc
 * tunable set by the user
 * (GLIBC_TUNABLES) nothing is changed.  The last in a copy of this
 * program started with that variable, as glibc reads it at start.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "common/heap.h"

/* The smaps entry of the mapping holding p: its name ("[heap]", "" for
 * an anonymous mapping) in name, and whether it has the huge-page
 * advice.  Returns 0 if no mapping holds p. */
static int
mapping_of(const void *p, char *name, size_t name_len, int *advised)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return 0;
	char line[512];
	int inside = 0, found = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char path[256] = "";
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &lo, &hi, path) >= 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			if (inside) {
				snprintf(name, name_len, "%s", path);
				*advised = 0;
				found = 1;
			}
		} else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
			*advised = strstr(line, " hg") != NULL;
		}
	}
	fclose(f);
	return found;
}

static int thp_supported;

/* Whether this kernel's smaps lists each mapping's flags at all. */
static int
smaps_has_flags(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int found = 0;
	while (f && !found && fgets(line, sizeof(line), f))
		found = strncmp(line, "VmFlags:", 8) == 0;
	if (f)
		fclose(f);
	return found;
}

TEST(small_buffers_on_advised_heap)
{
	char name[256];
	int advised = -1;
	char *p = malloc(1 << 20);
	CHECK(p != NULL);
	memset(p, 1, 1 << 20);
	/* its middle: its first bytes may share the heap's first page,
	 * which is not advised (the reserve begins after it) */
	CHECK(mapping_of(p + (1 << 19), name, sizeof(name), &advised));
	CHECK_STR(name, "[heap]");
	if (thp_supported)
		CHECK(advised == 1);
	free(p);
}

TEST(large_buffers_mapped_apart)
{
	char name[256];
	int advised = -1;
	char *p = malloc(40 << 20);
	CHECK(p != NULL);
	CHECK(mapping_of(p, name, sizeof(name), &advised));
	CHECK_STR(name, "");
	CHECK(advised == 0);
	free(p);
}

TEST(user_tunables_kept)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1);
		execl("/proc/self/exe", "test_heap", "--tunables-set", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Run with GLIBC_TUNABLES set: exit 0 if the heap was left alone (a
 * buffer of 1 MiB mapped apart, as glibc does by default). */
static int
tunables_set_child(void)
{
	cmd_heap_init();
	char name[256];
	int advised = -1;
	char *p = malloc(1 << 20);
	int ok = p && mapping_of(p + (1 << 19), name, sizeof(name), &advised) &&
	         strcmp(name, "[heap]") != 0 && advised == 0;
	free(p);
	return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--tunables-set") == 0)
		return tunables_set_child();
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	int sanitizer = 1;
#else
	int sanitizer = 0;
#endif
	if (sanitizer) {
		printf("ok 1 # SKIP the sanitizer's allocator is not glibc's heap\n1..1\n");
		return 0;
	}
	/* first, before anything allocates */
	cmd_heap_init();
	thp_supported = access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0 &&
	                smaps_has_flags();
	if (!thp_supported)
		printf("# no transparent huge pages in this kernel, or no VmFlags in its "
		       "smaps: the advice is not checked\n");
	RUN(small_buffers_on_advised_heap);
	RUN(large_buffers_mapped_apart);
	RUN(user_tunables_kept);
	return tap_done();
}
