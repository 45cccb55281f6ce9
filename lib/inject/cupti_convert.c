/* SPDX-License-Identifier: MIT */
/*
 * CUPTI activity records to tracekit events (see cupti_convert.h).
 *
 * Where events go:
 *  - kernels, copies, memsets: the GPU stream track of (device,
 *    context, stream), defined on first use;
 *  - memory allocations and releases: the stream track too (it names
 *    the device); the context's null stream when the operation was not
 *    on a stream.  Device memory also moves the "device memory" counter
 *    of its device;
 *  - runtime and driver API calls, overhead of a thread: the thread
 *    track the host gives for (pid, tid);
 *  - synchronisations: CUPTI gives them no thread, only the correlation
 *    id of their API call, so they go to the thread of that call.  The
 *    call's record may come later (it is written when the call returns),
 *    so a synchronisation waits, for up to two buffers, for its call;
 *    then it goes on the process track;
 *  - lost-record reports: the process track.
 *
 * Everything that repeats is cached: string ids of kernel, API and
 * fixed names, track ids, the device of each context.  A record costs a
 * few table lookups and one tk_writer_event().
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti_version.h>

#include "cupti_convert.h"
#include "support.h"

/* The record layouts below are those of CUPTI 13.0; a libcupti of
 * another version writes others (cupti_convert_check_version()).  When
 * moving to new headers, check each typedef against cupti_activity.h. */
#if CUPTI_API_VERSION / 100 != 1300
#error "cupti_convert.c reads CUPTI 13.0 record layouts; check the typedefs against this toolkit's cupti_activity.h"
#endif
typedef CUpti_ActivityKernel10 kernel_rec;
typedef CUpti_ActivityMemcpy6 memcpy_rec;
typedef CUpti_ActivityMemcpyPtoP4 peer_rec;
typedef CUpti_ActivityMemset4 memset_rec;
typedef CUpti_ActivityMemory4 memory2_rec;
typedef CUpti_ActivityMemory memory_rec;
typedef CUpti_ActivityAPI api_rec;
typedef CUpti_ActivitySynchronization2 sync_rec;
typedef CUpti_ActivityOverhead3 overhead_rec;
typedef CUpti_ActivityDevice5 device_rec;
typedef CUpti_ActivityContext3 context_rec;
typedef CUpti_ActivityStream stream_rec;

/* libcupti is needed only to walk buffers and name API calls.  Weak
 * references let the converter link without it (the unit tests feed it
 * records directly); a host linked with -lcupti gets the real ones, and
 * a host that loads libcupti with dlopen() passes them in struct
 * cupti_convert_host (fill_cupti() below). */
#pragma weak cuptiActivityGetNextRecord
#pragma weak cuptiGetCallbackName
#pragma weak cuptiGetResultString
#pragma weak cuptiGetVersion

#define NAME_MAX_BYTES (64u * 1024u) /* longer names are cut */
#define CORR_SLOTS (1u << 16)        /* API calls remembered for syncs */
#define PENDING_MAX 1024u            /* syncs waiting for their call */
#define EARLY_MAX 1024u              /* streams waiting for their context */
#define PENDING_AGE 2u               /* buffers a sync may wait */
#define API_CBID_CACHED 8192u        /* API name ids cached below this */
#define VERIFY_EVERY 4096u           /* records per name-check generation */

/* ---- a small hash map: two 64-bit keys -> 32-bit value --------------- */

struct map_slot {
	uint64_t a, b;
	uint32_t val;
	uint32_t used;
};

struct map {
	struct map_slot *slots;
	uint32_t mask;
	uint32_t count;
};

static uint64_t
mix(uint64_t a, uint64_t b)
{
	return tkp_hash_u64(tkp_hash_u64(a) ^ b);
}

static uint32_t *
map_get(const struct map *m, uint64_t a, uint64_t b)
{
	if (!m->slots)
		return NULL;
	for (uint32_t i = (uint32_t)mix(a, b) & m->mask;; i = (i + 1) & m->mask) {
		struct map_slot *s = &m->slots[i];
		if (!s->used)
			return NULL;
		if (s->a == a && s->b == b)
			return &s->val;
	}
}

static int
map_grow(struct map *m)
{
	uint32_t n = m->slots ? (m->mask + 1) * 2 : 64;
	struct map_slot *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -1;
	for (uint32_t i = 0; m->slots && i <= m->mask; i++) {
		struct map_slot *s = &m->slots[i];
		if (!s->used)
			continue;
		uint32_t j = (uint32_t)mix(s->a, s->b) & (n - 1);
		while (slots[j].used)
			j = (j + 1) & (n - 1);
		slots[j] = *s;
	}
	free(m->slots);
	m->slots = slots;
	m->mask = n - 1;
	return 0;
}

/* Set (a, b) to val; -1 when out of memory. */
static int
map_put(struct map *m, uint64_t a, uint64_t b, uint32_t val)
{
	uint32_t *v = map_get(m, a, b);
	if (v) {
		*v = val;
		return 0;
	}
	if ((!m->slots || (m->count + 1) * 4 > (m->mask + 1) * 3) && map_grow(m))
		return -1;
	uint32_t i = (uint32_t)mix(a, b) & m->mask;
	while (m->slots[i].used)
		i = (i + 1) & m->mask;
	m->slots[i] = (struct map_slot){ a, b, val, 1 };
	m->count++;
	return 0;
}

static void
map_clear(struct map *m)
{
	if (m->slots)
		memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
	m->count = 0;
}

/* ---- the converter ------------------------------------------------------ */

/* A kernel name as CUPTI gave it, cached by pointer: CUPTI shares one
 * string among all records of a kernel.  The copy is compared with the
 * memory once per generation (a buffer, or VERIFY_EVERY records), so
 * that memory reused for another name (a module unloaded, another
 * loaded) is noticed without a string compare per kernel. */
struct kname {
	char *copy;
	uint32_t name_id, mangled_id;
	uint32_t checked;        /* generation of the last compare */
};

/* A CUDA device: what its DEVICE record said, kept so that it can be
 * defined again after cupti_convert_reset(). */
struct device {
	struct tk_device def;    /* def.name is ours (strdup) */
	uint32_t tk_id;          /* 0: not defined in this writer scope */
	uint32_t counter;        /* "device memory" track, 0 = none yet */
	int64_t in_use, peak;
};

struct context {
	uint32_t id;
	uint32_t device;
	uint32_t null_stream;
	int has_null;
};

struct corr_slot {
	uint32_t corr;
	uint32_t track;
};

struct pending {
	struct tk_event ev;
	uint32_t corr;
	uint32_t age;
};

/* A STREAM record whose CONTEXT record has not come yet: CUPTI delivers
 * a context after the streams created in it. */
struct early_stream {
	uint32_t context, stream;
};

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

