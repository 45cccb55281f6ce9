/* SPDX-License-Identifier: MIT */
/*
 * Finding libcupti at run time.  The injection library is loaded into
 * every program that makes an NVTX call; only CUDA programs need CUPTI,
 * so it is not a dependency of the library but loaded when the driver
 * calls InitializeInjection.
 *
 * One copy per process: two libcuptis would both hook the driver.  So
 * the copy the program loaded (PyTorch's kineto, say) comes first; its
 * version is checked later, like any other.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_record.h"

#ifndef TKI_CUPTI_PATH
#define TKI_CUPTI_PATH ""
#endif

/* The soname of the libcupti this library was built for. */
#define CUPTI_SONAME "libcupti.so.13"

static int
fill(struct tki_cupti *api, void *h, const char *from, char *why, size_t n)
{
	void *p;
	memset(api, 0, sizeof(*api));
	api->handle = h;
#define TKI_CUPTI_SYM(f)                                                     \
	p = dlsym(h, #f);                                                    \
	memcpy(&api->f, &p, sizeof(p));                                      \
	if (!p) {                                                            \
		snprintf(why, n, "%s has no %s (not CUPTI 13?)", from, #f);  \
		memset(api, 0, sizeof(*api));                                \
		return -1;                                                   \
	}
	TKI_CUPTI_FUNCTIONS(TKI_CUPTI_SYM)
#undef TKI_CUPTI_SYM
	return 0;
}

int
tki_cupti_load(struct tki_cupti *api, char *why, size_t n)
{
	const char *user = getenv(TKI_ENV_CUPTI);
	const char *tried[4];
	size_t ntried = 0;
	void *h = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
	const char *from = CUPTI_SONAME " (loaded by the program)";
	if (!h && user && *user) {
		tried[ntried++] = user;
		from = user;
		h = dlopen(user, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h && TKI_CUPTI_PATH[0]) {
		tried[ntried++] = TKI_CUPTI_PATH;
		from = TKI_CUPTI_PATH;
		h = dlopen(TKI_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h) {
		tried[ntried++] = CUPTI_SONAME;
		from = CUPTI_SONAME;
		h = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h) {
		const char *e = dlerror();
		size_t at = (size_t)snprintf(why, n, "libcupti not found (tried");
		for (size_t i = 0; i < ntried && at < n; i++)
			at += (size_t)snprintf(why + at, n - at, " %s", tried[i]);
		if (at < n)
			snprintf(why + at, n - at, "; set %s): %s", TKI_ENV_CUPTI,
			         e ? e : "unknown error");
		return -1;
	}
	if (fill(api, h, from, why, n) < 0) {
		dlclose(h);
		return -1;
	}
	return 0;
}
