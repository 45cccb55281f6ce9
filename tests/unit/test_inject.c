/* SPDX-License-Identifier: MIT */
/*
 * The injection library inside this process: real NVTX calls (the
 * NVTX v3 loader, attached through its static-injection hook) recorded
 * into a spool, flushed, and read back with the library's reader.
 * Checked: names (copied from stack buffers), nesting, payloads,
 * colours, categories, domains and registered strings, thread names,
 * start/end ranges across threads, marks, watermarks and open ranges,
 * full buffers (every record dropped is counted), the capture
 * schedule, the recording window, a program that closes the spool's
 * descriptor, fork, and the last flush at exit; and that what the
 * status page says was produced is what the spool holds.
 */
#include <stdio.h>

#ifndef TK_HAVE_NVTX
int
main(void)
{
	printf("ok 1 # SKIP no NVTX headers under CUDA_HOME: the injection library "
	       "is not built\n1..1\n");
	return 0;
}
#else

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

#include "helpers.h"
#include "tap.h"
#include "inject.h"
#include "support.h"
#include "tbuf.h"

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

static char spool[256];

/* ---- reading a spool back ------------------------------------------------------- */

struct ev {
	unsigned kind;
	int64_t ts, dur;
	char name[64];
	int64_t tid;
	char thread[64];
	char domain[32];
	uint32_t category, color, payload_type;
	union tk_value payload;
	uint64_t id;
	int64_t end_tid;
	int unfinished;
	uint64_t count;
};

struct spool_read {
	struct ev *ev;
	size_t n;
	int ended;            /* closed with an end marker */
	unsigned scopes;
	int64_t last_wm;
	uint64_t events;
};

static int64_t
tid_of(const struct tk_reader *r, uint32_t track)
{
	const struct tk_track *t = tk_reader_track(r, track);
	return t && t->type == TK_TRACK_THREAD ? t->u.thread.tid : -1;
}

static void
read_file(const char *path, struct spool_read *s)
{
	memset(s, 0, sizeof(*s));
	struct tk_reader *r = tk_reader_new();
	if (tk_reader_open_path(r, path) != TK_OK) {
		tk_reader_free(r);
		return;
	}
	const struct tk_event *e;
	size_t cap = 0;
	int rc;
	while ((rc = tk_reader_next_event(r, &e)) == TK_OK) {
		if (s->n == cap) {
			cap = cap ? cap * 2 : 256;
			s->ev = realloc(s->ev, cap * sizeof(*s->ev));
		}
		struct ev *x = &s->ev[s->n++];
		memset(x, 0, sizeof(*x));
		x->kind = e->kind;
		x->ts = e->ts;
		x->dur = e->dur;
		snprintf(x->name, sizeof(x->name), "%s", e->name);
		if (e->trk->type == TK_TRACK_THREAD) {
			x->tid = e->trk->u.thread.tid;
			snprintf(x->thread, sizeof(x->thread), "%s", e->trk->u.thread.name);
		}
		if (e->kind == TK_RANGE || e->kind == TK_ASYNC_RANGE || e->kind == TK_MARK) {
			snprintf(x->domain, sizeof(x->domain), "%s", e->u.range.domain);
			x->category = e->u.range.category;
			x->color = e->u.range.color;
			x->payload_type = e->u.range.payload_type;
			x->payload = e->u.range.payload;
			x->id = e->u.range.id;
			x->end_tid = e->u.range.end_track
			             ? tid_of(r, e->u.range.end_track) : 0;
		}
		if (e->kind == TK_DROPPED)
			x->count = e->u.dropped.count;
		x->unfinished = e->args && strstr(e->args, "unfinished") != NULL;
		s->last_wm = tk_reader_chunk(r)->watermark;
	}
	s->ended = rc == TK_EOF;
	s->scopes = tk_reader_scope(r);
	s->events = s->n;
	tk_reader_free(r);
}

/* The spool of process `pid` (the latest, if it has several). */
static int
read_spool(long pid, struct spool_read *s)
{
	char path[1024];
	memset(s, 0, sizeof(*s));
	if (latest_spool(spool, pid, path, sizeof(path)) < 0)
		return -1;
	read_file(path, s);
	return 0;
}

static void
flush_and_read(struct spool_read *s)
{
	tki_flusher_round(0);
	read_spool(getpid(), s);
}

static size_t
count(const struct spool_read *s, unsigned kind, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == kind && (!name || !strcmp(s->ev[i].name, name)))
			n++;
	return n;
}

static const struct ev *
find(const struct spool_read *s, unsigned kind, const char *name, size_t nth)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == kind && !strcmp(s->ev[i].name, name) && nth-- == 0)
			return &s->ev[i];
	return NULL;
}

/* The one event named `name`, NULL unless there is exactly one. */
static const struct ev *
only(const struct spool_read *s, const char *name)
{
	const struct ev *e = NULL;
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->ev[i].name, name)) {
			if (e)
				return NULL;
			e = &s->ev[i];
		}
	return e;
}

static int
inside(const struct ev *in, const struct ev *out)
{
	return in && out && in->ts >= out->ts && in->ts + in->dur <= out->ts + out->dur;
}

static uint64_t
produced(void)
{
	return tki_status_produced(tki_status);
}

static int64_t
gettid_(void)
{
	return syscall(SYS_gettid);
}

/* ---- tests --------------------------------------------------------------------------- */

TEST(loads_and_records)
{
	CHECK_EQ_INT(nvtxRangePushA("outer"), 0);
	{
		char name[16];
		snprintf(name, sizeof(name), "inner.%d", 7);
		CHECK_EQ_INT(nvtxRangePushA(name), 1);
		memset(name, 'X', sizeof(name) - 1); /* the copy must not see it */
	}
	nvtxMarkA("tick");
	CHECK_EQ_INT(nvtxRangePop(), 1);
	CHECK_EQ_INT(nvtxRangePop(), 0);
	CHECK(nvtxRangePop() < 0); /* nothing left to pop */
	CHECK(tki_writer != NULL);

	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_RANGE, NULL), 2);
	CHECK_EQ_INT(count(&s, TK_MARK, "tick"), 1);
	const struct ev *o = find(&s, TK_RANGE, "outer", 0);
	const struct ev *i = find(&s, TK_RANGE, "inner.7", 0);
	const struct ev *m = find(&s, TK_MARK, "tick", 0);
	CHECK(inside(i, o));
	CHECK(m && i && m->ts >= i->ts && m->ts <= i->ts + i->dur);
	CHECK(o && o->tid == gettid_());
	CHECK(o && o->domain[0] == 0);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* Sources other than NVTX (lib/inject/source.c): tracks, a device, a
 * stream, a counter and strings defined through the library's own
 * functions, events written with them, counted as produced in the
 * status page, and refused (not counted) while recording is off or
 * when the writer refuses them. */
TEST(direct_sources_write_and_count)
{
	struct spool_read before;
	flush_and_read(&before);
	uint64_t produced0 = produced();
	uint32_t proc = tki_process_track(), thr = tki_thread_track(gettid_());
	CHECK(proc != 0 && thr != 0 && proc != thr);
	CHECK_EQ_INT(tki_process_track(), proc); /* defined once */
	struct tk_device dev = { .index = 3, .name = "Fake GPU", .sm_count = 7 };
	uint32_t dev_id = tki_device(&dev);
	CHECK(dev_id >= 1);
	struct tk_stream st = { .device = dev_id, .context = 1, .stream = 42 };
	uint32_t stream = tki_stream(&st); /* process 0: this process */
	struct tk_counter ctr = { .name = "fake memory", .unit = "bytes" };
	uint32_t counter = tki_counter(&ctr);
	CHECK(stream != 0 && counter != 0 && stream != counter);
	uint32_t kname = tki_string("direct_kernel");
	CHECK(kname != 0);

	struct tk_event ev[3];
	memset(ev, 0, sizeof(ev));
	int64_t t0 = tki_now();
	ev[0].kind = TK_KERNEL;
	ev[0].track = stream;
	ev[0].ts = t0;
	ev[0].dur = 1234;
	ev[0].name_id = kname;
	ev[0].u.kernel.grid[0] = 5;
	ev[0].u.kernel.block[0] = 128;
	ev[1].kind = TK_COUNTER;
	ev[1].track = counter;
	ev[1].ts = t0 + 10;
	ev[1].name = "";
	ev[1].u.counter.value = 4096.5;
	ev[2].kind = TK_MARK;
	ev[2].track = thr;
	ev[2].ts = t0 + 20;
	ev[2].name = "direct mark";
	CHECK_EQ_INT(tki_events(ev, 2), 2);
	CHECK_EQ_INT(tki_event(&ev[2]), 0);
	CHECK_EQ_INT(produced() - produced0, 3);

	/* recording off: refused, and not counted */
	atomic_store(&tki_on, 0);
	CHECK_EQ_INT(tki_events(ev, 3), 0);
	CHECK_EQ_INT(tki_event(&ev[2]), -1);
	atomic_store(&tki_on, 1);
	CHECK_EQ_INT(produced() - produced0, 3);
	/* an event the writer refuses (an unknown kind) stops the batch:
	 * what was written is counted, the rest is not */
	struct tk_event two[2] = { ev[2], ev[2] };
	two[1].kind = 250;
	CHECK_EQ_INT(tki_events(two, 2), 1);
	CHECK_EQ_INT(produced() - produced0, 4);

	/* read back: every field as written, on the tracks as defined */
	tki_flusher_round(0);
	char path[1024];
	CHECK(latest_spool(spool, getpid(), path, sizeof(path)) == 0);
	struct tk_reader *r = tk_reader_new();
	CHECK(tk_reader_open_path(r, path) == TK_OK);
	const struct tk_event *e;
	int kernels = 0, counters = 0, marks = 0;
	while (tk_reader_next_event(r, &e) == TK_OK) {
		if (e->kind == TK_KERNEL && !strcmp(e->name, "direct_kernel")) {
			kernels++;
			CHECK_EQ_INT(e->ts, t0);
			CHECK_EQ_INT(e->dur, 1234);
			CHECK_EQ_INT(e->u.kernel.grid[0], 5);
			CHECK_EQ_INT(e->u.kernel.block[0], 128);
			CHECK(e->trk->type == TK_TRACK_STREAM);
			CHECK_EQ_INT(e->trk->u.stream.stream, 42);
			const struct tk_device *d = tk_reader_device(r, e->trk->u.stream.device);
			CHECK(d && !strcmp(d->name, "Fake GPU") && d->index == 3 && d->sm_count == 7);
			const struct tk_track *p = tk_reader_track(r, e->trk->u.stream.process);
			CHECK(p && p->type == TK_TRACK_PROCESS && p->u.process.pid == getpid());
		} else if (e->kind == TK_COUNTER && e->trk->type == TK_TRACK_COUNTER &&
		           !strcmp(e->trk->u.counter.name, "fake memory")) {
			counters++;
			CHECK(e->u.counter.value == 4096.5);
			CHECK_STR(e->trk->u.counter.unit, "bytes");
		} else if (e->kind == TK_MARK && !strcmp(e->name, "direct mark")) {
			marks++;
			CHECK_EQ_INT(e->trk->u.thread.tid, gettid_());
		}
	}
	tk_reader_free(r);
	CHECK_EQ_INT(kernels, 1);
	CHECK_EQ_INT(counters, 1);
	CHECK_EQ_INT(marks, 2);
	free(before.ev);
}