struct cupti_convert {
	struct tk_writer *w;
	/* One event per kind, reused: a zeroed tk_event per record costs
	 * more than the rest of the conversion.  Each converter sets every
	 * field its kind uses on every record; the others stay zero. */
	struct tk_event ev[TK_KIND_MAX + 1];
	struct cupti_convert_host host;
	struct cupti_convert_stats st;
	struct cupti_convert_stats reported; /* losses already in the trace */
	char err[256];

	uint32_t process;                /* track of the process (pid 0) */
	struct map threads;              /* (pid, tid) -> track */
	uint32_t last_pid, last_tid, last_thread;
	struct map streams;              /* (device << 32 | context, stream) */
	uint64_t last_stream_a, last_stream_b;
	uint32_t last_stream;

	struct map kernel_map;           /* (name pointer, 0) -> kname index */
	struct kname *knames;
	uint32_t nknames;
	size_t capknames;
	uint32_t generation;             /* see struct kname */
	uint32_t until_next;             /* records left in this generation */
	demangle_fn demangle;

	struct map device_map;           /* (CUPTI device id, 0) -> index */
	struct device *devices;
	uint32_t ndevices;
	size_t capdevices;
	struct map context_map;          /* (context id, 0) -> index */
	struct context *contexts;
	uint32_t ncontexts;
	size_t capcontexts;

	uint32_t *api_names[2];          /* runtime, driver: cbid -> id */
	uint32_t memcpy_names[TK_COPY_PTOP + 1][TK_MEM_MANAGED_STATIC + 1]
	                     [TK_MEM_MANAGED_STATIC + 1];
	uint32_t memset_names[TK_MEM_MANAGED_STATIC + 1];
	uint32_t memory_names[2][TK_MEM_MANAGED_STATIC + 1];
	uint32_t sync_names[TK_SYNC_CONTEXT + 1];
	uint32_t overhead_names[10];
	uint32_t internal_launch_name;

	struct corr_slot *corr;          /* CORR_SLOTS, by corr & mask */
	struct pending *pending;
	uint32_t npending;
	struct early_stream *early;      /* EARLY_MAX */
	uint32_t nearly;
};

/* ---- errors ---------------------------------------------------------------- */

