/* SPDX-License-Identifier: MIT */
/*
 * GPU profiler conventions to tracekit kinds: the PyTorch profiler
 * (Kineto, both the 2021 dialect with capitalised categories and the
 * 2022+ one) and trace-to-chrome, which writes the same categories with
 * a few more args so that its output comes back whole.
 *
 *   kernel, Kernel              kernel on the stream in args (device,
 *                               stream), grid, block, registers, memory
 *   gpu_memcpy, Memcpy          memcpy; kinds from "Memcpy HtoD (Pageable
 *                               -> Device)" or from args
 *   gpu_memset, Memset          memset
 *   cuda_runtime, Runtime       api (runtime), correlation, cbid
 *   cuda_driver                 api (driver)
 *   cuda_sync                   sync (event, stream wait, stream, device)
 *   overhead                    overhead
 *   gpu_user_annotation         range on the stream
 *   [memory] instants           memory (alloc/free) and counters
 *                               "Total Allocated", "Total Reserved"
 *   process, run, cuda_memory,  trace-to-chrome's own: process, run,
 *   dropped                     memory and dropped events
 *
 * Args that became attributes leave args; values derived from the rest
 * (memory bandwidth, blocks and warps per SM) are not stored, tools
 * compute them.  Everything else stays in args.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "import.h"
#include "common/util.h"

/* ---- args ------------------------------------------------------------------ */

/* Take args[key] as an unsigned number (integer, numeric string, or an
 * integral real); 1 if found, and it leaves args. */
static int
take_u64(struct imp_x *x, const char *key, uint64_t *out)
{
	json_t *v = x->args ? json_object_get(x->args, key) : NULL;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		*out = (uint64_t)json_integer_value(v);
	} else if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d >= 0 && d < 1.8e19 && d == floor(d)))
			return 0;
		*out = (uint64_t)d;
	} else if (json_is_string(v)) {
		/* AMD traces write "stream": "0x0"; numbers past 2^63 come
		 * back from the parser as strings */
		if (imp_parse_u64(json_string_value(v), json_string_length(v), out) < 0)
			return 0;
	} else {
		return 0;
	}
	json_object_del(x->args, key);
	return 1;
}

static int
take_i64(struct imp_x *x, const char *key, int64_t *out)
{
	json_t *v = x->args ? json_object_get(x->args, key) : NULL;
	if (!json_is_integer(v))
		return 0;
	*out = json_integer_value(v);
	json_object_del(x->args, key);
	return 1;
}

static int
take_u32(struct imp_x *x, const char *key, uint32_t *out)
{
	json_t *v = x->args ? json_object_get(x->args, key) : NULL;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > UINT32_MAX)
		return 0;
	*out = (uint32_t)json_integer_value(v);
	json_object_del(x->args, key);
	return 1;
}

/* A string arg, borrowed: valid while the event is. */
static const char *
get_str(struct imp_x *x, const char *key)
{
	json_t *v = x->args ? json_object_get(x->args, key) : NULL;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void
drop(struct imp_x *x, const char *key)
{
	if (x->args)
		json_object_del(x->args, key);
}

/* Take a string arg: a reference the caller drops after imp_emit(). */
static json_t *
take_str(struct imp_x *x, const char *key, const char **out)
{
	json_t *v = x->args ? json_object_get(x->args, key) : NULL;
	if (!json_is_string(v))
		return NULL;
	json_incref(v);
	*out = json_string_value(v);
	json_object_del(x->args, key);
	return v;
}

/* [x, y, z] (missing entries are 1). */
static int
take_dims(struct imp_x *x, const char *key, uint32_t d[3])
{
	json_t *v = x->args ? json_object_get(x->args, key) : NULL;
	if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > 3)
		return 0;
	uint32_t t[3] = { 1, 1, 1 };
	for (size_t i = 0; i < json_array_size(v); i++) {
		json_t *e = json_array_get(v, i);
		if (!json_is_integer(e) || json_integer_value(e) < 0 ||
		    json_integer_value(e) > UINT32_MAX)
			return 0;
		t[i] = (uint32_t)json_integer_value(e);
	}
	memcpy(d, t, sizeof(t));
	json_object_del(x->args, key);
	return 1;
}