TEST(attributes_domains_categories)
{
	nvtxNameCategoryA(3, "compute");
	nvtxDomainHandle_t d = nvtxDomainCreateA("net");
	CHECK(d == nvtxDomainCreateA("net"));
	nvtxDomainNameCategoryA(d, 4, "wire");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(d, "send");

	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = 3;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff112233;
	a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
	a.payload.iValue = -5;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "attrs";
	nvtxRangePushEx(&a);
	nvtxRangePop();

	a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
	a.payload.fValue = 0.5f;
	a.colorType = NVTX_COLOR_UNKNOWN;
	a.message.ascii = "float";
	nvtxMarkEx(&a);

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = 4;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = reg;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a.payload.ullValue = 1ull << 40;
	nvtxDomainRangePushEx(d, &a);
	/* a default-domain range inside: a separate stack */
	nvtxRangePushA("default.in.net");
	nvtxDomainRangePop(d);
	nvtxRangePop();

	nvtxMarkW(L"wide-\u00fc\u4e2d");

	struct spool_read s;
	flush_and_read(&s);
	const struct ev *e = find(&s, TK_RANGE, "attrs", 0);
	CHECK(e && e->category == 3 && e->color == 0xff112233);
	CHECK(e && e->payload_type == TK_PAYLOAD_INT && e->payload.i == -5);
	e = find(&s, TK_MARK, "float", 0);
	CHECK(e && e->payload_type == TK_PAYLOAD_DOUBLE && e->payload.d == 0.5);
	CHECK(e && e->color == 0);
	e = find(&s, TK_RANGE, "send", 0);
	CHECK(e && !strcmp(e->domain, "net") && e->category == 4);
	CHECK(e && e->payload_type == TK_PAYLOAD_UINT && e->payload.u == 1ull << 40);
	/* the pops of two domains do not close each other's ranges */
	const struct ev *in = find(&s, TK_RANGE, "default.in.net", 0);
	CHECK(e && in && in->ts > e->ts && in->ts + in->dur > e->ts + e->dur);
	CHECK_EQ_INT(count(&s, TK_MARK, "wide-\xc3\xbc\xe4\xb8\xad"), 1);
	free(s.ev);

	/* the categories are in the spool's definitions */
	char path[1024];
	DIR *dir = opendir(spool);
	struct dirent *de;
	int compute = 0, wire = 0;
	while (dir && (de = readdir(dir))) {
		if (atol(de->d_name) != getpid() || !strstr(de->d_name, ".tkt"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, de->d_name);
		struct tk_reader *r = tk_reader_new();
		struct tk_record rec;
		if (tk_reader_open_path(r, path) == TK_OK)
			while (tk_reader_next(r, &rec) == TK_OK)
				if (rec.type == TK_REC_CATEGORY) {
					compute |= !strcmp(rec.u.category->name, "compute") &&
					           rec.u.category->category == 3 &&
					           !rec.u.category->domain[0];
					wire |= !strcmp(rec.u.category->name, "wire") &&
					        !strcmp(rec.u.category->domain, "net");
				}
		tk_reader_free(r);
	}
	if (dir)
		closedir(dir);
	CHECK(compute && wire);
}

/* The wide-character (W) entry points, the attribute variants not used
 * above (UTF-32 and registered messages from a W domain, 32-bit
 * unsigned payloads, an unknown message type, attributes of an older
 * and smaller struct, none at all), and category and thread names
 * given as wide strings. */
TEST(wide_calls_and_attribute_variants)
{
	nvtxDomainHandle_t d = nvtxDomainCreateW(L"w\u00e9dom");
	CHECK(d != NULL);
	nvtxDomainNameCategoryW(d, 7, L"w\u00e9cat");
	nvtxNameCategoryW(8, L"def\u00e9cat");
	nvtxNameOsThreadW((uint32_t)gettid_(), L"w\u00e9thread");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringW(d, L"reg\u00e9w");
	CHECK(reg != NULL);

	CHECK_EQ_INT(nvtxRangePushW(L"push\u00e9w"), 0);
	nvtxRangePop();
	nvtxRangeEnd(nvtxRangeStartW(L"start\u00e9w"));

	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = 7;
	a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
	a.message.unicode = L"uni\u00e9";
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
	a.payload.uiValue = 4000000000u;
	nvtxDomainMarkEx(d, &a);
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = reg;
	a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
	a.payload.llValue = -7;
	nvtxDomainRangeEnd(d, nvtxDomainRangeStartEx(d, &a));
	/* a message type this library does not know: no name, the rest kept */
	a.messageType = 99;
	a.category = 8;
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 2.25;
	nvtxRangeEnd(nvtxRangeStartEx(&a));
	/* an older, smaller struct: only the fields it has (here, none
	 * past the category) */
	memset(&a, 0, sizeof(a));
	a.version = 1;
	a.size = (uint16_t)offsetof(nvtxEventAttributes_t, colorType);
	a.category = 9;
	a.color = 0xff00ff00;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "not read";
	nvtxMarkEx(&a);

	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_RANGE, "push\xc3\xa9w"), 1);
	CHECK_EQ_INT(count(&s, TK_ASYNC_RANGE, "start\xc3\xa9w") +
	             count(&s, TK_RANGE, "start\xc3\xa9w"), 1);
	const struct ev *e = find(&s, TK_MARK, "uni\xc3\xa9", 0);
	CHECK(e && !strcmp(e->domain, "w\xc3\xa9" "dom") && e->category == 7);
	CHECK(e && e->payload_type == TK_PAYLOAD_UINT && e->payload.u == 4000000000u);
	CHECK(e && !strcmp(e->thread, "w\xc3\xa9thread"));
	e = NULL;
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(s.ev[i].name, "reg\xc3\xa9w"))
			e = &s.ev[i];
	CHECK(e && !strcmp(e->domain, "w\xc3\xa9" "dom"));
	CHECK(e && e->payload_type == TK_PAYLOAD_INT && e->payload.i == -7);
	/* the unknown message type: an unnamed range of category 8 */
	int unnamed = 0, old = 0;
	for (size_t i = 0; i < s.n; i++) {
		const struct ev *x = &s.ev[i];
		if (x->category == 8 && !x->name[0] && x->payload_type == TK_PAYLOAD_DOUBLE &&
		    x->payload.d == 2.25)
			unnamed++;
		if (x->kind == TK_MARK && x->category == 9) {
			old++;
			CHECK(!x->name[0] && x->color == 0 && x->payload_type == 0);
		}
	}
	CHECK_EQ_INT(unnamed, 1);
	CHECK_EQ_INT(old, 1);
	CHECK_EQ_INT(count(&s, TK_MARK, "not read"), 0);
	free(s.ev);

	/* both wide category names are defined, each in its domain */
	char path[1024];
	CHECK(latest_spool(spool, getpid(), path, sizeof(path)) == 0);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	int in_domain = 0, in_default = 0;
	if (tk_reader_open_path(r, path) == TK_OK)
		while (tk_reader_next(r, &rec) == TK_OK)
			if (rec.type == TK_REC_CATEGORY) {
				in_domain |= !strcmp(rec.u.category->name, "w\xc3\xa9" "cat") &&
				             rec.u.category->category == 7 &&
				             !strcmp(rec.u.category->domain, "w\xc3\xa9" "dom");
				in_default |= !strcmp(rec.u.category->name, "def\xc3\xa9" "cat") &&
				              rec.u.category->category == 8 &&
				              !rec.u.category->domain[0];
			}
	tk_reader_free(r);
	CHECK(in_domain && in_default);
}

/* Calls a program may make that record nothing of their own or are
 * unusual: wide strings past the BMP and code points UTF-8 cannot hold,
 * a domain created without a name, one destroyed and used after, a
 * resource, nvtxInitialize, a NULL string registered. */
TEST(odd_nvtx_calls)
{
	/* 'e', U+1F600, a lone surrogate, one past U+10FFFF */
	const wchar_t w[] = { L'e', (wchar_t)0x1f600, (wchar_t)0xd800,
	                      (wchar_t)0x110000, 0 };
	nvtxMarkW(w);
	nvtxDomainHandle_t unnamed = nvtxDomainCreateA(NULL);
	nvtxDomainHandle_t odd = nvtxDomainCreateA("odd");
	nvtxResourceAttributes_t ra;
	memset(&ra, 0, sizeof(ra));
	ra.version = NVTX_VERSION;
	ra.size = NVTX_RESOURCE_ATTRIB_STRUCT_SIZE;
	ra.identifierType = NVTX_RESOURCE_TYPE_GENERIC_POINTER;
	ra.identifier.pValue = &ra;
	ra.messageType = NVTX_MESSAGE_TYPE_ASCII;
	ra.message.ascii = "a resource";
	nvtxResourceHandle_t res = nvtxDomainResourceCreate(odd, &ra);
	CHECK(res != NULL);
	nvtxDomainResourceDestroy(res);
	nvtxStringHandle_t empty = nvtxDomainRegisterStringA(odd, NULL);
	CHECK(empty != NULL);
	nvtxDomainDestroy(odd);
	nvtxInitialize(NULL);

	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "in.unnamed.domain";
	nvtxDomainMarkEx(unnamed, &a);
	a.message.ascii = "after.destroy";
	nvtxDomainMarkEx(odd, &a);

	struct spool_read s;
	flush_and_read(&s);
	/* UTF-8 of U+1F600 is f0 9f 98 80; U+FFFD is ef bf bd */
	CHECK_EQ_INT(count(&s, TK_MARK, "e\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd"), 1);
	const struct ev *e = find(&s, TK_MARK, "in.unnamed.domain", 0);
	CHECK(e && !e->domain[0]);
	e = find(&s, TK_MARK, "after.destroy", 0);
	CHECK(e && !strcmp(e->domain, "odd"));
	CHECK_EQ_INT(count(&s, TK_MARK, "a resource"), 0);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* ---- NVTX instances the loader could hand us ------------------------------------
 * A stand-in for an NVTX instance's export tables (nvtxDetail/
 * nvtxTypes.h): none, too small, without the table function, a CORE
 * module it will not give, a CORE2 module with no table, an older CORE
 * table with fewer slots and one slot missing, version information
 * missing, too small or without its setter. */