static void __attribute__((format(printf, 2, 3)))
note(struct cupti_convert *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/* Has the writer failed for good?  A sticky error makes every call fail,
 * even interning "" (which otherwise always works). */
static int
writer_failed(struct cupti_convert *c)
{
	return tk_writer_cstring(c->w, "") == 0;
}

static int
writer_error(struct cupti_convert *c)
{
	note(c, "trace writer: %s", tk_writer_error(c->w));
	return tk_writer_errno(c->w) == ENOMEM ? TK_ENOMEM : TK_EIO;
}

/* A definition returned 0: a writer failure (returned), or a refused
 * call (counted; the event that needed it is skipped). */
static int
def_failed(struct cupti_convert *c)
{
	if (writer_failed(c))
		return writer_error(c);
	c->st.rejected++;
	note(c, "trace writer refused a definition: %s", tk_writer_error(c->w));
	return TK_OK;
}

static int
emit(struct cupti_convert *c, const struct tk_event *e)
{
	if (c->host.keep && e->kind != TK_DROPPED && !c->host.keep(c->host.arg, e)) {
		c->st.filtered++;
		return TK_OK;
	}
	int rc = tk_writer_event(c->w, e);
	if (rc == TK_OK) {
		c->st.events++;
		return TK_OK;
	}
	if (rc == TK_EINVAL && !writer_failed(c)) {
		c->st.rejected++;
		note(c, "trace writer refused an event: %s", tk_writer_error(c->w));
		return TK_OK;
	}
	return writer_error(c);
}

/* ---- time --------------------------------------------------------------------- */

static int
to_ns(const struct cupti_convert *c, uint64_t t, int64_t *ns)
{
	if (c->host.clock) {
		*ns = c->host.clock(c->host.arg, t);
		return 1;
	}
	if (t > (uint64_t)INT64_MAX)
		return 0;
	return !__builtin_add_overflow((int64_t)t, c->host.clock_offset, ns);
}

/* Place a CUPTI span in time: e->ts, e->dur; 0 (counted) when it
 * cannot be. */
static int
span(struct cupti_convert *c, uint64_t start, uint64_t end, struct tk_event *e)
{
	int64_t b, en;
	if (start == 0 && end == 0) {
		c->st.no_timestamp++;
		return 0;
	}
	if (!to_ns(c, start, &b) || !to_ns(c, end, &en) || en < b ||
	    __builtin_sub_overflow(en, b, &e->dur)) {
		c->st.bad_timestamp++;
		return 0;
	}
	e->ts = b;
	return 1;
}

/* The same for an instant. */
static int
instant(struct cupti_convert *c, uint64_t t, int64_t *ts)
{
	if (t == 0) {
		c->st.no_timestamp++;
		return 0;
	}
	if (!to_ns(c, t, ts)) {
		c->st.bad_timestamp++;
		return 0;
	}
	return 1;
}

static int64_t
now(const struct cupti_convert *c)
{
	if (c->host.now)
		return c->host.now(c->host.arg);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- strings ---------------------------------------------------------------- */

static uint32_t
string_id(struct cupti_convert *c, const char *s)
{
	size_t n = s ? strnlen(s, NAME_MAX_BYTES) : 0;
	return tk_writer_string(c->w, s ? s : "", n);
}

/* Id of a fixed name, interned once into *slot. */
static uint32_t
cached_id(struct cupti_convert *c, uint32_t *slot, const char *s)
{
	if (!*slot)
		*slot = string_id(c, s);
	return *slot;
}

static demangle_fn
demangler(struct cupti_convert *c)
{
	if (c->demangle || (c->host.flags & CUPTI_CONVERT_NO_DEMANGLE))
		return c->demangle;
	/* Looked up again for each new name until found: libstdc++ may be
	 * loaded after the first kernel (a Python import, say).  Python
	 * loads it with RTLD_LOCAL, out of the global scope: then ask the
	 * library itself.  One the program did not load is not loaded. */
	void *p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!p) {
		void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
		if (lib) {
			p = dlsym(lib, "__cxa_demangle");
			dlclose(lib); /* NOLOAD took a reference: give it back */
		}
	}
	memcpy(&c->demangle, &p, sizeof(p));
	return c->demangle;
}

/* Intern a kernel name, demangled when it is a C++ name. */
static int
kname_fill(struct cupti_convert *c, struct kname *k)
{
	const char *name = k->copy;
	demangle_fn dm = name[0] == '_' && name[1] == 'Z' ? demangler(c) : NULL;
	int status = -1, ok;
	char *plain = dm ? dm(name, NULL, NULL, &status) : NULL;
	if (plain && status == 0) {
		k->name_id = string_id(c, plain);
		k->mangled_id = string_id(c, name);
		ok = k->name_id && k->mangled_id;
	} else {
		k->name_id = string_id(c, name);
		k->mangled_id = 0;
		ok = k->name_id != 0;
	}
	free(plain);
	if (ok)
		return TK_OK;
	k->name_id = 0;
	return def_failed(c);
}

/* String ids of a kernel's name and mangled name (0 when it is not a
 * C++ name); *name_id 0 when they could not be made. */
static int
kernel_names(struct cupti_convert *c, const char *name, uint32_t *name_id,
             uint32_t *mangled_id)
{
	*name_id = *mangled_id = 0;
	if (!name)
		name = "";
	uint32_t *idx = map_get(&c->kernel_map, (uint64_t)(uintptr_t)name, 0);
	struct kname *k = idx ? &c->knames[*idx] : NULL;
	if (k && k->checked != c->generation) {
		k->checked = c->generation;
		if (strcmp(k->copy, name) != 0) {
			/* the memory was reused for another name */
			char *copy = strdup(name);
			if (!copy)
				return TK_ENOMEM;
			free(k->copy);
			k->copy = copy;
			k->name_id = 0;
		}
	}
	if (!k) {
		struct kname *kn = tkp_grow(c->knames, &c->capknames,
		                            (size_t)c->nknames + 1, sizeof(*kn));
		if (!kn)
			return TK_ENOMEM;
		c->knames = kn;
		k = &c->knames[c->nknames];
		k->copy = strdup(name);
		k->name_id = 0;
		k->checked = c->generation;
		if (!k->copy || map_put(&c->kernel_map, (uint64_t)(uintptr_t)name, 0,
		                        c->nknames)) {
			free(k->copy);
			return TK_ENOMEM;
		}
		c->nknames++;
	}
	if (!k->name_id) {
		int rc = kname_fill(c, k);
		if (rc != TK_OK || !k->name_id)
			return rc;
	}
	*name_id = k->name_id;
	*mangled_id = k->mangled_id;
	return TK_OK;
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": runtime names carry
 * the CUDA version that introduced them.  Driver names keep their
 * suffixes (cuMemAlloc_v2 is the real symbol). */
static size_t
runtime_name_len(const char *s)
{
	size_t n = strlen(s);
	size_t i = n;
	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	if (i >= 2 && i < n && n - i >= 4 && s[i - 1] == 'v' && s[i - 2] == '_')
		return i - 2;
	return n;
}

static uint32_t
api_name_lookup(struct cupti_convert *c, int runtime, uint32_t cbid)
{
	const char *name = NULL;
	CUpti_CallbackDomain dom = runtime ? CUPTI_CB_DOMAIN_RUNTIME_API
	                                   : CUPTI_CB_DOMAIN_DRIVER_API;
	if (c->host.callback_name &&
	    c->host.callback_name(dom, cbid, &name) == CUPTI_SUCCESS && name &&
	    name[0]) {
		size_t n = runtime ? runtime_name_len(name) : strlen(name);
		return tk_writer_string(c->w, name, n < NAME_MAX_BYTES ? n : NAME_MAX_BYTES);
	}
	char buf[48];
	snprintf(buf, sizeof(buf), "%s cbid %" PRIu32, runtime ? "runtime" : "driver",
	         cbid);
	return string_id(c, buf);
}

static uint32_t
api_name(struct cupti_convert *c, int runtime, uint32_t cbid)
{
	if (cbid >= API_CBID_CACHED)
		return api_name_lookup(c, runtime, cbid);
	uint32_t **table = &c->api_names[runtime ? 0 : 1];
	if (!*table && !(*table = calloc(API_CBID_CACHED, sizeof(**table))))
		return api_name_lookup(c, runtime, cbid);
	if (!(*table)[cbid])
		(*table)[cbid] = api_name_lookup(c, runtime, cbid);
	return (*table)[cbid];
}

/* ---- devices, contexts, tracks ---------------------------------------------- */

static uint32_t
process_track(struct cupti_convert *c, uint32_t pid)
{
	if (pid == 0) {
		if (!c->process)
			c->process = c->host.process_track(c->host.arg, 0);
		return c->process;
	}
	return c->host.process_track(c->host.arg, pid);
}

static uint32_t
thread_track(struct cupti_convert *c, uint32_t pid, uint32_t tid)
{
	if (c->last_thread && c->last_pid == pid && c->last_tid == tid)
		return c->last_thread;
	uint32_t *t = map_get(&c->threads, pid, tid);
	uint32_t id = t ? *t : 0;
	if (!id) {
		if (c->host.thread_track)
			id = c->host.thread_track(c->host.arg, pid, tid);
		if (!id)
			return process_track(c, pid);
		map_put(&c->threads, pid, tid, id); /* no memory: ask again */
	}
	c->last_pid = pid;
	c->last_tid = tid;
	c->last_thread = id;
	return id;
}

/* The device entry of a CUPTI device id, created (undefined) when new;
 * NULL when out of memory. */
static struct device *
device_entry(struct cupti_convert *c, uint32_t id)
{
	uint32_t *idx = map_get(&c->device_map, id, 0);
	if (idx)
		return &c->devices[*idx];
	struct device *d = tkp_grow(c->devices, &c->capdevices,
	                            (size_t)c->ndevices + 1, sizeof(*d));
	if (!d)
		return NULL;
	c->devices = d;
	d = &c->devices[c->ndevices];
	memset(d, 0, sizeof(*d));
	d->def.index = id;
	if (map_put(&c->device_map, id, 0, c->ndevices))
		return NULL;
	c->ndevices++;
	return d;
}

static int
define_device(struct cupti_convert *c, struct device *d)
{
	struct tk_device def = d->def;
	def.host = c->host.host_name ? c->host.host_name : "";
	if (!def.name)
		def.name = "";
	uint32_t id = tk_writer_device(c->w, d->tk_id, &def);
	if (!id)
		return def_failed(c);
	d->tk_id = id;
	return TK_OK;
}

/* The tracekit id of CUPTI device `id`, defined now if needed (from its
 * DEVICE record if one came, else with only its index); 0 on failure,
 * with *rc set. */
static uint32_t
device_id(struct cupti_convert *c, uint32_t id, int *rc)
{
	struct device *d = device_entry(c, id);
	if (!d) {
		*rc = TK_ENOMEM;
		return 0;
	}
	if (!d->tk_id)
		*rc = define_device(c, d);
	return d->tk_id;
}

static struct context *
context_entry(struct cupti_convert *c, uint32_t id, int create)
{
	uint32_t *idx = map_get(&c->context_map, id, 0);
	if (idx)
		return &c->contexts[*idx];
	if (!create)
		return NULL;
	struct context *x = tkp_grow(c->contexts, &c->capcontexts,
	                             (size_t)c->ncontexts + 1, sizeof(*x));
	if (!x)
		return NULL;
	c->contexts = x;
	x = &c->contexts[c->ncontexts];
	memset(x, 0, sizeof(*x));
	x->id = id;
	if (map_put(&c->context_map, id, 0, c->ncontexts))
		return NULL;
	c->ncontexts++;
	return x;
}

/* The stream track of (device, context, stream), defined when new;
 * 0 on failure with *rc set (TK_OK when only this event is lost). */
static uint32_t
stream_track(struct cupti_convert *c, uint32_t device, uint32_t context,
             uint32_t stream, int *rc)
{
	uint64_t a = (uint64_t)device << 32 | context;
	if (c->last_stream && c->last_stream_a == a && c->last_stream_b == stream)
		return c->last_stream;
	uint32_t *t = map_get(&c->streams, a, stream);
	uint32_t id = t ? *t : 0;
	if (!id) {
		uint32_t dev = device_id(c, device, rc);
		if (!dev)
			return 0;
		const struct context *x = context_entry(c, context, 0);
		struct tk_stream s = { process_track(c, 0), dev, context, stream,
		                       x && x->has_null && x->null_stream == stream
		                               ? "default" : "" };
		if (!(id = tk_writer_stream(c->w, 0, &s))) {
			*rc = def_failed(c);
			return 0;
		}
		if (map_put(&c->streams, a, stream, id)) {
			*rc = TK_ENOMEM;
			return 0;
		}
	}
	c->last_stream_a = a;
	c->last_stream_b = stream;
	c->last_stream = id;
	return id;
}

/* ---- records ------------------------------------------------------------------ */

static int
convert_kernel(struct cupti_convert *c, const kernel_rec *k)
{
	struct tk_event *e = &c->ev[TK_KERNEL];
	int rc = TK_OK;
	if (!span(c, k->start, k->end, e))
		return TK_OK;
	if (!(e->track = stream_track(c, k->deviceId, k->contextId, k->streamId, &rc)))
		return rc;
	rc = kernel_names(c, k->name, &e->name_id, &e->u.kernel.mangled_id);
	if (!e->name_id)
		return rc;
	struct tk_kernel_attrs *a = &e->u.kernel;
	a->correlation = k->correlationId;
	a->grid[0] = (uint32_t)k->gridX;
	a->grid[1] = (uint32_t)k->gridY;
	a->grid[2] = (uint32_t)k->gridZ;
	a->block[0] = (uint32_t)k->blockX;
	a->block[1] = (uint32_t)k->blockY;
	a->block[2] = (uint32_t)k->blockZ;
	a->cluster[0] = k->clusterX;
	a->cluster[1] = k->clusterY;
	a->cluster[2] = k->clusterZ;
	a->static_smem = (uint32_t)k->staticSharedMemory;
	a->dynamic_smem = (uint32_t)k->dynamicSharedMemory;
	a->registers = k->registersPerThread;
	a->graph_id = k->graphId;
	a->graph_node = k->graphNodeId;
	return emit(c, e);
}

static unsigned
mem_index(unsigned kind)
{
	return kind <= TK_MEM_MANAGED_STATIC ? kind : TK_MEM_UNKNOWN;
}

/* "Memcpy HtoD (Pinned -> Device)", as Nsight Systems writes it. */
static uint32_t
memcpy_name(struct cupti_convert *c, unsigned copy, unsigned src, unsigned dst)
{
	unsigned ci = copy <= TK_COPY_PTOP ? copy : TK_COPY_UNKNOWN;
	uint32_t *slot = &c->memcpy_names[ci][mem_index(src)][mem_index(dst)];
	if (!*slot) {
		char buf[80];
		snprintf(buf, sizeof(buf), "Memcpy %s (%s -> %s)", tk_copy_kind_name(ci),
		         tk_mem_kind_name(src), tk_mem_kind_name(dst));
		*slot = string_id(c, buf);
	}
	return *slot;
}

static int
convert_memcpy(struct cupti_convert *c, const memcpy_rec *m)
{
	struct tk_event *e = &c->ev[TK_MEMCPY];
	int rc = TK_OK;
	if (!span(c, m->start, m->end, e))
		return TK_OK;
	if (!(e->track = stream_track(c, m->deviceId, m->contextId, m->streamId, &rc)))
		return rc;
	if (!(e->name_id = memcpy_name(c, m->copyKind, m->srcKind, m->dstKind)))
		return def_failed(c);
	/* The runtime call's id when there is one: that is the call the
	 * program made (a driver-only program has just the driver's). */
	e->u.memcpy.correlation = m->runtimeCorrelationId ? m->runtimeCorrelationId
	                                                 : m->correlationId;
	e->u.memcpy.bytes = m->bytes;
	e->u.memcpy.copy_kind = m->copyKind;
	e->u.memcpy.src_kind = m->srcKind;
	e->u.memcpy.dst_kind = m->dstKind;
	e->u.memcpy.src_device = 0; /* set by peer copies */
	e->u.memcpy.dst_device = 0;
	e->u.memcpy.flags = m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC ? TK_FLAG_ASYNC : 0;
	return emit(c, e);
}

static int
convert_peer(struct cupti_convert *c, const peer_rec *m)
{
	struct tk_event *e = &c->ev[TK_MEMCPY];
	int rc = TK_OK;
	if (!span(c, m->start, m->end, e))
		return TK_OK;
	if (!(e->track = stream_track(c, m->deviceId, m->contextId, m->streamId, &rc)))
		return rc;
	if (!(e->name_id = memcpy_name(c, m->copyKind, m->srcKind, m->dstKind)))
		return def_failed(c);
	e->u.memcpy.correlation = m->correlationId;
	e->u.memcpy.bytes = m->bytes;
	e->u.memcpy.copy_kind = m->copyKind;
	e->u.memcpy.src_kind = m->srcKind;
	e->u.memcpy.dst_kind = m->dstKind;
	e->u.memcpy.src_device = m->srcDeviceId;
	e->u.memcpy.dst_device = m->dstDeviceId;
	e->u.memcpy.flags = m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC ? TK_FLAG_ASYNC : 0;
	return emit(c, e);
}

static int
convert_memset(struct cupti_convert *c, const memset_rec *m)
{
	struct tk_event *e = &c->ev[TK_MEMSET];
	int rc = TK_OK;
	if (!span(c, m->start, m->end, e))
		return TK_OK;
	if (!(e->track = stream_track(c, m->deviceId, m->contextId, m->streamId, &rc)))
		return rc;
	uint32_t *slot = &c->memset_names[mem_index(m->memoryKind)];
	if (!*slot) {
		char buf[48];
		snprintf(buf, sizeof(buf), "Memset (%s)", tk_mem_kind_name(m->memoryKind));
		*slot = string_id(c, buf);
	}
	if (!(e->name_id = *slot))
		return def_failed(c);
	e->u.memset.correlation = m->correlationId;
	e->u.memset.bytes = m->bytes;
	e->u.memset.value = m->value;
	e->u.memset.mem_kind = m->memoryKind;
	e->u.memset.flags = m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC ? TK_FLAG_ASYNC : 0;
	return emit(c, e);
}

/* Device memory in use on `device` changed by `delta` at `ts`: one
 * sample of its "device memory" counter. */
static int
device_memory(struct cupti_convert *c, uint32_t device, int64_t delta, int64_t ts)
{
	int rc = TK_OK;
	uint32_t dev = device_id(c, device, &rc);
	if (!dev)
		return rc;
	struct device *d = device_entry(c, device);
	if (__builtin_add_overflow(d->in_use, delta, &d->in_use))
		d->in_use = delta > 0 ? INT64_MAX : INT64_MIN;
	if (d->in_use > d->peak)
		d->peak = d->in_use;
	if (!d->counter) {
		struct tk_counter ct = { "device memory", "bytes", process_track(c, 0), dev };
		if (!(d->counter = tk_writer_counter(c->w, 0, &ct)))
			return def_failed(c);
	}
	struct tk_event *e = &c->ev[TK_COUNTER];
	e->track = d->counter;
	e->ts = ts;
	e->dur = 0;
	/* A release seen before its allocation (they can come in different
	 * buffers) would make the sum negative for a moment. */
	e->u.counter.value = d->in_use > 0 ? (double)d->in_use : 0.0;
	return emit(c, e);
}

/* Memory that counts as "device memory in use". */
static int
is_device_memory(unsigned kind)
{
	return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
	       kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
}

/* One allocation or release on the stream track it belongs to; TK_OK
 * also when it is skipped (a definition refused). */
static int
memory_op_event(struct cupti_convert *c, unsigned op, unsigned kind, uint64_t address,
                uint64_t bytes, uint32_t corr, uint32_t device, uint32_t context,
                uint32_t stream, int64_t ts)
{
	struct tk_event *e = &c->ev[TK_MEMORY];
	int rc = TK_OK;
	e->ts = ts;
	e->dur = 0;
	if (context == CUPTI_INVALID_CONTEXT_ID || context == 0) {
		/* static (module) memory belongs to no context on CUDA 13.0:
		 * it goes with the device's context, when it has one */
		context = 0;
		for (uint32_t i = 0; i < c->ncontexts; i++)
			if (c->contexts[i].device == device && c->contexts[i].has_null) {
				context = c->contexts[i].id;
				break;
			}
	}
	if (stream == CUPTI_INVALID_STREAM_ID) {
		const struct context *x = context_entry(c, context, 0);
		stream = x && x->has_null ? x->null_stream : 0;
	}
	if (!(e->track = stream_track(c, device, context, stream, &rc)))
		return rc;
	uint32_t *slot = &c->memory_names[op == TK_MEM_FREE][mem_index(kind)];
	if (!*slot) {
		char buf[48];
		snprintf(buf, sizeof(buf), "%s (%s)", op == TK_MEM_FREE ? "Free" : "Alloc",
		         tk_mem_kind_name(kind));
		*slot = string_id(c, buf);
	}
	if (!(e->name_id = *slot))
		return def_failed(c);
	e->u.memory.correlation = corr;
	e->u.memory.op = op;
	e->u.memory.mem_kind = kind;
	e->u.memory.address = address;
	e->u.memory.bytes = bytes;
	return emit(c, e);
}

/* The event, and for device memory the device's sample of memory in
 * use: counted even when the event could not be written, or every
 * later sample of the device would be off by its bytes. */
static int
memory_event(struct cupti_convert *c, unsigned op, unsigned kind, uint64_t address,
             uint64_t bytes, uint32_t corr, uint32_t device, uint32_t context,
             uint32_t stream, int64_t ts)
{
	int rc = memory_op_event(c, op, kind, address, bytes, corr, device, context,
	                         stream, ts);
	if (rc != TK_OK || !is_device_memory(kind))
		return rc;
	int64_t delta = bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bytes;
	return device_memory(c, device, op == TK_MEM_FREE ? -delta : delta, ts);
}

static int
convert_memory2(struct cupti_convert *c, const memory2_rec *m)
{
	unsigned op;
	if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
		op = TK_MEM_ALLOC;
	else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		op = TK_MEM_FREE;
	else {
		c->st.malformed++;
		return TK_OK;
	}
	int64_t ts;
	if (!instant(c, m->timestamp, &ts))
		return TK_OK;
	/* CUDA 13.0 gives static (module) memory stream 0, not the
	 * CUPTI_INVALID_STREAM_ID of its documentation: no stream either */
	uint32_t stream = m->streamId ? m->streamId : CUPTI_INVALID_STREAM_ID;
	return memory_event(c, op, m->memoryKind, m->address, m->bytes, m->correlationId,
	                    m->deviceId, m->contextId, stream, ts);
}

/* The older MEMORY kind: one record per allocation, written when it is
 * freed (end = 0: never freed). */
static int
convert_memory(struct cupti_convert *c, const memory_rec *m)
{
	int64_t ts;
	if (!instant(c, m->start, &ts))
		return TK_OK;
	int rc = memory_event(c, TK_MEM_ALLOC, m->memoryKind, m->address, m->bytes, 0,
	                      m->deviceId, m->contextId, CUPTI_INVALID_STREAM_ID, ts);
	if (rc != TK_OK || m->end == 0)
		return rc;
	int64_t freed;
	if (!to_ns(c, m->end, &freed) || freed < ts) {
		c->st.bad_timestamp++;
		return TK_OK;
	}
	return memory_event(c, TK_MEM_FREE, m->memoryKind, m->address, m->bytes, 0,
	                    m->deviceId, m->contextId, CUPTI_INVALID_STREAM_ID, freed);
}

/* Remember which thread made API call `corr`, for its synchronisation. */
static void
remember_call(struct cupti_convert *c, uint32_t corr, uint32_t track)
{
	struct corr_slot *s = &c->corr[corr & (CORR_SLOTS - 1)];
	s->corr = corr;
	s->track = track;
}

static uint32_t
call_thread(const struct cupti_convert *c, uint32_t corr)
{
	const struct corr_slot *s = &c->corr[corr & (CORR_SLOTS - 1)];
	return s->corr == corr && corr ? s->track : 0;
}

static int
flush_pending(struct cupti_convert *c, uint32_t i, uint32_t track)
{
	struct pending p = c->pending[i];
	c->pending[i] = c->pending[--c->npending];
	p.ev.track = track ? track : process_track(c, 0);
	return emit(c, &p.ev);
}

/* API call `corr` was made on `track`: write the syncs waiting for it. */
static int
release_waiting(struct cupti_convert *c, uint32_t corr, uint32_t track)
{
	int rc = TK_OK;
	for (uint32_t i = 0; i < c->npending && rc == TK_OK;) {
		if (c->pending[i].corr == corr)
			rc = flush_pending(c, i, track);
		else
			i++;
	}
	return rc;
}

static int
convert_api(struct cupti_convert *c, const api_rec *a)
{
	struct tk_event *e = &c->ev[TK_API];
	if (!span(c, a->start, a->end, e))
		return TK_OK;
	int runtime = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
	e->track = thread_track(c, a->processId, a->threadId);
	if (a->kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API) {
		/* a launch outside any API call; its cbid means nothing */
		e->name_id = cached_id(c, &c->internal_launch_name, "internal kernel launch");
		e->u.api.cbid = 0;
	} else {
		e->name_id = api_name(c, runtime, a->cbid);
		e->u.api.cbid = a->cbid;
	}
	if (!e->name_id)
		return def_failed(c);
	e->u.api.domain = runtime ? TK_API_RUNTIME : TK_API_DRIVER;
	e->u.api.correlation = a->correlationId;
	e->u.api.result = (int32_t)a->returnValue;
	remember_call(c, a->correlationId, e->track);
	int rc = emit(c, e);
	if (rc == TK_OK && c->npending)
		rc = release_waiting(c, a->correlationId, e->track);
	return rc;
}

static const char *const sync_labels[TK_SYNC_CONTEXT + 1] = {
	"Synchronize", "Event Synchronize", "Stream Wait Event",
	"Stream Synchronize", "Context Synchronize",
};

static int
convert_sync(struct cupti_convert *c, const sync_rec *s)
{
	struct tk_event *e = &c->ev[TK_SYNC];
	if (!span(c, s->start, s->end, e))
		return TK_OK;
	unsigned type = (unsigned)s->type <= TK_SYNC_CONTEXT ? (unsigned)s->type
	                                                 : TK_SYNC_UNKNOWN;
	if (!(e->name_id = cached_id(c, &c->sync_names[type], sync_labels[type])))
		return def_failed(c);
	e->u.sync.correlation = s->correlationId;
	e->u.sync.type = s->type; /* CUPTI's numbers are tracekit's */
	if ((e->track = call_thread(c, s->correlationId)))
		return emit(c, e);
	if (c->npending == PENDING_MAX) {
		int rc = flush_pending(c, 0, 0);
		if (rc != TK_OK)
			return rc;
	}
	c->pending[c->npending++] = (struct pending){ *e, s->correlationId, 0 };
	return TK_OK;
}

static const char *
overhead_label(uint32_t kind, unsigned *index)
{
	static const char *const labels[10] = {
		"Overhead", "Driver compiler", "CUPTI buffer flush",
		"CUPTI instrumentation", "CUPTI resource",
		"Runtime-triggered module loading", "Lazy function loading",
		"Command buffer full", "Activity buffer request",
		"UVM activity init",
	};
	unsigned i = 0;
	if (kind == CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER)
		i = 1;
	else if ((kind & 0xffffu) == 0 && kind >> 16 >= 1 && kind >> 16 <= 8)
		i = 1 + (kind >> 16);
	*index = i;
	return labels[i];
}

static int
convert_overhead(struct cupti_convert *c, const overhead_rec *o)
{
	struct tk_event *e = &c->ev[TK_OVERHEAD];
	if (!span(c, o->start, o->end, e))
		return TK_OK;
	if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
		e->track = thread_track(c, o->objectId.pt.processId, o->objectId.pt.threadId);
	else if (o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
		e->track = process_track(c, o->objectId.pt.processId);
	else
		e->track = process_track(c, 0);
	unsigned i;
	const char *label = overhead_label(o->overheadKind, &i);
	if (!(e->name_id = cached_id(c, &c->overhead_names[i], label)))
		return def_failed(c);
	e->u.overhead.type = o->overheadKind;
	return emit(c, e);
}

static int
convert_device(struct cupti_convert *c, const device_rec *r)
{
	struct device *d = device_entry(c, r->id);
	if (!d)
		return TK_ENOMEM;
	char *name = strndup(r->name ? r->name : "", NAME_MAX_BYTES);
	if (!name)
		return TK_ENOMEM;
	free((void *)(uintptr_t)d->def.name);
	d->def.name = name;
	d->def.index = r->id;
	memcpy(d->def.uuid, r->uuid.bytes, sizeof(d->def.uuid));
	d->def.sm_count = r->numMultiprocessors;
	d->def.memory = r->globalMemorySize;
	d->def.cc_major = r->computeCapabilityMajor;
	d->def.cc_minor = r->computeCapabilityMinor;
	return define_device(c, d); /* a placeholder is defined again */
}

/* The context's NULL stream got its track before the CONTEXT record
 * came (CUPTI sends that late): define it again, named. */
static int
name_null_stream(struct cupti_convert *c, uint32_t context, const struct context *x)
{
	uint32_t *t = map_get(&c->streams, (uint64_t)x->device << 32 | context, x->null_stream);
	if (!t || !*t)
		return TK_OK;
	int rc = TK_OK;
	uint32_t dev = device_id(c, x->device, &rc);
	if (!dev)
		return rc;
	struct tk_stream s = { process_track(c, 0), dev, context, x->null_stream, "default" };
	return tk_writer_stream(c->w, *t, &s) ? TK_OK : def_failed(c);
}

static int
define_context(struct cupti_convert *c, uint32_t context, uint32_t device,
               uint32_t null_stream)
{
	struct context *x = context_entry(c, context, 1);
	if (!x)
		return TK_ENOMEM;
	int named = x->has_null;
	x->device = device;
	x->null_stream = null_stream;
	x->has_null = 1;
	int rc = TK_OK;
	if (!named)
		rc = name_null_stream(c, context, x);
	/* the streams created in it before it came */
	for (uint32_t i = 0; i < c->nearly && rc == TK_OK;) {
		if (c->early[i].context != context) {
			i++;
			continue;
		}
		stream_track(c, x->device, context, c->early[i].stream, &rc);
		c->early[i] = c->early[--c->nearly];
	}
	return rc;
}

/* After a record that writes no event of its own (DEVICE, CONTEXT,
 * STREAM, a context the host names): a definition the writer refused in
 * it lost no event, and is not reported as a refused event (the
 * converter's error says why).  What it defined is defined again by the
 * first event that needs it, or stays as it was (a device's placeholder,
 * an unnamed NULL stream). */
static int
no_event_lost(struct cupti_convert *c, uint64_t refused_before, int rc)
{
	c->st.rejected = refused_before;
	return rc;
}

static int
convert_context(struct cupti_convert *c, const context_rec *r)
{
	int rc = TK_OK;
	device_id(c, r->deviceId, &rc);
	return rc ? rc : define_context(c, r->contextId, r->deviceId, r->nullStreamId);
}

int
cupti_convert_context(struct cupti_convert *c, uint32_t context, uint32_t device,
                      uint32_t null_stream)
{
	if (!c)
		return TK_EINVAL;
	uint64_t refused = c->st.rejected;
	return no_event_lost(c, refused, define_context(c, context, device, null_stream));
}

/* A created stream: define its track now, so that streams without work
 * still show; when its context is not known yet, once it is. */
static int
convert_stream(struct cupti_convert *c, const stream_rec *r)
{
	const struct context *x = context_entry(c, r->contextId, 0);
	int rc = TK_OK;
	if (x) {
		stream_track(c, x->device, r->contextId, r->streamId, &rc);
		return rc;
	}
	if (!c->early && !(c->early = malloc(EARLY_MAX * sizeof(*c->early))))
		return TK_ENOMEM;
	if (c->nearly == EARLY_MAX) /* a context that never comes: keep the newest */
		memmove(c->early, c->early + 1, --c->nearly * sizeof(*c->early));
	c->early[c->nearly++] = (struct early_stream){ r->contextId, r->streamId };
	return TK_OK;
}

static void
next_generation(struct cupti_convert *c)
{
	c->generation++;
	c->until_next = VERIFY_EVERY;
}

int
cupti_convert_record(struct cupti_convert *c, const CUpti_Activity *rec)
{
	if (!c || !rec)
		return TK_EINVAL;
	uint32_t kind = (uint32_t)rec->kind;
	uint64_t refused = c->st.rejected;
	c->st.records++;
	if (c->until_next-- == 0)
		next_generation(c);
	c->st.by_kind[kind < CUPTI_CONVERT_KINDS ? kind : CUPTI_CONVERT_KINDS - 1]++;
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return convert_kernel(c, (const kernel_rec *)rec);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return convert_memcpy(c, (const memcpy_rec *)rec);
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return convert_peer(c, (const peer_rec *)rec);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return convert_memset(c, (const memset_rec *)rec);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return convert_memory2(c, (const memory2_rec *)rec);
	case CUPTI_ACTIVITY_KIND_MEMORY:
		return convert_memory(c, (const memory_rec *)rec);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
		return convert_api(c, (const api_rec *)rec);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return convert_sync(c, (const sync_rec *)rec);
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		return convert_overhead(c, (const overhead_rec *)rec);
	case CUPTI_ACTIVITY_KIND_DEVICE:
		return no_event_lost(c, refused, convert_device(c, (const device_rec *)rec));
	case CUPTI_ACTIVITY_KIND_CONTEXT:
		return no_event_lost(c, refused, convert_context(c, (const context_rec *)rec));
	case CUPTI_ACTIVITY_KIND_STREAM:
		return no_event_lost(c, refused, convert_stream(c, (const stream_rec *)rec));
	default:
		c->st.ignored++;
		return TK_OK;
	}
}

void
cupti_convert_release(CUpti_Activity *rec)
{
	if (!rec)
		return;
	if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
		device_rec *d = (device_rec *)rec;
		free((void *)(uintptr_t)d->name);
		d->name = NULL;
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_OVERHEAD) {
		overhead_rec *o = (overhead_rec *)rec;
		free(o->overheadData);
		o->overheadData = NULL;
	}
}

/* ---- losses, buffers, the end -------------------------------------------------- */

int
cupti_convert_dropped(struct cupti_convert *c, uint64_t count, const char *reason)
{
	if (!c)
		return TK_EINVAL;
	if (count == 0)
		return TK_OK;
	struct tk_event *e = &c->ev[TK_DROPPED];
	e->track = process_track(c, 0);
	e->ts = now(c);
	e->name = "CUPTI";
	e->u.dropped.count = count;
	e->u.dropped.reason = reason ? reason : "";
	return emit(c, e);
}

/* Report losses counted since the last report. */
static int
report_losses(struct cupti_convert *c)
{
	static const struct {
		size_t off;
		const char *reason;
	} losses[] = {
		{ offsetof(struct cupti_convert_stats, no_timestamp),
		  "CUPTI could not time these records (device buffer full)" },
		{ offsetof(struct cupti_convert_stats, bad_timestamp),
		  "CUPTI records ending before they begin, or out of range" },
		{ offsetof(struct cupti_convert_stats, malformed),
		  "CUPTI records with values tracekit cannot interpret" },
		{ offsetof(struct cupti_convert_stats, rejected),
		  "events the trace writer refused" },
	};
	int rc = TK_OK;
	for (size_t i = 0; i < sizeof(losses) / sizeof(losses[0]) && rc == TK_OK; i++) {
		uint64_t *now_n = (uint64_t *)((char *)&c->st + losses[i].off);
		uint64_t *told = (uint64_t *)((char *)&c->reported + losses[i].off);
		uint64_t n = *now_n - *told;
		*told = *now_n;
		rc = cupti_convert_dropped(c, n, losses[i].reason);
	}
	return rc;
}

/* Syncs that waited PENDING_AGE buffers for their call go to the
 * process track: the call may never come (API tracing off). */
static int
age_pending(struct cupti_convert *c)
{
	int rc = TK_OK;
	for (uint32_t i = 0; i < c->npending && rc == TK_OK;) {
		if (++c->pending[i].age >= PENDING_AGE)
			rc = flush_pending(c, i, 0);
		else
			i++;
	}
	return rc;
}

/* Bytes of a record of a kind the converter reads; 0 for others. */
static size_t
record_size(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(kernel_rec);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(memcpy_rec);
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(peer_rec);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(memset_rec);
	case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(memory2_rec);
	case CUPTI_ACTIVITY_KIND_MEMORY: return sizeof(memory_rec);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
	case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(api_rec);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(sync_rec);
	case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(overhead_rec);
	case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(device_rec);
	case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(context_rec);
	case CUPTI_ACTIVITY_KIND_STREAM: return sizeof(stream_rec);
	default: return 0;
	}
}