/* Derived values are recomputed by tools: not stored, but counted. */
static const char *const derived_keys[IMP_DERIVED] = {
	"memory bandwidth (GB/s)", "blocks per SM", "warps per SM",
	"External id",
};

static void
drop_derived(struct imp *im, struct imp_x *x, int which)
{
	if (x->args && json_object_del(x->args, derived_keys[which]) == 0)
		im->derived[which]++;
}

void
imp_kineto_finish(struct imp *im)
{
	for (int i = 0; i < IMP_DERIVED; i++) {
		char what[128];
		snprintf(what, sizeof(what), i == 3
		         ? "args \"%s\" not stored (equal to the correlation id)"
		         : "args \"%s\" not stored (tools derive it)", derived_keys[i]);
		imp_summary_note(im->sum, what, im->derived[i]);
	}
}

/* The correlation id.  Older Kineto gives GPU work and its API call an
 * "External id" equal to it: that one is not stored twice. */
static void
take_correlation(struct imp *im, struct imp_x *x, uint64_t *corr)
{
	if (!take_u64(x, "correlation", corr) || !x->args)
		return;
	json_t *ext = json_object_get(x->args, "External id");
	if (json_is_integer(ext) && (uint64_t)json_integer_value(ext) == *corr)
		drop_derived(im, x, 3);
}

/* ---- names of kinds --------------------------------------------------------- */

static unsigned
copy_kind(const char *s, size_t n)
{
	for (unsigned k = 1; k <= TK_COPY_PTOP; k++) {
		const char *name = tk_copy_kind_name(k);
		if (strlen(name) == n && strncmp(name, s, n) == 0)
			return k;
	}
	return TK_COPY_UNKNOWN;
}

/* "Pageable", "Device", "Device Static" (Kineto), "DeviceStatic" (ours). */
static unsigned
mem_kind(const char *s, size_t n)
{
	char b[32];
	size_t m = 0;
	for (size_t i = 0; i < n && m + 1 < sizeof(b); i++)
		if (s[i] != ' ')
			b[m++] = s[i];
	b[m] = 0;
	for (unsigned k = 1; k <= TK_MEM_MANAGED_STATIC; k++)
		if (strcasecmp(tk_mem_kind_name(k), b) == 0)
			return k;
	return TK_MEM_UNKNOWN;
}

/* "Memcpy HtoD (Pageable -> Device)": the copy kind and both memories. */
void
imp_memcpy_name(const char *name, struct tk_memcpy_attrs *m)
{
	const char *p = strchr(name, ' ');
	if (!p)
		return;
	p++;
	size_t n = strcspn(p, " ");
	m->copy_kind = copy_kind(p, n);
	const char *o = strchr(p, '(');
	const char *arrow = o ? strstr(o, " -> ") : NULL;
	const char *c = arrow ? strchr(arrow, ')') : NULL;
	if (!c)
		return;
	m->src_kind = mem_kind(o + 1, (size_t)(arrow - o - 1));
	m->dst_kind = mem_kind(arrow + 4, (size_t)(c - arrow - 4));
}

/* "Memset (Device)". */
unsigned
imp_memset_kind(const char *name)
{
	const char *o = strchr(name, '(');
	const char *c = o ? strchr(o, ')') : NULL;
	return c ? mem_kind(o + 1, (size_t)(c - o - 1)) : TK_MEM_UNKNOWN;
}