static struct {
	const void *callbacks;            /* what get() answers */
	const void *version;
	int refuse_core;
	unsigned core_size;               /* slots the CORE table has */
	NvtxFunctionPointer fn[NVTX_CBID_CORE_SIZE];
	NvtxFunctionPointer *slots[NVTX_CBID_CORE_SIZE];
	uint32_t version_set;
	int version_calls;
} fake_nvtx;

static int NVTX_API
fake_module_table(NvtxCallbackModule module, NvtxFunctionTable *table,
                  unsigned *size)
{
	if (module == NVTX_CB_MODULE_CORE && !fake_nvtx.refuse_core) {
		*table = fake_nvtx.slots;
		*size = fake_nvtx.core_size;
		return 1;
	}
	if (module == NVTX_CB_MODULE_CORE2) { /* says yes, gives nothing */
		*table = NULL;
		*size = 0;
		return 1;
	}
	return 0;
}

static void NVTX_API
fake_set_version(uint32_t v)
{
	fake_nvtx.version_set = v;
	fake_nvtx.version_calls++;
}

static const void *NVTX_API
fake_get(uint32_t id)
{
	return id == NVTX_ETID_CALLBACKS ? fake_nvtx.callbacks
	       : id == NVTX_ETID_VERSIONINFO ? fake_nvtx.version : NULL;
}

/* Reset the stand-in: a full CORE table but for MarkA's slot. */
static void
fake_nvtx_reset(const void *callbacks, const void *version)
{
	memset(&fake_nvtx, 0, sizeof(fake_nvtx));
	fake_nvtx.callbacks = callbacks;
	fake_nvtx.version = version;
	fake_nvtx.core_size = NVTX_CBID_CORE_SIZE;
	for (int i = 0; i < NVTX_CBID_CORE_SIZE; i++)
		fake_nvtx.slots[i] = i == NVTX_CBID_CORE_MarkA ? NULL : &fake_nvtx.fn[i];
}

static int
fake_filled(void)
{
	int n = 0;
	for (int i = 0; i < NVTX_CBID_CORE_SIZE; i++)
		n += fake_nvtx.fn[i] != NULL;
	return n;
}

TEST(nvtx_export_tables_of_every_shape)
{
	NvtxExportTableCallbacks cb = { sizeof(cb), fake_module_table };
	NvtxExportTableCallbacks small = { sizeof(cb) - 1, fake_module_table };
	NvtxExportTableCallbacks no_fn = { sizeof(cb), NULL };
	NvtxExportTableVersionInfo vi = { sizeof(vi), NVTX_VERSION, 0, fake_set_version };
	NvtxExportTableVersionInfo vi_small = { sizeof(vi) - 1, NVTX_VERSION, 0,
	                                        fake_set_version };
	NvtxExportTableVersionInfo vi_none = { sizeof(vi), NVTX_VERSION, 0, NULL };

	/* refused: nothing installed */
	CHECK_EQ_INT(InitializeInjectionNvtx2(NULL), 0);
	const void *bad[] = { NULL, &small, &no_fn };
	for (int i = 0; i < 3; i++) {
		fake_nvtx_reset(bad[i], &vi);
		CHECK_EQ_INT(InitializeInjectionNvtx2(fake_get), 0);
		CHECK_EQ_INT(fake_filled(), 0);
		CHECK_EQ_INT(fake_nvtx.version_calls, 0);
	}
	fake_nvtx_reset(&cb, &vi);
	fake_nvtx.refuse_core = 1;
	CHECK_EQ_INT(InitializeInjectionNvtx2(fake_get), 0);
	CHECK_EQ_INT(fake_filled(), 0);

	/* an older CORE table of 5 slots (MarkEx .. RangeStartW, MarkA's
	 * missing): what fits is filled, nothing past it */
	fake_nvtx_reset(&cb, NULL);
	fake_nvtx.core_size = 5;
	CHECK_EQ_INT(InitializeInjectionNvtx2(fake_get), 1);
	CHECK(fake_nvtx.fn[NVTX_CBID_CORE_MarkEx] != NULL);
	CHECK(fake_nvtx.fn[NVTX_CBID_CORE_MarkW] != NULL);
	CHECK(fake_nvtx.fn[NVTX_CBID_CORE_RangeStartEx] != NULL);
	CHECK(fake_nvtx.fn[NVTX_CBID_CORE_MarkA] == NULL);
	CHECK_EQ_INT(fake_filled(), 3);
	/* and what was filled records */
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "through.fake.table";
	void (*mark_ex)(const nvtxEventAttributes_t *);
	memcpy(&mark_ex, &fake_nvtx.fn[NVTX_CBID_CORE_MarkEx], sizeof(mark_ex));
	mark_ex(&a);

	/* version information: set only through a whole table's setter */
	const void *versions[] = { &vi_small, &vi_none, &vi };
	for (int i = 0; i < 3; i++) {
		fake_nvtx_reset(&cb, versions[i]);
		CHECK_EQ_INT(InitializeInjectionNvtx2(fake_get), 1);
		CHECK_EQ_INT(fake_filled(), NVTX_CBID_CORE_SIZE - 2); /* not 0, MarkA */
		CHECK_EQ_INT(fake_nvtx.version_calls, i == 2);
	}
	CHECK_EQ_INT(fake_nvtx.version_set, NVTX_VERSION);

	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_MARK, "through.fake.table"), 1);
	free(s.ev);
}

/* Registered strings are one handle per text and domain; names given
 * as NULL, an empty domain name, renamed threads and CUDA objects. */
TEST(registry_handles_and_names)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("reg.dom");
	nvtxStringHandle_t h1 = nvtxDomainRegisterStringA(d, "same");
	CHECK(h1 != NULL);
	CHECK(nvtxDomainRegisterStringA(d, "same") == h1);
	CHECK(nvtxDomainRegisterStringW(d, L"same") == h1);
	nvtxStringHandle_t other_domain = nvtxDomainRegisterStringA(NULL, "same");
	nvtxStringHandle_t shorter = nvtxDomainRegisterStringA(d, "sam");
	nvtxStringHandle_t other_text = nvtxDomainRegisterStringA(d, "sane");
	CHECK(other_domain && other_domain != h1);
	CHECK(shorter && shorter != h1 && other_text && other_text != h1 &&
	      shorter != other_text);
	CHECK(tki_string_by_id(0) == NULL);
	CHECK(tki_string_by_id(1u << 30) == NULL);
	CHECK(tki_string_by_id(((struct tki_string *)(void *)h1)->id) ==
	      (struct tki_string *)(void *)h1);

	/* "" is the default domain, as NULL is */
	CHECK(nvtxDomainCreateA("") == nvtxDomainCreateA(NULL));
	CHECK(tki_domain_by_id(0) == tki_domain_default());
	CHECK(tki_domain_by_id(60000) == NULL);

	/* NULL names are ignored: the earlier name stays */
	int64_t tid = gettid_();
	nvtxNameOsThreadA((uint32_t)tid, "reg.first");
	nvtxNameOsThreadA((uint32_t)tid, NULL);
	char buf[64] = "";
	CHECK(tki_thread_name_get(tid, buf, sizeof(buf)) && !strcmp(buf, "reg.first"));
	nvtxMarkA("reg.named.first");
	tki_flusher_round(0);
	nvtxNameOsThreadA((uint32_t)tid, "reg.second");
	CHECK(tki_thread_name_get(tid, buf, sizeof(buf)) && !strcmp(buf, "reg.second"));
	nvtxNameCategoryA(41, NULL);
	nvtxNameCategoryA(42, "reg.cat");

	/* CUDA objects: named, renamed, each kind its own */
	tki_resource_name_set(TKI_RES_CU_STREAM, 0x1234, "stream.a");
	tki_resource_name_set(TKI_RES_CU_STREAM, 0x1234, "stream.b");
	tki_resource_name_set(TKI_RES_CU_EVENT, 0x1234, "event.a");
	tki_resource_name_set(TKI_RES_CU_EVENT, 0x9999, NULL);
	CHECK(tki_resource_name_get(TKI_RES_CU_STREAM, 0x1234, buf, sizeof(buf)) &&
	      !strcmp(buf, "stream.b"));
	CHECK(tki_resource_name_get(TKI_RES_CU_EVENT, 0x1234, buf, sizeof(buf)) &&
	      !strcmp(buf, "event.a"));
	CHECK(!tki_resource_name_get(TKI_RES_CU_EVENT, 0x9999, buf, sizeof(buf)));
	CHECK(!tki_resource_name_get(TKI_RES_CUDA_STREAM, 0x1234, buf, sizeof(buf)));

	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.category = 42;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = h1;
	nvtxDomainMarkEx(d, &a);
	nvtxDomainMarkEx(d, &a);
	a.message.registered = shorter;
	nvtxDomainMarkEx(d, &a);
	a.message.registered = NULL; /* no string: no name */
	a.category = 43;
	nvtxDomainMarkEx(d, &a);

	struct spool_read s;
	flush_and_read(&s);
	const struct ev *e = only(&s, "reg.named.first");
	CHECK(e && !strcmp(e->thread, "reg.first"));
	CHECK_EQ_INT(count(&s, TK_MARK, "same"), 2);
	CHECK_EQ_INT(count(&s, TK_MARK, "sam"), 1);
	e = find(&s, TK_MARK, "same", 1);
	CHECK(e && !strcmp(e->domain, "reg.dom") && e->category == 42);
	CHECK(e && !strcmp(e->thread, "reg.second"));
	int unnamed = 0;
	for (size_t i = 0; i < s.n; i++)
		unnamed += s.ev[i].category == 43 && !s.ev[i].name[0];
	CHECK_EQ_INT(unnamed, 1);
	free(s.ev);

	/* the categories defined: 42, not 41 */
	char path[1024];
	CHECK(latest_spool(spool, getpid(), path, sizeof(path)) == 0);
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	int c41 = 0, c42 = 0;
	if (tk_reader_open_path(r, path) == TK_OK)
		while (tk_reader_next(r, &rec) == TK_OK)
			if (rec.type == TK_REC_CATEGORY && !rec.u.category->domain[0]) {
				c41 += rec.u.category->category == 41;
				c42 += rec.u.category->category == 42 &&
				       !strcmp(rec.u.category->name, "reg.cat");
			}
	tk_reader_free(r);
	CHECK_EQ_INT(c41, 0);
	CHECK_EQ_INT(c42, 1);
}