int
cupti_convert_buffer(struct cupti_convert *c, uint8_t *buf, size_t valid_size,
                     size_t dropped)
{
	if (!c)
		return TK_EINVAL;
	if (!c->host.next_record) {
		note(c, "%s", "libcupti is not linked: cannot walk a CUPTI buffer");
		return TK_EINVAL;
	}
	int rc = TK_OK;
	CUpti_Activity *r = NULL;
	next_generation(c);
	while (buf && valid_size) {
		CUptiResult st = c->host.next_record(buf, valid_size, &r);
		if (st == CUPTI_ERROR_MAX_LIMIT_REACHED)
			break;
		if (st != CUPTI_SUCCESS) {
			const char *why = NULL;
			if (!c->host.result_string || c->host.result_string(st, &why) ||
			    !why)
				why = "unknown error";
			char reason[160];
			/* where the last good record ends (or begins, for a
			 * kind whose size this file does not know) */
			size_t at = r ? (size_t)((uint8_t *)r - buf) + record_size(r->kind) : 0;
			snprintf(reason, sizeof(reason),
			         "unreadable CUPTI buffer after byte %zu of %zu: %s", at,
			         valid_size, why);
			note(c, "%s", reason);
			c->st.unreadable++;
			if (rc == TK_OK)
				rc = cupti_convert_dropped(c, 1, reason);
			break;
		}
		/* after a writer failure keep walking, to release memory */
		if (rc == TK_OK)
			rc = cupti_convert_record(c, r);
		if (!(c->host.flags & CUPTI_CONVERT_KEEP_RECORD_MEMORY))
			cupti_convert_release(r);
	}
	if (rc != TK_OK)
		return rc;
	c->st.dropped += dropped;
	if ((rc = cupti_convert_dropped(c, dropped, "CUPTI had no buffer space")) ||
	    (rc = age_pending(c)))
		return rc;
	return report_losses(c);
}

