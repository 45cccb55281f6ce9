/* SPDX-License-Identifier: MIT */
/* Printable names of the format's enumerations. */
#include <string.h>

#include "tk_private.h"

static const char *const kind_names[TK_KIND_MAX + 1] = {
	[TK_RANGE] = "range",
	[TK_ASYNC_RANGE] = "async_range",
	[TK_MARK] = "mark",
	[TK_API] = "api",
	[TK_KERNEL] = "kernel",
	[TK_MEMCPY] = "memcpy",
	[TK_MEMSET] = "memset",
	[TK_SYNC] = "sync",
	[TK_OVERHEAD] = "overhead",
	[TK_COUNTER] = "counter",
	[TK_MEMORY] = "memory",
	[TK_PROCESS] = "process",
	[TK_RUN] = "run",
	[TK_DROPPED] = "dropped",
	[TK_FLOW] = "flow",
};

TK_PUBLIC const char *
tk_kind_name(unsigned kind)
{
	return kind <= TK_KIND_MAX ? kind_names[kind] : NULL;
}

TK_PUBLIC unsigned
tk_kind_from_name(const char *name)
{
	for (unsigned k = 1; k <= TK_KIND_MAX; k++)
		if (strcmp(kind_names[k], name) == 0)
			return k;
	return 0;
}

/* Spelled as CUPTI and Nsight Systems spell them. */
static const char *const copy_names[] = {
	"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	"AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
};

TK_PUBLIC const char *
tk_copy_kind_name(unsigned kind)
{
	if (kind >= sizeof(copy_names) / sizeof(copy_names[0]))
		return "Unknown";
	return copy_names[kind];
}

static const char *const mem_names[] = {
	"Unknown", "Pageable", "Pinned", "Device", "Array",
	"Managed", "DeviceStatic", "ManagedStatic",
};

TK_PUBLIC const char *
tk_mem_kind_name(unsigned kind)
{
	if (kind >= sizeof(mem_names) / sizeof(mem_names[0]))
		return "Unknown";
	return mem_names[kind];
}

static const char *const sync_names[] = {
	"Unknown", "EventSynchronize", "StreamWaitEvent",
	"StreamSynchronize", "ContextSynchronize",
};

TK_PUBLIC const char *
tk_sync_type_name(unsigned type)
{
	if (type >= sizeof(sync_names) / sizeof(sync_names[0]))
		return "Unknown";
	return sync_names[type];
}

TK_PUBLIC const char *
tk_api_domain_name(unsigned domain)
{
	switch (domain) {
	case TK_API_RUNTIME: return "runtime";
	case TK_API_DRIVER: return "driver";
	default: return "other";
	}
}