/* NVTX calls given no attributes or no text, an attribute struct too
 * small to hold even a category, an end of no range or of one never
 * recorded, and push/pop nesting deeper than the levels whose flags
 * are kept (128): every range still comes out once, nested. */
TEST(null_attributes_and_deep_nesting)
{
	nvtxMarkA(NULL);
	nvtxMarkEx(NULL);
	nvtxRangeEnd(nvtxRangeStartEx(NULL));
	CHECK_EQ_INT(nvtxRangePushEx(NULL), 0);
	nvtxRangePop();
	nvtxDomainRangeEnd(NULL, nvtxDomainRangeStartEx(NULL, NULL));
	CHECK_EQ_INT(nvtxDomainRangePushEx(NULL, NULL), 0);
	nvtxDomainRangePop(NULL);
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = (uint16_t)offsetof(nvtxEventAttributes_t, category);
	a.category = 17;
	nvtxMarkEx(&a);
	nvtxRangeEnd(0);                 /* no range */
	atomic_store(&tki_on, 0);
	nvtxRangeId_t off = nvtxRangeStartA("deep.off"); /* never recorded */
	atomic_store(&tki_on, 1);
	nvtxRangeEnd(off);
	atomic_store(&tki_on, 0);
	nvtxRangeId_t late = nvtxRangeStartA("deep.late.end");
	(void)late;
	atomic_store(&tki_on, 1);

	enum { DEEP = 140 };
	char name[32];
	for (int i = 0; i < DEEP; i++) {
		snprintf(name, sizeof(name), "deep.%d", i);
		CHECK_EQ_INT(nvtxRangePushA(name), i);
	}
	for (int i = DEEP - 1; i >= 0; i--)
		CHECK_EQ_INT(nvtxRangePop(), i);
	CHECK(nvtxRangePop() < 0);

	struct spool_read s;
	flush_and_read(&s);
	int unnamed_marks = 0, unnamed_ranges = 0;
	for (size_t i = 0; i < s.n; i++) {
		const struct ev *e = &s.ev[i];
		if (e->name[0] || e->category || e->payload_type)
			continue;
		unnamed_marks += e->kind == TK_MARK;
		unnamed_ranges += e->kind == TK_RANGE || e->kind == TK_ASYNC_RANGE;
	}
	CHECK_EQ_INT(unnamed_marks, 3);   /* NULL, no attributes, too small */
	CHECK_EQ_INT(unnamed_ranges, 4);
	CHECK_EQ_INT(count(&s, TK_ASYNC_RANGE, "deep.off"), 0);
	CHECK_EQ_INT(count(&s, TK_ASYNC_RANGE, "deep.late.end"), 0);
	const struct ev *outer = NULL;
	int nested = 1;
	for (int i = 0; i < DEEP; i++) {
		snprintf(name, sizeof(name), "deep.%d", i);
		const struct ev *e = only(&s, name);
		CHECK(e != NULL);
		if (!e)
			continue;
		nested &= !e->unfinished && (!outer || inside(e, outer));
		outer = e;
	}
	CHECK(nested);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

#define NTHREADS 4
#define PER_THREAD 2000

static pthread_barrier_t barrier;
static nvtxRangeId_t handoff;

static void *
thread_main(void *arg)
{
	int n = (int)(long)arg;
	char name[32];
	snprintf(name, sizeof(name), "worker-%d", n);
	nvtxNameOsThreadA((uint32_t)gettid_(), name);
	if (n == 0)
		handoff = nvtxRangeStartA("handoff");
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < PER_THREAD; i++) {
		nvtxRangePushA("work");
		nvtxRangePushA("part");
		nvtxRangePop();
		nvtxRangePop();
	}
	if (n == 1)
		nvtxRangeEnd(handoff);
	return NULL;
}

TEST(threads_names_and_async)
{
	pthread_t t[NTHREADS];
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&barrier);

	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_RANGE, "work"), NTHREADS * PER_THREAD);
	CHECK_EQ_INT(count(&s, TK_RANGE, "part"), NTHREADS * PER_THREAD);
	int named[NTHREADS] = { 0 };
	for (size_t i = 0; i < s.n; i++) {
		int k;
		if (sscanf(s.ev[i].thread, "worker-%d", &k) == 1 && k >= 0 && k < NTHREADS)
			named[k]++;
	}
	for (int k = 0; k < NTHREADS; k++)
		CHECK(named[k] >= 2 * PER_THREAD);
	const struct ev *h = find(&s, TK_ASYNC_RANGE, "handoff", 0);
	CHECK(h && h->id != 0 && h->end_tid > 0 && h->end_tid != h->tid);
	CHECK(h && !strcmp(h->thread, "worker-0"));
	/* the exited threads are gone from the list */
	struct tki_thread **ts;
	size_t n = tki_threads_snapshot(&ts);
	free(ts);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* Many async ranges open at once, ended in a shuffled order: every
 * range comes out once, matched to its own start: sorted by their
 * ends, the payloads are the order the test ended them in. */
TEST(async_ranges_ended_in_any_order)
{
	enum { N = 1500 };
	static nvtxRangeId_t ids[N];
	static uint32_t order[N];
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "shuffled";
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	for (uint32_t i = 0; i < N; i++) {
		a.payload.ullValue = i;
		ids[i] = nvtxRangeStartEx(&a);
		order[i] = i;
	}
	uint64_t x = 88172645463325252ull; /* xorshift: the same order each run */
	for (uint32_t i = N - 1; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t j = (uint32_t)(x % (i + 1));
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t k = 0; k < N; k++)
		nvtxRangeEnd(ids[order[k]]);
	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_ASYNC_RANGE, "shuffled"), N);
	static int64_t end_of[N];
	static int seen[N];
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < s.n; i++) {
		const struct ev *e = &s.ev[i];
		if (e->kind != TK_ASYNC_RANGE || strcmp(e->name, "shuffled") != 0 ||
		    e->payload.u >= N || e->unfinished)
			continue;
		seen[e->payload.u]++;
		end_of[e->payload.u] = e->ts + e->dur;
	}
	int once = 1, in_order = 1;
	for (uint32_t i = 0; i < N; i++)
		once &= seen[i] == 1;
	/* the k-th range ended ends no earlier than the one before it */
	for (uint32_t k = 1; k < N && once; k++)
		in_order &= end_of[order[k]] >= end_of[order[k - 1]];
	CHECK(once);
	CHECK(in_order);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* ---- records made by hand ---------------------------------------------------------
 * What nvtx.c would write only after losing records to full buffers, or
 * never: put into this thread's buffer as nvtx.c lays them out, with
 * the times, levels, ids and domains chosen here, so that what the
 * flusher makes of them can be checked to the nanosecond. */

struct raw {
	uint8_t type;
	uint16_t domain;
	int64_t ts;
	uint64_t id;                  /* START and END */
	uint32_t level;               /* PUSH and POP */
	const char *text;             /* or a registered string: */
	uint32_t string;
	const struct tki_attrs *attrs;
};

static void
put_raw(const struct raw *x)
{
	struct tki_thread *t = tki_self ? tki_self : tki_thread_attach();
	int has_id = x->type == TKI_REC_START || x->type == TKI_REC_END;
	uint32_t len = x->text ? (uint32_t)strlen(x->text) : 0;
	uint32_t size = (uint32_t)sizeof(struct tki_rec) + (has_id ? 8u : 0u);
	if (x->type == TKI_REC_POP)
		size += (uint32_t)sizeof(struct tki_pop);
	else if (x->type != TKI_REC_END)
		size += (x->attrs ? (uint32_t)sizeof(*x->attrs) : 0u) +
		        (uint32_t)sizeof(struct tki_msg) + tki_align8(len);
	uint8_t *p = tki_reserve(t, size);
	if (!p)
		abort();
	memset(p, 0, size);
	struct tki_rec *r = (struct tki_rec *)p;
	r->type = x->type;
	r->flags = (uint8_t)((x->attrs ? TKI_F_ATTRS : 0) |
	                     (x->string ? TKI_F_REGISTERED : 0));
	r->domain = x->domain;
	r->size = size;
	r->ts = x->ts;
	p += sizeof(*r);
	if (has_id) {
		memcpy(p, &x->id, 8);
		p += 8;
	}
	if (x->type == TKI_REC_POP) {
		memcpy(p, &x->level, 4);
	} else if (x->type != TKI_REC_END) {
		if (x->attrs) {
			memcpy(p, x->attrs, sizeof(*x->attrs));
			p += sizeof(*x->attrs);
		}
		struct tki_msg m = { len, x->string, x->level, 0 };
		memcpy(p, &m, sizeof(m));
		memcpy(p + sizeof(m), x->text ? x->text : "", len);
	}
	tki_commit(t, size);
	/* what becomes an event is counted, as nvtx.c counts it */
	if (x->type == TKI_REC_PUSH || x->type == TKI_REC_MARK ||
	    x->type == TKI_REC_START)
		tki_count(t);
}

/* Push ranges whose pops were lost: a push at a level still open ends
 * the range there (unfinished), a pop ends every level above its own
 * (unfinished) and its own; a level never pushed (a gap) is skipped,
 * also by the watermark's and the snapshot's walks (a flush while the
 * gap is open); a pop of a domain this thread never pushed, or of a
 * level not open, is ignored; a pop older than its push gives a
 * range of no length; a domain id nobody registered, no name. */