/* "cupti.ignored": "36:12 39:40", kinds skipped and how many. */
static int
write_ignored(struct cupti_convert *c)
{
	char buf[CUPTI_CONVERT_KINDS * 24] = "";
	size_t n = 0;
	if (!c->st.ignored)
		return TK_OK;
	for (unsigned k = 0; k < CUPTI_CONVERT_KINDS; k++) {
		switch (k) {
		case CUPTI_ACTIVITY_KIND_KERNEL: case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		case CUPTI_ACTIVITY_KIND_MEMCPY: case CUPTI_ACTIVITY_KIND_MEMCPY2:
		case CUPTI_ACTIVITY_KIND_MEMSET: case CUPTI_ACTIVITY_KIND_MEMORY2:
		case CUPTI_ACTIVITY_KIND_MEMORY: case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER: case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
		case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: case CUPTI_ACTIVITY_KIND_OVERHEAD:
		case CUPTI_ACTIVITY_KIND_DEVICE: case CUPTI_ACTIVITY_KIND_CONTEXT:
		case CUPTI_ACTIVITY_KIND_STREAM:
			continue;
		}
		if (c->st.by_kind[k] && n < sizeof(buf))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%u:%" PRIu64,
			                      n ? " " : "",
			                      k == CUPTI_CONVERT_KINDS - 1 ? ">=" : "", k,
			                      c->st.by_kind[k]);
	}
	if (tk_writer_meta(c->w, "cupti.ignored", buf) != TK_OK)
		return writer_failed(c) ? writer_error(c) : TK_OK;
	return TK_OK;
}