static unsigned
sync_type(const char *s)
{
	static const struct {
		const char *name;
		unsigned type;
	} names[] = {
		{ "Event Sync", TK_SYNC_EVENT },
		{ "Stream Wait Event", TK_SYNC_STREAM_WAIT },
		{ "Stream Sync", TK_SYNC_STREAM },
		{ "Context Sync", TK_SYNC_CONTEXT },
	};
	if (!s)
		return TK_SYNC_UNKNOWN;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, s) == 0)
			return names[i].type;
	for (unsigned t = 1; t <= TK_SYNC_CONTEXT; t++)
		if (strcmp(tk_sync_type_name(t), s) == 0)
			return t;
	return TK_SYNC_UNKNOWN;
}

/* ---- placement ----------------------------------------------------------------- */

/* "stream 7" (older Kineto's tid) -> 7. */
static int
stream_of_tid(const struct imp_id *tid, uint64_t *stream)
{
	if (!tid->str)
		return *stream = (uint64_t)tid->v, 1;
	if (strncmp(tid->str, "stream ", 7) == 0)
		return imp_parse_u64(tid->str + 7, strcspn(tid->str + 7, " "), stream) == 0;
	return 0;
}

/* The stream track of GPU work: device and stream from args (Kineto
 * and trace-to-chrome write both), else from the lane it is on. */
static uint32_t
gpu_track(struct imp *im, struct imp_x *x)
{
	uint64_t dev, stream = 0, ctx = 0;
	int has_dev = take_u64(x, "device", &dev);
	int has_stream = take_u64(x, "stream", &stream);
	take_u64(x, "context", &ctx);
	if (!has_dev) {
		int64_t lane = imp_lane_device(im->tracks, &x->pid);
		if (lane >= 0) {
			dev = (uint64_t)lane;
		} else if (!x->pid.str && x->pid.v >= 0 && x->pid.v < 4096) {
			dev = (uint64_t)x->pid.v;  /* Kineto: pid = device */
		} else {
			dev = 0;
			imp_summary_note(im->sum, "GPU work on an unknown device (device 0 assumed)", 1);
		}
	}
	if (dev > UINT32_MAX)
		dev = UINT32_MAX;
	if (!has_stream && !stream_of_tid(&x->tid, &stream))
		stream = 0;
	return imp_stream(im->tracks, (uint32_t)dev, stream, ctx, &x->pid, &x->tid);
}

/* ---- kinds ----------------------------------------------------------------------- */

static int
kernel(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	struct tk_kernel_attrs *k = &ev->u.kernel;
	ev->kind = TK_KERNEL;
	ev->track = gpu_track(im, x);
	take_correlation(im, x, &k->correlation);
	take_u32(x, "registers per thread", &k->registers);
	uint32_t total = 0;
	int has_static = take_u32(x, "static shared memory", &k->static_smem);
	int has_dynamic = take_u32(x, "dynamic shared memory", &k->dynamic_smem);
	if (take_u32(x, "shared memory", &total) && !has_static && !has_dynamic)
		k->static_smem = total;  /* Kineto gives only the sum */
	take_dims(x, "grid", k->grid);
	take_dims(x, "block", k->block);
	take_dims(x, "cluster", k->cluster);
	take_u32(x, "graph id", &k->graph_id);
	take_u64(x, "graph node id", &k->graph_node);
	k->mangled = "";
	json_t *ref = take_str(x, "mangled name", &k->mangled);
	drop_derived(im, x, 1);
	drop_derived(im, x, 2);
	int rc = imp_emit(im, ev, x);
	json_decref(ref);
	return rc;
}

/* The "async" arg of a copy or a memset (trace-to-chrome writes it; the
 * PyTorch profiler does not) into TK_FLAG_ASYNC. */
static void
take_async(struct imp_x *x, uint32_t *flags)
{
	json_t *a = x->args ? json_object_get(x->args, "async") : NULL;
	if (json_is_boolean(a)) {
		if (json_is_true(a))
			*flags |= TK_FLAG_ASYNC;
		drop(x, "async");
	}
}