TEST(push_pop_with_lost_records)
{
	uint16_t D = (uint16_t)((struct tki_domain *)(void *)nvtxDomainCreateA("raw"))->id;
	const uint16_t NODOM = 777;
	nvtxMarkA("raw.attach"); /* this thread's buffer */
	int64_t b = tki_now();
	struct raw r[] = {
		{ TKI_REC_POP, NODOM, b + 1, 0, 0, NULL, 0, NULL },
		{ TKI_REC_PUSH, D, b + 10, 0, 0, "r.outer", 0, NULL },
		{ TKI_REC_PUSH, D, b + 20, 0, 1, "r.lostpop", 0, NULL },
		{ TKI_REC_PUSH, D, b + 30, 0, 1, "r.again", 0, NULL },
		{ TKI_REC_PUSH, D, b + 40, 0, 3, "r.gap", 0, NULL },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		put_raw(&r[i]);
	int64_t open_before = b + 10;
	tki_flusher_round(0); /* level 2 is a gap while this flush runs */
	CHECK_EQ_INT(__atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE),
	             open_before);
	struct raw r2[] = {
		{ TKI_REC_POP, D, b + 50, 0, 1, NULL, 0, NULL },
		{ TKI_REC_POP, D, b + 52, 0, 2, NULL, 0, NULL },   /* not open */
		{ TKI_REC_POP, D, b + 60, 0, 0, NULL, 0, NULL },
		{ TKI_REC_PUSH, D, b + 62, 0, 1, "r.high", 0, NULL },
		{ TKI_REC_POP, D, b + 64, 0, 0, NULL, 0, NULL },   /* 0 not open */
		{ TKI_REC_PUSH, NODOM, b + 70, 0, 0, "r.nodomain", 0, NULL },
		{ TKI_REC_POP, NODOM, b + 65, 0, 0, NULL, 0, NULL },
	};
	for (size_t i = 0; i < sizeof(r2) / sizeof(r2[0]); i++)
		put_raw(&r2[i]);

	struct spool_read s;
	flush_and_read(&s);
	struct { const char *name; int64_t ts, dur; int unfinished; } want[] = {
		{ "r.outer", b + 10, 50, 0 },
		{ "r.lostpop", b + 20, 10, 1 },   /* ended by r.again's push */
		{ "r.again", b + 30, 20, 0 },
		{ "r.gap", b + 40, 10, 1 },       /* ended by level 1's pop */
		{ "r.high", b + 62, 2, 1 },       /* ended by level 0's pop */
		{ "r.nodomain", b + 70, 0, 0 },   /* popped "before" it began */
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct ev *e = only(&s, want[i].name);
		CHECK(e != NULL);
		if (!e)
			continue;
		CHECK_EQ_INT(e->kind, TK_RANGE);
		CHECK_EQ_INT(e->ts, want[i].ts);
		CHECK_EQ_INT(e->dur, want[i].dur);
		CHECK_EQ_INT(e->unfinished, want[i].unfinished);
		CHECK_STR(e->domain, i == 5 ? "" : "raw");
		CHECK_EQ_INT(e->tid, gettid_());
	}
	CHECK_EQ_INT(__atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE),
	             INT64_MAX);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* Start/end ranges made by hand: ends read before their starts wait
 * for them (two at once, matched by id, not by order), an end older
 * than its start gives no length, registered strings (cached after
 * their first use; an unknown id names nothing), and a record of a
 * type this library does not write is skipped. */
TEST(start_end_and_registered_by_hand)
{
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(NULL, "r.registered");
	uint32_t reg_id = ((const struct tki_string *)(const void *)reg)->id;
	struct tki_attrs a = { 5, 0xff0000ff, TK_PAYLOAD_UINT, 0, 77 };
	int64_t b = tki_now();
	struct raw r[] = {
		{ TKI_REC_END, 0, b + 90, 1001, 0, NULL, 0, NULL },
		{ TKI_REC_END, 0, b + 91, 1002, 0, NULL, 0, NULL },
		{ TKI_REC_START, 0, b + 80, 1002, 0, "r.second", 0, &a },
		{ TKI_REC_START, 0, b + 81, 1001, 0, "r.first", 0, NULL },
		{ TKI_REC_START, 0, b + 100, 1003, 0, "r.backwards", 0, NULL },
		{ TKI_REC_END, 0, b + 95, 1003, 0, NULL, 0, NULL },
		{ 99, 0, b + 101, 0, 0, "r.unknown.type", 0, NULL },
		{ TKI_REC_MARK, 0, b + 102, 0, 0, NULL, reg_id, NULL },
		{ TKI_REC_MARK, 0, b + 103, 0, 0, NULL, reg_id, &a },
		{ TKI_REC_MARK, 0, b + 104, 0, 0, NULL, 5000, NULL },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		put_raw(&r[i]);
	struct spool_read s;
	flush_and_read(&s);
	const struct ev *e = only(&s, "r.second");
	CHECK(e && e->kind == TK_ASYNC_RANGE && e->ts == b + 80 && e->dur == 11);
	CHECK(e && e->id == 1002 && !e->unfinished);
	CHECK(e && e->category == 5 && e->color == 0xff0000ff &&
	      e->payload_type == TK_PAYLOAD_UINT && e->payload.u == 77);
	e = only(&s, "r.first");
	CHECK(e && e->kind == TK_ASYNC_RANGE && e->ts == b + 81 && e->dur == 9);
	CHECK(e && e->id == 1001 && e->category == 0 && !e->unfinished);
	e = only(&s, "r.backwards");
	CHECK(e && e->ts == b + 100 && e->dur == 0 && !e->unfinished);
	CHECK_EQ_INT(count(&s, TK_MARK, "r.unknown.type") +
	             count(&s, TK_RANGE, "r.unknown.type"), 0);
	CHECK_EQ_INT(count(&s, TK_MARK, "r.registered"), 2);
	e = find(&s, TK_MARK, "r.registered", 1);
	CHECK(e && e->ts == b + 103 && e->category == 5);
	int unnamed = 0;
	for (size_t i = 0; i < s.n; i++)
		unnamed += s.ev[i].kind == TK_MARK && s.ev[i].ts == b + 104 &&
		           !s.ev[i].name[0];
	CHECK_EQ_INT(unnamed, 1);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* Ids whose home slot in the flusher's table of open start/end ranges
 * is given by the low 16 bits of their hash (the table has at most
 * 65536 slots here, so they are home at slot `low` of any size). */
static uint64_t
id_homed_at(uint32_t low, uint64_t *next)
{
	for (uint64_t id = *next;; id++)
		if ((tkp_hash_u64(id) & 0xffff) == low) {
			*next = id + 1;
			return id;
		}
}

/* Start ranges with chosen ids (t->next_range_id), end them in the
 * given order; each must come out once, whole, ended in that order. */
static void
starts_and_ends(const char *name, const uint64_t *ids, int n, const int *end_order)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = name;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	nvtxRangeId_t got[8];
	for (int i = 0; i < n; i++) {
		tki_self->next_range_id = ids[i];
		a.payload.ullValue = (uint64_t)i;
		got[i] = nvtxRangeStartEx(&a);
		CHECK_EQ_INT(got[i], ids[i]);
	}
	for (int k = 0; k < n; k++)
		nvtxRangeEnd(got[end_order[k]]);
	struct spool_read s;
	flush_and_read(&s);
	int64_t end_of[8] = { 0 };
	int seen[8] = { 0 };
	for (size_t i = 0; i < s.n; i++) {
		const struct ev *e = &s.ev[i];
		if (e->kind != TK_ASYNC_RANGE || strcmp(e->name, name) != 0 ||
		    e->payload.u >= (uint64_t)n || e->unfinished)
			continue;
		seen[e->payload.u]++;
		end_of[e->payload.u] = e->ts + e->dur;
		CHECK_EQ_INT(e->id, ids[e->payload.u]);
	}
	int once = 1, in_order = 1;
	for (int i = 0; i < n; i++)
		once &= seen[i] == 1;
	for (int k = 1; k < n && once; k++)
		in_order &= end_of[end_order[k]] >= end_of[end_order[k - 1]];
	CHECK(once);
	CHECK(in_order);
	/* none left behind, waiting: nothing open */
	CHECK_EQ_INT(__atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE),
	             INT64_MAX);
	free(s.ev);
}

/* The open start/end ranges are a hash table with linear probing and
 * backward-shift deletion; a chain that runs past the table's last
 * slot continues at slot 0.  Deleting around that end must move back
 * exactly the entries whose home is not between the hole and them. */
TEST(async_table_wraps_around_its_end)
{
	uint64_t next = 1;
	const uint32_t LAST = 0xffff, BEFORE = 0xfffe;
	uint64_t l1 = id_homed_at(LAST, &next), l2 = id_homed_at(LAST, &next),
	         l3 = id_homed_at(LAST, &next), z = id_homed_at(0, &next),
	         o = id_homed_at(1, &next), p = id_homed_at(BEFORE, &next);
	/* last, last (wraps to 0), 0 (at 1), 1 (at 2); the first ended
	 * first: each of the others moves back one slot, across the end */
	uint64_t s1[] = { l1, l2, z, o };
	int e1[] = { 0, 1, 2, 3 };
	starts_and_ends("wrap.1", s1, 4, e1);
	/* last, last (at 0), last (at 1); the one at 0 ended first: the
	 * one at 1, home past it, moves back to 0 */
	uint64_t s2[] = { l1, l2, l3 };
	int e2[] = { 1, 0, 2 };
	starts_and_ends("wrap.2", s2, 3, e2);
	/* before-last, last, 0 (at 0), last (at 1): ending the first moves
	 * nothing (each is at or after its home); ending the second moves
	 * the one at 1 back to the last slot, not the one at home at 0 */
	uint64_t s3[] = { p, l1, z, l2 };
	int e3[] = { 0, 1, 3, 2 };
	starts_and_ends("wrap.3", s3, 4, e3);
}

/* Messages longer than a block (64 KiB): their records get blocks of
 * several units of the durable file, and come out whole, in order with
 * the small ones around them. */