int
cupti_convert_finish(struct cupti_convert *c)
{
	if (!c)
		return TK_EINVAL;
	int rc = TK_OK;
	while (c->npending && rc == TK_OK)
		rc = flush_pending(c, c->npending - 1, 0);
	if (rc == TK_OK)
		rc = report_losses(c);
	if (rc == TK_OK)
		rc = write_ignored(c);
	return rc;
}

/* ---- life cycle ------------------------------------------------------------------ */

struct cupti_convert *
cupti_convert_new(struct tk_writer *w, const struct cupti_convert_host *host)
{
	if (!w || !host || !host->process_track)
		return NULL;
	struct cupti_convert *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->w = w;
	c->host = *host;
	if (!c->host.next_record)
		c->host.next_record = cuptiActivityGetNextRecord;
	if (!c->host.callback_name)
		c->host.callback_name = cuptiGetCallbackName;
	if (!c->host.result_string)
		c->host.result_string = cuptiGetResultString;
	for (unsigned k = 0; k <= TK_KIND_MAX; k++)
		c->ev[k].kind = k;
	c->corr = calloc(CORR_SLOTS, sizeof(*c->corr));
	c->pending = calloc(PENDING_MAX, sizeof(*c->pending));
	if (!c->corr || !c->pending) {
		cupti_convert_free(c);
		return NULL;
	}
	return c;
}