static int
gpu_memcpy(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	struct tk_memcpy_attrs *m = &ev->u.memcpy;
	ev->kind = TK_MEMCPY;
	ev->track = gpu_track(im, x);
	take_correlation(im, x, &m->correlation);
	take_u64(x, "bytes", &m->bytes);
	imp_memcpy_name(x->name, m);
	const char *s;
	if ((s = get_str(x, "copy kind")) || (s = get_str(x, "kind"))) {
		unsigned k = copy_kind(s, strlen(s));
		if (k) {
			m->copy_kind = k;
			drop(x, get_str(x, "copy kind") ? "copy kind" : "kind");
		}
	}
	if ((s = get_str(x, "src kind"))) {
		m->src_kind = mem_kind(s, strlen(s));
		drop(x, "src kind");
	}
	if ((s = get_str(x, "dst kind"))) {
		m->dst_kind = mem_kind(s, strlen(s));
		drop(x, "dst kind");
	}
	take_u32(x, "src device", &m->src_device);
	take_u32(x, "dst device", &m->dst_device);
	take_async(x, &m->flags);
	drop_derived(im, x, 0);
	return imp_emit(im, ev, x);
}

static int
gpu_memset(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	struct tk_memset_attrs *m = &ev->u.memset;
	ev->kind = TK_MEMSET;
	ev->track = gpu_track(im, x);
	take_correlation(im, x, &m->correlation);
	take_u64(x, "bytes", &m->bytes);
	take_u32(x, "value", &m->value);
	m->mem_kind = imp_memset_kind(x->name);
	const char *s = get_str(x, "memory kind");
	if (s) {
		m->mem_kind = mem_kind(s, strlen(s));
		drop(x, "memory kind");
	}
	take_async(x, &m->flags);
	drop_derived(im, x, 0);
	return imp_emit(im, ev, x);
}

static int
api(struct imp *im, struct imp_x *x, struct tk_event *ev, unsigned domain)
{
	ev->kind = TK_API;
	ev->track = imp_x_track(im, x);
	imp_cpu_process(im->tracks, &x->pid);
	ev->u.api.domain = domain;
	take_correlation(im, x, &ev->u.api.correlation);
	take_u32(x, "cbid", &ev->u.api.cbid);
	int64_t r;
	if (take_i64(x, "result", &r))
		ev->u.api.result = (int32_t)r;
	return imp_emit(im, ev, x);
}

static int
sync_event(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	ev->kind = TK_SYNC;
	const char *kind = get_str(x, "cuda_sync_kind");
	const char *ours = get_str(x, "sync type");
	ev->u.sync.type = sync_type(ours ? ours : kind ? kind : x->name);
	if (ours)
		drop(x, "sync type");
	else if (kind && ev->u.sync.type)
		drop(x, "cuda_sync_kind");
	take_correlation(im, x, &ev->u.sync.correlation);
	if (x->args && (json_object_get(x->args, "stream") ||
	                json_object_get(x->args, "device")))
		ev->track = gpu_track(im, x);
	else
		ev->track = imp_x_track(im, x);
	return imp_emit(im, ev, x);
}

static double
num(json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : 0;
}

/* trace-to-chrome's exit args. */
static void
exit_args(struct imp_x *x, uint32_t *how, int32_t *code, uint32_t *sig)
{
	int64_t v;
	uint32_t s;
	const char *e = get_str(x, "exit");
	if (take_i64(x, "exit code", &v)) {
		*how = TK_EXIT_NORMAL;
		*code = (int32_t)v;
	} else if (take_u32(x, "signal", &s)) {
		*how = TK_EXIT_SIGNAL;
		*sig = s;
	} else if (e && strcmp(e, "unknown") == 0) {
		*how = TK_EXIT_UNKNOWN;
		drop(x, "exit");
	}
}