TEST(records_longer_than_a_block)
{
	size_t sizes[] = { 70 * 1024, 200 * 1024 };
	for (int k = 0; k < 2; k++) {
		char *big = malloc(sizes[k] + 1);
		if (!big)
			abort();
		for (size_t i = 0; i < sizes[k]; i++)
			big[i] = (char)('a' + (i * 7 + (size_t)k) % 26);
		big[sizes[k]] = 0;
		nvtxMarkA("big.before");
		nvtxRangePushA(big);
		nvtxMarkA(big);
		nvtxRangePop();
		nvtxMarkA("big.after");
		struct spool_read s;
		tki_flusher_round(0);
		char path[1024];
		CHECK(latest_spool(spool, getpid(), path, sizeof(path)) == 0);
		/* struct ev keeps 64 bytes of a name: compare the whole */
		struct tk_reader *r = tk_reader_new();
		const struct tk_event *e;
		int whole_marks = 0, whole_ranges = 0;
		int64_t before = -1, mark = -1, after = -1;
		if (tk_reader_open_path(r, path) == TK_OK)
			while (tk_reader_next_event(r, &e) == TK_OK) {
				int same = !strcmp(e->name, big);
				whole_marks += same && e->kind == TK_MARK;
				whole_ranges += same && e->kind == TK_RANGE;
				if (same && e->kind == TK_MARK)
					mark = e->ts;
				if (e->kind == TK_MARK && !strcmp(e->name, "big.before"))
					before = e->ts;
				if (e->kind == TK_MARK && !strcmp(e->name, "big.after"))
					after = e->ts;
			}
		tk_reader_free(r);
		CHECK_EQ_INT(whole_marks, 1);
		CHECK_EQ_INT(whole_ranges, 1);
		CHECK(before >= 0 && before <= mark && mark <= after);
		read_spool(getpid(), &s);
		CHECK_EQ_INT(produced(), s.n);
		free(s.ev);
		free(big);
	}
}

/* The whole durable buffer file of this process (<pid>-<ns>.buf, the
 * latest), read as trace-record would read it after a crash. */
static uint8_t *
read_durable(size_t *len)
{
	char best[512] = "", prefix[32], path[1024];
	snprintf(prefix, sizeof(prefix), "%ld-", (long)getpid());
	DIR *d = opendir(spool);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (!strncmp(de->d_name, prefix, strlen(prefix)) && n > 4 &&
		    !strcmp(de->d_name + n - 4, ".buf") && strcmp(de->d_name, best) > 0)
			snprintf(best, sizeof(best), "%s", de->d_name);
	}
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "%s/%s", spool, best);
	int fd = best[0] ? open(path, O_RDONLY) : -1;
	struct stat st;
	uint8_t *buf = NULL;
	if (fd >= 0 && fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size)) &&
	    pread(fd, buf, (size_t)st.st_size, 0) == st.st_size) {
		*len = (size_t)st.st_size;
	} else {
		free(buf);
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

/* The durable file's names log and snapshots are given storage 64 KiB
 * at a time as they grow: names and open ranges well past the first
 * 64 KiB are all there, as trace-record's recovery would read them,
 * none lost for want of room. */
TEST(durable_logs_past_their_first_pages)
{
	enum { NAMES = 1500, OPEN = 800 };
	static uint32_t ids[NAMES];
	static nvtxRangeId_t open_ids[OPEN];
	char text[64];
	for (int i = 0; i < NAMES; i++) {
		snprintf(text, sizeof(text), "durable.name.%04d.with.some.forty.bytes", i);
		nvtxStringHandle_t h = nvtxDomainRegisterStringA(NULL, text);
		ids[i] = h ? ((struct tki_string *)(void *)h)->id : 0;
	}
	for (int i = 0; i < OPEN; i++) {
		snprintf(text, sizeof(text), "durable.open.%04d.with.a.forty.byte.name", i);
		open_ids[i] = nvtxRangeStartA(text);
	}
	tki_flusher_round(0);

	size_t len = 0;
	uint8_t *f = read_durable(&len);
	CHECK(f != NULL);
	struct tki_buf_head h;
	if (f)
		memcpy(&h, f, sizeof(h));
	if (f && h.magic == TKI_BUF_MAGIC && h.names_off + h.names_len <= len) {
		int named = 0;
		for (uint64_t at = 0; at + sizeof(struct tki_buf_name) <= h.names_len;) {
			struct tki_buf_name n;
			memcpy(&n, f + h.names_off + at, sizeof(n));
			const char *t = (const char *)f + h.names_off + at + sizeof(n);
			int k;
			if (n.kind == TKI_NAME_STRING && n.len > 13 &&
			    sscanf(t, "durable.name.%4d", &k) == 1 && k >= 0 && k < NAMES &&
			    n.a == ids[k] && n.b == 0)
				named++;
			at += sizeof(n) + tki_pad8(n.len);
		}
		CHECK_EQ_INT(named, NAMES);
		CHECK(h.names_len > 64 * 1024);
	} else {
		CHECK(0);
	}
	uint32_t cur = f ? h.snap_cur : 2;
	if (f && cur < 2 && h.snap_off[cur] + h.snap_len[cur] <= len) {
		int open = 0;
		for (uint64_t at = 0; at + sizeof(struct tki_snap) <= h.snap_len[cur];) {
			struct tki_snap e;
			memcpy(&e, f + h.snap_off[cur] + at, sizeof(e));
			const char *t = (const char *)f + h.snap_off[cur] + at + sizeof(e);
			int k;
			if (e.kind == TKI_SNAP_ASYNC && e.len > 13 &&
			    sscanf(t, "durable.open.%4d", &k) == 1 && k >= 0 && k < OPEN &&
			    e.id == open_ids[k] && e.tid == gettid_())
				open++;
			at += sizeof(e) + tki_pad8(e.len);
		}
		CHECK_EQ_INT(open, OPEN);
		CHECK(h.snap_len[cur] > 64 * 1024);
		CHECK_EQ_INT(h.snap_lost, 0);
	} else {
		CHECK(0);
	}
	free(f);
	for (int i = 0; i < OPEN; i++)
		nvtxRangeEnd(open_ids[i]);
	struct spool_read s;
	flush_and_read(&s);
	int ended = 0;
	for (size_t i = 0; i < s.n; i++)
		ended += s.ev[i].kind == TK_ASYNC_RANGE && !s.ev[i].unfinished &&
		         !strncmp(s.ev[i].name, "durable.open.", 13);
	CHECK_EQ_INT(ended, OPEN);
	free(s.ev);
}

TEST(open_ranges_hold_the_watermark)
{
	int64_t before = tki_now();
	nvtxRangePushA("long");
	nvtxRangePushA("short");
	nvtxRangePop();
	struct spool_read s;
	flush_and_read(&s);
	int64_t open = __atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE);
	CHECK(open >= before && open <= tki_now());
	CHECK(s.last_wm <= open);
	CHECK_EQ_INT(count(&s, TK_RANGE, "long"), 0);
	CHECK_EQ_INT(count(&s, TK_RANGE, "short"), 1);
	nvtxRangePop();
	free(s.ev);
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_RANGE, "long"), 1);
	CHECK_EQ_INT(__atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE),
	             INT64_MAX);
	free(s.ev);
}

static void *
flood(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200000; i++) {
		nvtxRangePushA("flood");
		nvtxRangePop();
	}
	return NULL;
}

/* A flush hook that holds the flusher, while armed, until the gate
 * opens: the buffers fill and the program has to drop. */
static atomic_int gate_armed, gate_entered, gate_open;

static void
gate_hook(void *arg, int final)
{
	(void)arg;
	if (final || !atomic_load(&gate_armed))
		return;
	atomic_store(&gate_entered, 1);
	for (int i = 0; i < 30000 && !atomic_load(&gate_open); i++)
		usleep(1000);
}

TEST(full_buffers_count_what_they_drop)
{
	/* two blocks for the whole process, and a flusher held in a hook
	 * (it would otherwise be woken to make room, and nothing would be
	 * dropped): most of the flood cannot be kept */
	size_t limit = tki_cfg.buffer_limit;
	tki_cfg.buffer_limit = 2 * TKI_BLOCK_BYTES;
	tki_on_flush(gate_hook, NULL);
	atomic_store(&gate_armed, 1);
	tki_flusher_wake();
	for (int i = 0; i < 5000 && !atomic_load(&gate_entered); i++)
		usleep(1000);
	CHECK(atomic_load(&gate_entered));
	pthread_t t;
	pthread_create(&t, NULL, flood, NULL);
	pthread_join(t, NULL);
	atomic_store(&gate_armed, 0);
	atomic_store(&gate_open, 1);
	tki_cfg.buffer_limit = limit;
	struct spool_read s;
	flush_and_read(&s);
	uint64_t dropped = 0;
	int why = 0;
	for (size_t i = 0; i < s.n; i++)
		if (s.ev[i].kind == TK_DROPPED) {
			dropped += s.ev[i].count;
			why += !strcmp(s.ev[i].name, "nvtx");
		}
	size_t kept = count(&s, TK_RANGE, "flood");
	CHECK(kept > 0);
	CHECK(dropped > 0);
	CHECK(why > 0);
	CHECK_EQ_INT(kept + dropped, 200000);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

TEST(capture_schedule)
{
	/* skip 1, warmup 1, active 2, two cycles: occurrences 3, 4, 7, 8 */
	tki_cfg.capture = "step";
	tki_cfg.capture_domain = NULL;
	tki_cfg.skip = 1;
	tki_cfg.warmup = 1;
	tki_cfg.active = 2;
	tki_cfg.cycles = 2;
	tki_capture_init();
	nvtxMarkA("before");
	for (uint64_t i = 1; i <= 10; i++) {
		nvtxEventAttributes_t a;
		memset(&a, 0, sizeof(a));
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
		a.payload.ullValue = i;
		a.messageType = NVTX_MESSAGE_TYPE_ASCII;
		a.message.ascii = "step";
		nvtxRangePushEx(&a);
		nvtxRangePushA("inside");
		nvtxRangePop();
		nvtxRangePop();
		nvtxMarkA("between");
	}
	tki_cfg.capture = NULL;
	tki_capture_init();
	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_MARK, "before"), 0);
	CHECK_EQ_INT(count(&s, TK_RANGE, "step"), 4);
	CHECK_EQ_INT(count(&s, TK_RANGE, "inside"), 4);
	/* active phases hold between their occurrences: after 3, not after 4 */
	CHECK_EQ_INT(count(&s, TK_MARK, "between"), 2);
	uint64_t want[] = { 3, 4, 7, 8 };
	for (int k = 0; k < 4; k++) {
		const struct ev *e = find(&s, TK_RANGE, "step", (size_t)k);
		CHECK(e && e->payload.u == want[k]);
	}
	free(s.ev);
}