static void
forget_names(struct cupti_convert *c)
{
	for (uint32_t i = 0; i < c->nknames; i++)
		free(c->knames[i].copy);
	c->nknames = 0;
	map_clear(&c->kernel_map);
	for (int i = 0; i < 2; i++) {
		free(c->api_names[i]);
		c->api_names[i] = NULL;
	}
	memset(c->memcpy_names, 0, sizeof(c->memcpy_names));
	memset(c->memset_names, 0, sizeof(c->memset_names));
	memset(c->memory_names, 0, sizeof(c->memory_names));
	memset(c->sync_names, 0, sizeof(c->sync_names));
	memset(c->overhead_names, 0, sizeof(c->overhead_names));
	c->internal_launch_name = 0;
}

void
cupti_convert_reset(struct cupti_convert *c)
{
	if (!c)
		return;
	forget_names(c);
	c->process = 0;
	map_clear(&c->threads);
	c->last_thread = 0;
	map_clear(&c->streams);
	c->last_stream = 0;
	for (uint32_t i = 0; i < c->ndevices; i++)
		c->devices[i].tk_id = c->devices[i].counter = 0;
	memset(c->corr, 0, CORR_SLOTS * sizeof(*c->corr));
	c->npending = 0; /* their tracks belonged to the old scope */
	/* early streams stay: they wait for a context, not for a track */
}