static int
process_event(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	struct tk_process_attrs *p = &ev->u.process;
	ev->kind = TK_PROCESS;
	ev->track = imp_process(im->tracks, &x->pid);
	exit_args(x, &p->exit, &p->exit_code, &p->signal);
	static const char *const ms[] = { "user CPU (ms)", "system CPU (ms)" };
	int64_t *t[] = { &p->utime, &p->stime };
	for (int i = 0; i < 2; i++) {
		json_t *v = json_object_get(x->args, ms[i]);
		double ns = num(v) * 1e6;
		if (json_is_number(v) && ns > -9.2e18 && ns < 9.2e18) {
			*t[i] = llround(ns);
			drop(x, ms[i]);
		}
	}
	take_u64(x, "max RSS (bytes)", &p->max_rss);
	take_u64(x, "minor faults", &p->minflt);
	take_u64(x, "major faults", &p->majflt);
	take_u64(x, "voluntary context switches", &p->nvcsw);
	take_u64(x, "involuntary context switches", &p->nivcsw);
	return imp_emit(im, ev, x);
}

static int
run_event(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	ev->kind = TK_RUN;
	ev->track = imp_process(im->tracks, &x->pid);
	take_u32(x, "run", &ev->u.run.index);
	exit_args(x, &ev->u.run.exit, &ev->u.run.exit_code, &ev->u.run.signal);
	return imp_emit(im, ev, x);
}

/* Kineto's allocator events: the allocation itself, and the totals as
 * counters of the device (or of the process, for CPU memory). */
static int
kineto_memory(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	json_t *bytes = json_object_get(x->args, "Bytes");
	if (!json_is_integer(bytes))
		return 0;
	int64_t b = json_integer_value(bytes);
	json_t *type = json_object_get(x->args, "Device Type");
	json_t *devid = json_object_get(x->args, "Device Id");
	int is_gpu = json_is_integer(type) && json_integer_value(type) == 1;
	uint32_t device = 0, process = imp_process(im->tracks, &x->pid);
	if (is_gpu && json_is_integer(devid) && json_integer_value(devid) >= 0 &&
	    json_integer_value(devid) <= UINT32_MAX)
		device = imp_device(im->tracks, (uint32_t)json_integer_value(devid));
	static const char *const totals[] = { "Total Allocated", "Total Reserved" };
	for (int i = 0; i < 2; i++) {
		json_t *v = json_object_get(x->args, totals[i]);
		if (!json_is_number(v))
			continue;
		struct tk_event c = { 0 };
		c.kind = TK_COUNTER;
		c.ts = x->ts;
		c.name = totals[i];    /* says which, in listings of events */
		c.track = imp_counter(im->tracks, totals[i], "bytes",
		                      device ? 0 : process, device);
		/* a total holds until it changes: samples that repeat it are
		 * not written */
		imp_counter_skip_repeats(im->tracks, c.track);
		c.u.counter.value = json_number_value(v);
		struct imp_x cx = *x;
		cx.args = NULL;
		cx.more = 1;
		if (imp_emit(im, &c, &cx) < 0)
			return -1;
		drop(x, totals[i]);
	}
	struct tk_memory_attrs *m = &ev->u.memory;
	ev->kind = TK_MEMORY;
	ev->track = imp_x_track(im, x);
	m->op = b < 0 ? TK_MEM_FREE : TK_MEM_ALLOC;
	m->bytes = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
	m->mem_kind = is_gpu ? TK_MEM_DEVICE
	            : json_is_integer(type) && json_integer_value(type) == 0
	            ? TK_MEM_PAGEABLE : TK_MEM_UNKNOWN;
	drop(x, "Bytes");
	if (m->mem_kind != TK_MEM_UNKNOWN)
		drop(x, "Device Type");  /* the memory kind says it */
	take_u64(x, "Addr", &m->address);
	return imp_emit(im, ev, x) < 0 ? -1 : 1;
}