static enum tki_phase phases_seen[32];
static int nphases_seen;

static void
phase_hook(void *arg, enum tki_phase p)
{
	(void)arg;
	if (nphases_seen < 32)
		phases_seen[nphases_seen++] = p;
}

static void
refused_phase_hook(void *arg, enum tki_phase p)
{
	(void)arg;
	(void)p;
	nphases_seen = 1000;
}

/* The capture range as start/end ranges in any domain ("*"), warmup 1,
 * active 1, cycles without end: every second occurrence is recorded,
 * and the phase hooks (eight at most) hear each change once, in order,
 * on the thread that made it. */
TEST(capture_by_start_end_any_domain)
{
	tki_cfg.capture = "iter";
	tki_cfg.capture_domain = "*";
	tki_cfg.skip = 0;
	tki_cfg.warmup = 1;
	tki_cfg.active = 1;
	tki_cfg.cycles = 0;
	tki_capture_init();
	/* one hook, seven places taken (by hooks not yet set), a ninth refused */
	for (int i = 0; i < 8; i++)
		tki_on_phase(i ? NULL : phase_hook, NULL);
	tki_on_phase(refused_phase_hook, NULL);
	nvtxDomainHandle_t d = nvtxDomainCreateA("cap.any");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(d, "iter");
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	for (uint64_t i = 1; i <= 6; i++) {
		a.payload.ullValue = i;
		/* by text in the default domain, then by registered
		 * string in another */
		nvtxDomainHandle_t in = i % 2 ? NULL : d;
		a.messageType = i % 2 ? NVTX_MESSAGE_TYPE_ASCII : NVTX_MESSAGE_TYPE_REGISTERED;
		if (i % 2)
			a.message.ascii = "iter";
		else
			a.message.registered = reg;
		nvtxRangeId_t id = nvtxDomainRangeStartEx(in, &a);
		nvtxMarkA("cap.inside");
		nvtxDomainRangeEnd(in, id);
		nvtxMarkA("cap.between");
	}
	tki_cfg.capture = NULL;
	tki_cfg.capture_domain = NULL;
	tki_capture_init();
	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_ASYNC_RANGE, "iter"), 3);
	for (size_t k = 0; k < 3; k++) {
		const struct ev *e = find(&s, TK_ASYNC_RANGE, "iter", k);
		CHECK(e && e->payload.u == 2 * (k + 1) && !strcmp(e->domain, "cap.any"));
	}
	CHECK_EQ_INT(count(&s, TK_MARK, "cap.inside"), 3);
	CHECK_EQ_INT(count(&s, TK_MARK, "cap.between"), 0);
	enum tki_phase want[] = {
		TKI_PHASE_WARMUP, TKI_PHASE_ACTIVE, TKI_PHASE_OFF,
		TKI_PHASE_WARMUP, TKI_PHASE_ACTIVE, TKI_PHASE_OFF,
		TKI_PHASE_WARMUP, TKI_PHASE_ACTIVE, TKI_PHASE_OFF,
	};
	CHECK_EQ_INT(nphases_seen, 9);
	int same = nphases_seen == 9;
	for (int i = 0; i < 9 && same; i++)
		same &= phases_seen[i] == want[i];
	CHECK(same);
	free(s.ev);
}

TEST(recording_window)
{
	nvtxRangePushA("across.end");
	int64_t end = tki_now();
	tki_cfg.win_end = end;
	nvtxRangePushA("after.end");
	nvtxRangePop();
	nvtxMarkA("late");
	nvtxRangePop();
	struct spool_read s;
	flush_and_read(&s);
	tki_cfg.win_end = INT64_MAX;
	CHECK_EQ_INT(count(&s, TK_RANGE, "after.end"), 0);
	CHECK_EQ_INT(count(&s, TK_MARK, "late"), 0);
	const struct ev *e = find(&s, TK_RANGE, "across.end", 0);
	CHECK(e && e->unfinished && e->ts + e->dur == end);
	free(s.ev);
}