void
cupti_convert_set_writer(struct cupti_convert *c, struct tk_writer *w)
{
	if (!c || !w)
		return;
	cupti_convert_reset(c);
	c->w = w;
}

void
cupti_convert_free(struct cupti_convert *c)
{
	if (!c)
		return;
	forget_names(c);
	free(c->knames);
	free(c->kernel_map.slots);
	free(c->threads.slots);
	free(c->streams.slots);
	for (uint32_t i = 0; i < c->ndevices; i++)
		free((void *)(uintptr_t)c->devices[i].def.name);
	free(c->devices);
	free(c->device_map.slots);
	free(c->contexts);
	free(c->context_map.slots);
	free(c->corr);
	free(c->pending);
	free(c->early);
	free(c);
}

const struct cupti_convert_stats *
cupti_convert_stats(const struct cupti_convert *c)
{
	return &c->st;
}

int
cupti_convert_device_memory(const struct cupti_convert *c, uint32_t device,
                            int64_t *in_use, int64_t *peak)
{
	const uint32_t *idx = map_get(&c->device_map, device, 0);
	if (!idx)
		return -1;
	if (in_use)
		*in_use = c->devices[*idx].in_use;
	if (peak)
		*peak = c->devices[*idx].peak;
	return 0;
}

const char *
cupti_convert_error(const struct cupti_convert *c)
{
	return c->err;
}

int
cupti_convert_check_version(char *msg, size_t len)
{
	uint32_t v = 0;
	if (!cuptiGetVersion) {
		snprintf(msg, len, "libcupti is not linked");
		return -1;
	}
	CUptiResult st = cuptiGetVersion(&v);
	if (st != CUPTI_SUCCESS) {
		snprintf(msg, len, "cuptiGetVersion failed (CUPTI error %d)", (int)st);
		return -1;
	}
	return cupti_convert_check_api_version(v, msg, len);
}

int
cupti_convert_check_api_version(uint32_t v, char *msg, size_t len)
{
	/* xxyyzz: the same toolkit major and minor write the same layouts */
	if (v / 100 != CUPTI_API_VERSION / 100) {
		snprintf(msg, len, "libcupti API version %" PRIu32 ", built for %d: "
		         "its records would be misread", v, CUPTI_API_VERSION);
		return -1;
	}
	if (len)
		msg[0] = 0;
	return 0;
}