/* trace-to-chrome's memory instants. */
static int
memory_event(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	const char *op = get_str(x, "operation");
	if (!op)
		return 0;
	struct tk_memory_attrs *m = &ev->u.memory;
	ev->kind = TK_MEMORY;
	ev->track = imp_x_track(im, x);
	m->op = strcmp(op, "free") == 0 ? TK_MEM_FREE : TK_MEM_ALLOC;
	/* "alloc"/"free" were the names given to unnamed events */
	if (strcmp(x->name, op) == 0)
		ev->name = "";
	drop(x, "operation");  /* op is freed with it */
	take_u64(x, "bytes", &m->bytes);
	take_u64(x, "address", &m->address);
	take_correlation(im, x, &m->correlation);
	const char *k = get_str(x, "memory kind");
	if (k) {
		m->mem_kind = mem_kind(k, strlen(k));
		drop(x, "memory kind");
	}
	return imp_emit(im, ev, x) < 0 ? -1 : 1;
}

static int
dropped_event(struct imp *im, struct imp_x *x, struct tk_event *ev)
{
	uint64_t n;
	if (!take_u64(x, "count", &n))
		return 0;
	ev->kind = TK_DROPPED;
	ev->track = imp_x_track(im, x);
	ev->u.dropped.count = n;
	ev->u.dropped.reason = "";
	json_t *ref = take_str(x, "reason", &ev->u.dropped.reason);
	if (strcmp(x->name, "dropped events") == 0)
		ev->name = "";
	int rc = imp_emit(im, ev, x);
	json_decref(ref);
	return rc < 0 ? -1 : 1;
}

static int
is(const char *cat, const char *a, const char *b)
{
	return strcmp(cat, a) == 0 || (b && strcmp(cat, b) == 0);
}

int
imp_kineto(struct imp *im, struct imp_x *x)
{
	const char *cat = x->cat;
	struct tk_event ev = { 0 };
	ev.ts = x->ts;
	ev.name = x->name;
	if (x->ph != 'X') {
		if (!x->args)
			return 0;
		if (strcmp(x->name, "[memory]") == 0)
			return kineto_memory(im, x, &ev);
		if (strcmp(cat, "cuda_memory") == 0)
			return memory_event(im, x, &ev);
		if (strcmp(cat, "dropped") == 0) {
			/* its global scope was only for viewers */
			if (x->scope == 'g')
				drop(x, "chrome.s");
			return dropped_event(im, x, &ev);
		}
		return 0;
	}
	ev.dur = x->dur;
	int rc;
	if (is(cat, "kernel", "Kernel"))
		rc = kernel(im, x, &ev);
	else if (is(cat, "gpu_memcpy", "Memcpy"))
		rc = gpu_memcpy(im, x, &ev);
	else if (is(cat, "gpu_memset", "Memset"))
		rc = gpu_memset(im, x, &ev);
	else if (is(cat, "cuda_runtime", "Runtime"))
		rc = api(im, x, &ev, TK_API_RUNTIME);
	else if (is(cat, "cuda_driver", "Driver"))
		rc = api(im, x, &ev, TK_API_DRIVER);
	else if (is(cat, "cuda_api", NULL))
		rc = api(im, x, &ev, TK_API_OTHER);
	else if (is(cat, "cuda_sync", NULL))
		rc = sync_event(im, x, &ev);
	else if (is(cat, "overhead", "Overhead")) {
		ev.kind = TK_OVERHEAD;
		ev.track = imp_x_track(im, x);
		take_u32(x, "overhead kind", &ev.u.overhead.type);
		rc = imp_emit(im, &ev, x);
	} else if (is(cat, "gpu_user_annotation", NULL)) {
		ev.kind = TK_RANGE;
		ev.track = gpu_track(im, x);
		ev.u.range.domain = cat;
		rc = imp_emit(im, &ev, x);
	} else if (is(cat, "process", NULL) && x->args &&
	           json_object_get(x->args, "max RSS (bytes)")) {
		rc = process_event(im, x, &ev);
	} else if (is(cat, "run", NULL) && x->args && json_object_get(x->args, "run")) {
		rc = run_event(im, x, &ev);
	} else {
		return 0;
	}
	return rc < 0 ? -1 : 1;
}