/* The descriptor of the spool file, found as the program would not. */
static int
spool_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;
	while (d && (de = readdir(d))) {
		char link[300], target[1024];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = 0;
		if (strstr(target, spool) && strstr(target, ".tkt"))
			found = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

TEST(program_closes_every_descriptor)
{
	nvtxRangePushA("before.close");
	nvtxRangePop();
	tki_flusher_round(0);
	/* between writes the process holds no descriptor of its spool, so
	 * a program that closes what it did not open takes nothing of ours */
	CHECK_EQ_INT(spool_fd(), -1);
	int fds[8], n = 0;
	for (int i = 0; i < 8; i++) {
		char name[] = "/tmp/tk-program-file-XXXXXX";
		if ((fds[i] = mkstemp(name)) >= 0) {
			unlink(name);
			n++;
		}
	}
	nvtxRangePushA("after.close");
	nvtxRangePop();
	tki_flusher_round(0);
	nvtxMarkA("later");
	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(s.scopes, 1);
	CHECK_EQ_INT(count(&s, TK_RANGE, "before.close"), 1);
	CHECK_EQ_INT(count(&s, TK_RANGE, "after.close"), 1);
	CHECK_EQ_INT(count(&s, TK_MARK, "later"), 1);
	const struct ev *e = find(&s, TK_RANGE, "after.close", 0);
	CHECK(e && e->tid == gettid_());
	/* and nothing went into the program's files */
	for (int i = 0; i < n; i++) {
		struct stat st;
		CHECK(fstat(fds[i], &st) == 0 && st.st_size == 0);
		close(fds[i]);
	}
	CHECK_EQ_INT(n, 8);
	free(s.ev);
}

TEST(fork_child_has_its_own_spool)
{
	nvtxRangePushA("parent.open");
	pid_t pid = fork();
	if (pid == 0) {
		nvtxRangePushA("child.range");
		nvtxRangePop();
		nvtxRangePop(); /* the parent's range is not the child's */
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	nvtxRangePop();
	struct spool_read c;
	CHECK(read_spool(pid, &c) == 0);
	CHECK(c.ended);
	CHECK_EQ_INT(c.n, 1);
	CHECK(c.n == 1 && !strcmp(c.ev[0].name, "child.range") && c.ev[0].tid == pid);
	free(c.ev);
	struct spool_read s;
	flush_and_read(&s);
	CHECK_EQ_INT(count(&s, TK_RANGE, "parent.open"), 1);
	CHECK_EQ_INT(count(&s, TK_RANGE, "child.range"), 0);
	free(s.ev);
}

/* A flush hook that takes its time while armed. */
static atomic_int slow_hook_armed, slow_hook_entered, slow_hook_done;

static void
slow_hook(void *arg, int final)
{
	(void)arg;
	(void)final;
	if (!atomic_load(&slow_hook_armed))
		return;
	atomic_store(&slow_hook_entered, 1);
	struct timespec pause = {0, 200000000};
	nanosleep(&pause, NULL);
	atomic_store(&slow_hook_done, 1);
}

/* fork() waits while the flusher works: a child made in the middle of
 * a flush would inherit whatever lock the flusher held then (an
 * allocator's that does not guard itself around fork, as
 * AddressSanitizer's does not, and the child hangs in malloc). */
TEST(fork_waits_for_the_flusher)
{
	tki_on_flush(slow_hook, NULL);
	atomic_store(&slow_hook_armed, 1);
	tki_flusher_wake();
	for (int i = 0; i < 5000 && !atomic_load(&slow_hook_entered); i++)
		usleep(1000);
	CHECK(atomic_load(&slow_hook_entered));
	pid_t pid = fork();
	if (pid == 0)
		_exit(atomic_load(&slow_hook_done) ? 0 : 1); /* the flush had ended */
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	atomic_store(&slow_hook_armed, 0);
}

static int flush_hook_calls[8];

static void
counting_hook(void *arg, int final)
{
	if (!final)
		flush_hook_calls[(intptr_t)arg]++;
}

/* Flush hooks: eight at most (two are taken by the tests above), the
 * rest refused and never run.  Holds: sixteen at most; the watermark
 * and open_since never pass the earliest; a hold not given out cannot
 * be set. */
TEST(flush_hooks_and_holds_past_their_tables)
{
	for (intptr_t i = 0; i < 7; i++)
		tki_on_flush(counting_hook, (void *)i);
	tki_run_flush_hooks(0);
	for (int i = 0; i < 6; i++)
		CHECK_EQ_INT(flush_hook_calls[i], 1);
	CHECK_EQ_INT(flush_hook_calls[6], 0);

	int h[17], given = 0;
	for (int i = 0; i < 17; i++)
		given += (h[i] = tki_hold_new()) >= 0;
	CHECK_EQ_INT(given, 16);
	CHECK_EQ_INT(h[16], -1);
	CHECK_EQ_INT(tki_holds_min(), INT64_MAX);
	int64_t t = tki_now() - 1000;
	tki_hold_set(h[3], t + 500);
	tki_hold_set(h[9], t);
	tki_hold_set(h[12], t + 200);
	tki_hold_set(-1, 5);
	tki_hold_set(16, 5);
	CHECK_EQ_INT(tki_holds_min(), t);
	tki_flusher_round(0);
	CHECK_EQ_INT(__atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE), t);
	for (int i = 0; i < 16; i++)
		tki_hold_set(h[i], INT64_MAX);
	CHECK_EQ_INT(tki_holds_min(), INT64_MAX);
	tki_flusher_round(0);
	CHECK_EQ_INT(__atomic_load_n(&tki_status->open_since, __ATOMIC_ACQUIRE),
	             INT64_MAX);
}

TEST(exit_flush_writes_open_ranges_and_ends)
{
	nvtxRangePushA("never.closed");
	tki_flusher_finish();
	CHECK(!atomic_load(&tki_on));
	nvtxMarkA("after.exit"); /* ignored */
	struct spool_read s;
	read_spool(getpid(), &s);
	CHECK(s.ended);
	const struct ev *e = find(&s, TK_RANGE, "never.closed", 0);
	CHECK(e && e->unfinished);
	CHECK_EQ_INT(count(&s, TK_MARK, "after.exit"), 0);
	CHECK_EQ_INT(produced(), s.n);
	free(s.ev);
}

/* ---- the options trace-record passes ----------------------------------------------
 * Read once, by a process's first NVTX call: this program again, run
 * with an environment of the test's making, says what it read. */

static char self_exe[1024];

/* Run `self_exe --config [extra]` with `env`; its one line of output
 * in `out`, its pid in *child. */
static int
config_child_arg(char *const env[], char *extra, char *out, size_t n, pid_t *child)
{
	int fd[2];
	if (pipe(fd) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		char *argv[] = { self_exe, "--config", extra, NULL };
		execve(self_exe, argv, env);
		_exit(127);
	}
	close(fd[1]);
	*child = pid;
	ssize_t k = 0, r;
	while (k < (ssize_t)n - 1 && (r = read(fd[0], out + k, n - 1 - (size_t)k)) > 0)
		k += r;
	out[k > 0 ? k : 0] = 0;
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
config_child(char *const env[], char *out, size_t n, pid_t *child)
{
	return config_child_arg(env, NULL, out, n, child);
}

/* The last argument and the start time of the process the spool at
 * `path` defines ("", 0 if none). */
static void
spool_process(const char *path, char *out, size_t n, uint32_t *argc, int64_t *start)
{
	out[0] = 0;
	*argc = 0;
	*start = 0;
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	if (tk_reader_open_path(r, path) == TK_OK)
		while (tk_reader_next(r, &rec) == TK_OK)
			if (rec.type == TK_REC_TRACK &&
			    rec.u.track->type == TK_TRACK_PROCESS) {
				const struct tk_process *p = &rec.u.track->u.process;
				*argc = p->argc;
				*start = p->start;
				if (p->argc)
					snprintf(out, n, "%s", p->argv[p->argc - 1]);
			}
	tk_reader_free(r);
}

/* The child: one NVTX call, then what it read.  With TK_TEST_START,
 * first the file trace-record leaves with the process's start time
 * (<spool>/p<pid>), holding that text. */
static int
config_main(void)
{
	const char *start = getenv("TK_TEST_START"), *dir = getenv(TKI_ENV_SPOOL);
	if (start && dir) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/p%ld", dir, (long)getpid());
		FILE *f = fopen(path, "w");
		if (!f || fputs(start, f) < 0 || fclose(f) != 0)
			return 2;
	}
	InitializeInjectionNvtx2_fnptr = InitializeInjectionNvtx2;
	nvtxMarkA("config");
	printf("on=%d flush=%lld buffer=%zu window=%lld:%lld schedule=%llu,%llu,%llu,%llu "
	       "recorder=%ld\n", atomic_load(&tki_on), (long long)tki_cfg.flush_ns,
	       tki_cfg.buffer_limit, (long long)tki_cfg.win_begin,
	       (long long)tki_cfg.win_end, (unsigned long long)tki_cfg.skip,
	       (unsigned long long)tki_cfg.warmup, (unsigned long long)tki_cfg.active,
	       (unsigned long long)tki_cfg.cycles, tki_cfg.recorder);
	fflush(stdout);
	return 0;
}

/* Values as given are taken (and a command line of 9 KB is kept
 * whole, and the start time trace-record gives); values that are not
 * numbers, out of
 * range, too small or in the wrong order leave the defaults (1 s,
 * 64 MiB, no window, the schedule's active phase at least 1); no
 * recording without an absolute spool directory or with a recorder
 * that is gone (one it may not signal is there). */
TEST(options_from_the_environment)
{
	char spool_env[300], recorder_env[64], out[512];
	snprintf(spool_env, sizeof(spool_env), TKI_ENV_SPOOL "=%s", spool);
	snprintf(recorder_env, sizeof(recorder_env), TKI_ENV_RECORDER "=%ld",
	         (long)getpid());
	char buffer_env[64];
	snprintf(buffer_env, sizeof(buffer_env), TKI_ENV_BUFFER "=%u",
	         4 * TKI_BLOCK_BYTES);
	char *given[] = { spool_env, recorder_env, TKI_ENV_FLUSH "=5000000",
	                  buffer_env, TKI_ENV_WINDOW "=100:200",
	                  TKI_ENV_SCHEDULE "=1,2,0,3", NULL };
	char want[512];
	snprintf(want, sizeof(want), "on=1 flush=5000000 buffer=%u window=100:200 "
	         "schedule=1,2,1,3 recorder=%ld\n", 4 * TKI_BLOCK_BYTES, (long)getpid());
	pid_t child;
	char path[1024];
	/* with an argument longer than the first read of its command line */
	static char long_arg[9000], got_arg[9100];
	memset(long_arg, 'a', sizeof(long_arg) - 1);
	long_arg[sizeof(long_arg) - 2] = 'z';
	CHECK_EQ_INT(config_child_arg(given, long_arg, out, sizeof(out), &child), 0);
	CHECK_STR(out, want);
	CHECK(latest_spool(spool, child, path, sizeof(path)) == 0);
	uint32_t argc = 0;
	int64_t start;
	spool_process(path, got_arg, sizeof(got_arg), &argc, &start);
	CHECK_EQ_INT(argc, 3);
	CHECK(strcmp(got_arg, long_arg) == 0);

	/* the process's start: as trace-record wrote it, else from /proc
	 * (to the clock tick) when its file says nothing usable */
	const char *starts[] = { "1234567\n", "0", "-5", "soon", "" };
	for (int i = 0; i < 5; i++) {
		char start_env[64];
		snprintf(start_env, sizeof(start_env), "TK_TEST_START=%s", starts[i]);
		char *with_start[] = { spool_env, recorder_env, start_env, NULL };
		int64_t before = tki_now();
		CHECK_EQ_INT(config_child(with_start, out, sizeof(out), &child), 0);
		int64_t after = tki_now();
		CHECK(latest_spool(spool, child, path, sizeof(path)) == 0);
		spool_process(path, got_arg, sizeof(got_arg), &argc, &start);
		if (i == 0)
			CHECK_EQ_INT(start, 1234567);
		else
			CHECK(start >= before - 1000000000 && start <= after + 1000000000);
	}

	const char *defaults = "on=1 flush=1000000000 buffer=67108864 "
	                       "window=-9223372036854775808:9223372036854775807 "
	                       "schedule=0,0,1,1 recorder=0\n";
	char *bad1[] = { spool_env, TKI_ENV_RECORDER "=", TKI_ENV_FLUSH "=12x",
	                 TKI_ENV_BUFFER "=99999999999999999999999", TKI_ENV_WINDOW "=300:200",
	                 NULL };
	CHECK_EQ_INT(config_child(bad1, out, sizeof(out), &child), 0);
	CHECK_STR(out, defaults);
	char small[64];
	snprintf(small, sizeof(small), TKI_ENV_BUFFER "=%u", 2 * TKI_BLOCK_BYTES - 1);
	char *bad2[] = { spool_env, TKI_ENV_FLUSH "=0", small, TKI_ENV_WINDOW "=soon",
	                 TKI_ENV_RECORDER "=7x", NULL };
	CHECK_EQ_INT(config_child(bad2, out, sizeof(out), &child), 0);
	CHECK_STR(out, defaults);

	/* a recorder this process may not signal (init, unless run as
	 * root) is there */
	char *init_recorder[] = { spool_env, TKI_ENV_RECORDER "=1", NULL };
	CHECK_EQ_INT(config_child(init_recorder, out, sizeof(out), &child), 0);
	CHECK(strncmp(out, "on=1 ", 5) == 0 && strstr(out, " recorder=1\n"));

	/* not recording: no spool, a relative one, a recorder gone */
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	char gone_env[64];
	snprintf(gone_env, sizeof(gone_env), TKI_ENV_RECORDER "=%ld", (long)gone);
	char *none[] = { recorder_env, NULL };
	/* the spool directory itself, relative to any working directory
	 * less than 16 deep */
	char relative_env[400];
	snprintf(relative_env, sizeof(relative_env), TKI_ENV_SPOOL "=%s%s",
	         "../../../../../../../../../../../../../../../..", spool);
	char *relative[] = { relative_env, recorder_env, NULL };
	char *dead[] = { spool_env, gone_env, NULL };
	char *const *off[] = { none, relative, dead };
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(config_child((char **)off[i], out, sizeof(out), &child), 0);
		CHECK(strncmp(out, "on=0 ", 5) == 0);
		CHECK(latest_spool(spool, child, path, sizeof(path)) < 0);
	}
}

static void
remove_spool(void)
{
	DIR *d = opendir(spool);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' || de->d_name[1] == 'p')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(spool);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--config") == 0)
		return config_main();
	ssize_t k = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	self_exe[k > 0 ? k : 0] = 0;
	strcpy(spool, "/tmp/tracekit-test-XXXXXX");
	if (!mkdtemp(spool))
		return 1;
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv(TKI_ENV_SPOOL, spool, 1);
	setenv(TKI_ENV_RECORDER, pid, 1);
	setenv(TKI_ENV_FLUSH, "60000000000", 1); /* rounds when asked */
	unsetenv("NVTX_INJECTION64_PATH");
	/* the NVTX loader's hook for a statically linked tool */
	InitializeInjectionNvtx2_fnptr = InitializeInjectionNvtx2;

	RUN(loads_and_records);
	RUN(direct_sources_write_and_count);
	RUN(attributes_domains_categories);
	RUN(wide_calls_and_attribute_variants);
	RUN(odd_nvtx_calls);
	RUN(null_attributes_and_deep_nesting);
	RUN(nvtx_export_tables_of_every_shape);
	RUN(registry_handles_and_names);
	RUN(threads_names_and_async);
	RUN(async_ranges_ended_in_any_order);
	RUN(push_pop_with_lost_records);
	RUN(start_end_and_registered_by_hand);
	RUN(async_table_wraps_around_its_end);
	RUN(records_longer_than_a_block);
	RUN(durable_logs_past_their_first_pages);
	RUN(open_ranges_hold_the_watermark);
	RUN(full_buffers_count_what_they_drop);
	RUN(capture_schedule);
	RUN(capture_by_start_end_any_domain);
	RUN(recording_window);
	RUN(program_closes_every_descriptor);
	RUN(fork_child_has_its_own_spool);
	RUN(fork_waits_for_the_flusher);
	RUN(flush_hooks_and_holds_past_their_tables);
	RUN(options_from_the_environment);
	RUN(exit_flush_writes_open_ranges_and_ends);
	remove_spool();
	return tap_done();
}

#endif
