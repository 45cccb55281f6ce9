/* SPDX-License-Identifier: MIT */
/*
 * The NVTX v3 injection interface.  Every copy of the NVTX headers in a
 * process (the program's, libtorch's, the Python package's...) loads
 * this library through NVTX_INJECTION64_PATH on its first call and
 * calls InitializeInjectionNvtx2 with its export table; we fill its
 * callback tables (nvtxDetail/nvtxTypes.h: modules CORE, CORE2, CUDA,
 * CUDART) with the functions below.
 *
 * The range, mark and pop callbacks are the hot path: they read the
 * clock and append a record to the calling thread's buffer, copying
 * the message.  Everything else (names, domains, categories) is rare.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "tbuf.h"

/* start/end range ids: the flags ride in the top bits */
#define ID_SKIP (1ull << 63)      /* not recorded: its end is not either */
#define ID_CAPTURE (1ull << 62)   /* an occurrence of the capture range */
#define ID_MASK (ID_CAPTURE - 1)

/* A message, as given. */
struct message {
	const char *s;
	uint32_t len;
	uint32_t string;          /* registered string id */
	int capture;
	char *owned;              /* converted from wide characters */
};

static inline struct tki_domain *
domain_of(nvtxDomainHandle_t h)
{
	return h ? (struct tki_domain *)(void *)h : tki_domain_default();
}

static inline void
text_message(struct message *m, struct tki_domain *d, const char *s)
{
	m->s = s ? s : "";
	size_t n = strlen(m->s);
	m->len = n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)n;
	m->string = 0;
	m->owned = NULL;
	m->capture = tki_cfg.capture && tki_capture_matches(d, m->s, m->len);
}

static void
wide_message(struct message *m, struct tki_domain *d, const wchar_t *w)
{
	size_t n = 0;
	char *s = tki_wide_to_utf8(w, &n);
	text_message(m, d, s ? s : "");
	m->owned = s;
}

/* The fields of an attribute structure the caller's version has. */
#define HAS_FIELD(a, f) \
	((a)->size >= offsetof(nvtxEventAttributes_t, f) + sizeof((a)->f))

static void
attr_message(struct message *m, struct tki_domain *d,
             const nvtxEventAttributes_t *a)
{
	if (!a || !HAS_FIELD(a, message)) {
		text_message(m, d, "");
		return;
	}
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		text_message(m, d, a->message.ascii);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		wide_message(m, d, a->message.unicode);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED: {
		const struct tki_string *r =
			(const struct tki_string *)(const void *)a->message.registered;
		text_message(m, d, "");
		if (r) {
			m->string = r->id;
			m->capture = tki_cfg.capture && r->capture;
		}
		break;
	}
	default:
		text_message(m, d, "");
		break;
	}
}

/* Category, colour and payload; 0 when there are none. */
static int
attr_values(const nvtxEventAttributes_t *a, struct tki_attrs *o)
{
	memset(o, 0, sizeof(*o));
	if (!a)
		return 0;
	if (HAS_FIELD(a, category))
		o->category = a->category;
	if (HAS_FIELD(a, color) && a->colorType == NVTX_COLOR_ARGB)
		o->color = a->color;
	if (HAS_FIELD(a, payload)) {
		switch (a->payloadType) {
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
			o->payload_type = TK_PAYLOAD_UINT;
			o->payload = a->payload.ullValue;
			break;
		case NVTX_PAYLOAD_TYPE_INT64:
			o->payload_type = TK_PAYLOAD_INT;
			o->payload = (uint64_t)a->payload.llValue;
			break;
		case NVTX_PAYLOAD_TYPE_DOUBLE:
			o->payload_type = TK_PAYLOAD_DOUBLE;
			memcpy(&o->payload, &a->payload.dValue, 8);
			break;
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
			o->payload_type = TK_PAYLOAD_UINT;
			o->payload = a->payload.uiValue;
			break;
		case NVTX_PAYLOAD_TYPE_INT32:
			o->payload_type = TK_PAYLOAD_INT;
			o->payload = (uint64_t)(int64_t)a->payload.iValue;
			break;
		case NVTX_PAYLOAD_TYPE_FLOAT: {
			double d = a->payload.fValue;
			o->payload_type = TK_PAYLOAD_DOUBLE;
			memcpy(&o->payload, &d, 8);
			break;
		}
		}
	}
	return o->category || o->color || o->payload_type;
}

/* ---- records -------------------------------------------------------------------- */

static inline struct tki_thread *
self(void)
{
	struct tki_thread *t = tki_self;
	if (likely(t))
		return t;
	return tki_thread_attach();
}

static inline void
dropped(struct tki_thread *t)
{
	__atomic_fetch_add(t->dropped, 1, __ATOMIC_RELAXED);
}

/* A push, mark or start record; 0 when written. */
static inline int
put_message(struct tki_thread *t, uint8_t type, struct tki_domain *d,
            int64_t ts, uint64_t id, const struct tki_attrs *a,
            const struct message *m, uint32_t level)
{
	uint32_t size = (uint32_t)sizeof(struct tki_rec) +
	                (type == TKI_REC_START ? 8u : 0u) +
	                (a ? (uint32_t)sizeof(*a) : 0u) +
	                (uint32_t)sizeof(struct tki_msg) +
	                (m->string ? 0u : tki_align8(m->len));
	uint8_t *p = tki_reserve(t, size);
	if (unlikely(!p)) {
		dropped(t);
		return -1;
	}
	struct tki_rec *r = (struct tki_rec *)p;
	r->type = type;
	r->flags = (uint8_t)((a ? TKI_F_ATTRS : 0) |
	                     (m->string ? TKI_F_REGISTERED : 0) |
	                     (m->capture ? TKI_F_CAPTURE : 0));
	r->domain = (uint16_t)d->id;
	r->size = size;
	r->ts = ts;
	p += sizeof(*r);
	if (type == TKI_REC_START) {
		memcpy(p, &id, 8);
		p += 8;
	}
	if (a) {
		memcpy(p, a, sizeof(*a));
		p += sizeof(*a);
	}
	struct tki_msg *msg = (struct tki_msg *)p;
	msg->len = m->string ? 0 : m->len;
	msg->string = m->string;
	msg->level = level;
	msg->pad = 0;
	if (!m->string)
		memcpy(msg + 1, m->s, m->len);
	tki_commit(t, size);
	tki_count(t);
	return 0;
}

static inline int
recording(int64_t ts)
{
	return atomic_load_explicit(&tki_on, memory_order_relaxed) &&
	       tki_recording(ts);
}

static int
push(struct tki_domain *d, const struct tki_attrs *a, struct message *m)
{
	struct tki_thread *t = self();
	if (unlikely(!t))
		return NVTX_NO_PUSH_POP_TRACKING;
	struct tki_levels *lv = tki_levels(t, d->id);
	if (unlikely(!lv)) {
		/* no memory for the domain's levels: the range is lost,
		 * and counted as lost to memory (not as full buffers) */
		if (atomic_load_explicit(&tki_on, memory_order_relaxed))
			tki_spool_count_nomem(1);
		return NVTX_NO_PUSH_POP_TRACKING;
	}
	uint32_t level = lv->depth++;
	uint8_t flag = 0;
	if (unlikely(m->capture)) {
		flag = TKI_LEVEL_CAPTURE;
		tki_capture_begin();
	}
	int64_t ts = tki_now();
	if (!recording(ts) || put_message(t, TKI_REC_PUSH, d, ts, 0, a, m, level))
		flag |= TKI_LEVEL_SKIP;
	if (likely(level < TKI_LEVELS))
		lv->flag[level] = flag;
	return (int)level;
}

static int
pop(struct tki_domain *d)
{
	struct tki_thread *t = self();
	if (unlikely(!t))
		return NVTX_NO_PUSH_POP_TRACKING;
	struct tki_levels *lv = tki_levels(t, d->id);
	if (unlikely(!lv || lv->depth == 0))
		return -1; /* a pop without a push */
	uint32_t level = --lv->depth;
	uint8_t flag = level < TKI_LEVELS ? lv->flag[level] : 0;
	if (!(flag & TKI_LEVEL_SKIP) &&
	    atomic_load_explicit(&tki_on, memory_order_relaxed)) {
		const uint32_t size = sizeof(struct tki_rec) + sizeof(struct tki_pop);
		uint8_t *p = tki_reserve(t, size);
		if (likely(p != NULL)) {
			struct tki_rec *r = (struct tki_rec *)p;
			r->type = TKI_REC_POP;
			r->flags = 0;
			r->domain = (uint16_t)d->id;
			r->size = size;
			r->ts = tki_now();
			struct tki_pop *q = (struct tki_pop *)(r + 1);
			q->level = level;
			q->pad = 0;
			tki_commit(t, size);
		}
	}
	if (unlikely(flag & TKI_LEVEL_CAPTURE))
		tki_capture_end();
	return (int)level;
}

static void
mark(struct tki_domain *d, const struct tki_attrs *a, const struct message *m)
{
	struct tki_thread *t = self();
	if (unlikely(!t))
		return;
	int64_t ts = tki_now();
	if (recording(ts))
		put_message(t, TKI_REC_MARK, d, ts, 0, a, m, 0);
}

static nvtxRangeId_t
start(struct tki_domain *d, const struct tki_attrs *a, const struct message *m)
{
	struct tki_thread *t = self();
	if (unlikely(!t))
		return 0;
	uint64_t id = t->next_range_id++ & ID_MASK;
	if (unlikely(m->capture)) {
		tki_capture_begin();
		id |= ID_CAPTURE;
	}
	int64_t ts = tki_now();
	if (!recording(ts) ||
	    put_message(t, TKI_REC_START, d, ts, id & ID_MASK, a, m, 0))
		id |= ID_SKIP;
	return id;
}

static void
end(struct tki_domain *d, nvtxRangeId_t id)
{
	if (!(id & ID_SKIP) && id &&
	    atomic_load_explicit(&tki_on, memory_order_relaxed)) {
		struct tki_thread *t = self();
		const uint32_t size = sizeof(struct tki_rec) + 8;
		uint8_t *p = t ? tki_reserve(t, size) : NULL;
		if (p) {
			struct tki_rec *r = (struct tki_rec *)p;
			uint64_t v = id & ID_MASK;
			r->type = TKI_REC_END;
			r->flags = 0;
			r->domain = (uint16_t)d->id;
			r->size = size;
			r->ts = tki_now();
			memcpy(r + 1, &v, 8);
			tki_commit(t, size);
		}
	}
	if (id & ID_CAPTURE)
		tki_capture_end();
}

/* ---- core callbacks ----------------------------------------------------------------- */

static void
cb_mark_ex(const nvtxEventAttributes_t *ea)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	struct tki_attrs a;
	attr_message(&m, d, ea);
	mark(d, attr_values(ea, &a) ? &a : NULL, &m);
	free(m.owned);
}

static void
cb_mark_a(const char *s)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	text_message(&m, d, s);
	mark(d, NULL, &m);
}

static void
cb_mark_w(const wchar_t *s)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	wide_message(&m, d, s);
	mark(d, NULL, &m);
	free(m.owned);
}

static nvtxRangeId_t
cb_start_ex(const nvtxEventAttributes_t *ea)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	struct tki_attrs a;
	attr_message(&m, d, ea);
	nvtxRangeId_t id = start(d, attr_values(ea, &a) ? &a : NULL, &m);
	free(m.owned);
	return id;
}

static nvtxRangeId_t
cb_start_a(const char *s)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	text_message(&m, d, s);
	return start(d, NULL, &m);
}

static nvtxRangeId_t
cb_start_w(const wchar_t *s)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	wide_message(&m, d, s);
	nvtxRangeId_t id = start(d, NULL, &m);
	free(m.owned);
	return id;
}

static void
cb_end(nvtxRangeId_t id)
{
	end(tki_domain_default(), id);
}

static int
cb_push_ex(const nvtxEventAttributes_t *ea)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	struct tki_attrs a;
	attr_message(&m, d, ea);
	int level = push(d, attr_values(ea, &a) ? &a : NULL, &m);
	free(m.owned);
	return level;
}

static int
cb_push_a(const char *s)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	text_message(&m, d, s);
	return push(d, NULL, &m);
}

static int
cb_push_w(const wchar_t *s)
{
	struct tki_domain *d = tki_domain_default();
	struct message m;
	wide_message(&m, d, s);
	int level = push(d, NULL, &m);
	free(m.owned);
	return level;
}

static int
cb_pop(void)
{
	return pop(tki_domain_default());
}

static void
cb_name_category_a(uint32_t category, const char *name)
{
	tki_category_set(0, category, name);
}

static void
cb_name_category_w(uint32_t category, const wchar_t *name)
{
	size_t n;
	char *s = tki_wide_to_utf8(name, &n);
	tki_category_set(0, category, s);
	free(s);
}

static void
cb_name_thread_a(uint32_t tid, const char *name)
{
	tki_thread_name_set(tid, name);
}

static void
cb_name_thread_w(uint32_t tid, const wchar_t *name)
{
	size_t n;
	char *s = tki_wide_to_utf8(name, &n);
	tki_thread_name_set(tid, s);
	free(s);
}

/* ---- core2: domains ----------------------------------------------------------------- */

static void
cb_domain_mark_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *ea)
{
	struct tki_domain *d = domain_of(h);
	struct message m;
	struct tki_attrs a;
	attr_message(&m, d, ea);
	mark(d, attr_values(ea, &a) ? &a : NULL, &m);
	free(m.owned);
}

static nvtxRangeId_t
cb_domain_start_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *ea)
{
	struct tki_domain *d = domain_of(h);
	struct message m;
	struct tki_attrs a;
	attr_message(&m, d, ea);
	nvtxRangeId_t id = start(d, attr_values(ea, &a) ? &a : NULL, &m);
	free(m.owned);
	return id;
}

static void
cb_domain_end(nvtxDomainHandle_t h, nvtxRangeId_t id)
{
	end(domain_of(h), id);
}

static int
cb_domain_push_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t *ea)
{
	struct tki_domain *d = domain_of(h);
	struct message m;
	struct tki_attrs a;
	attr_message(&m, d, ea);
	int level = push(d, attr_values(ea, &a) ? &a : NULL, &m);
	free(m.owned);
	return level;
}

static int
cb_domain_pop(nvtxDomainHandle_t h)
{
	return pop(domain_of(h));
}

static char resource_dummy;

static nvtxResourceHandle_t
cb_resource_create(nvtxDomainHandle_t h, nvtxResourceAttributes_t *attr)
{
	(void)h;
	(void)attr;
	return (nvtxResourceHandle_t)(void *)&resource_dummy;
}

static void
cb_resource_destroy(nvtxResourceHandle_t r)
{
	(void)r;
}

static void
cb_domain_category_a(nvtxDomainHandle_t h, uint32_t category, const char *name)
{
	tki_category_set(domain_of(h)->id, category, name);
}

static void
cb_domain_category_w(nvtxDomainHandle_t h, uint32_t category,
                     const wchar_t *name)
{
	size_t n;
	char *s = tki_wide_to_utf8(name, &n);
	tki_category_set(domain_of(h)->id, category, s);
	free(s);
}

static nvtxStringHandle_t
cb_register_a(nvtxDomainHandle_t h, const char *s)
{
	if (!s)
		s = "";
	return (nvtxStringHandle_t)(void *)tki_string_register(domain_of(h), s,
	                                                      strlen(s));
}

static nvtxStringHandle_t
cb_register_w(nvtxDomainHandle_t h, const wchar_t *w)
{
	size_t n;
	char *s = tki_wide_to_utf8(w, &n);
	if (!s)
		return NULL;
	struct tki_string *r = tki_string_register(domain_of(h), s, n);
	free(s);
	return (nvtxStringHandle_t)(void *)r;
}

static nvtxDomainHandle_t
cb_domain_create_a(const char *name)
{
	return (nvtxDomainHandle_t)(void *)tki_domain_get(name);
}

static nvtxDomainHandle_t
cb_domain_create_w(const wchar_t *name)
{
	size_t n;
	char *s = tki_wide_to_utf8(name, &n);
	struct tki_domain *d = s ? tki_domain_get(s) : NULL;
	free(s);
	return (nvtxDomainHandle_t)(void *)d;
}

static void
cb_domain_destroy(nvtxDomainHandle_t h)
{
	(void)h; /* handles stay valid: records may still name the domain */
}

static void
cb_initialize(const void *reserved)
{
	(void)reserved;
}

/* ---- CUDA object names --------------------------------------------------------------- */

#define NAME_CB(fn, kind, type, conv)                                        \
	static void fn##_a(type obj, const char *name)                       \
	{                                                                    \
		tki_resource_name_set(kind, conv, name);                     \
	}                                                                    \
	static void fn##_w(type obj, const wchar_t *name)                    \
	{                                                                    \
		size_t n;                                                    \
		char *s = tki_wide_to_utf8(name, &n);                        \
		tki_resource_name_set(kind, conv, s);                        \
		free(s);                                                     \
	}

NAME_CB(cb_cu_device, TKI_RES_CU_DEVICE, nvtx_CUdevice, (uint64_t)(int64_t)obj)
NAME_CB(cb_cu_context, TKI_RES_CU_CONTEXT, nvtx_CUcontext, (uint64_t)(uintptr_t)obj)
NAME_CB(cb_cu_stream, TKI_RES_CU_STREAM, nvtx_CUstream, (uint64_t)(uintptr_t)obj)
NAME_CB(cb_cu_event, TKI_RES_CU_EVENT, nvtx_CUevent, (uint64_t)(uintptr_t)obj)
NAME_CB(cb_cuda_device, TKI_RES_CUDA_DEVICE, int, (uint64_t)(int64_t)obj)
NAME_CB(cb_cuda_stream, TKI_RES_CUDA_STREAM, nvtx_cudaStream_t, (uint64_t)(uintptr_t)obj)
NAME_CB(cb_cuda_event, TKI_RES_CUDA_EVENT, nvtx_cudaEvent_t, (uint64_t)(uintptr_t)obj)

/* ---- tables --------------------------------------------------------------------------- */

#define FN(f) ((NvtxFunctionPointer)(f))

struct slot {
	unsigned id;
	NvtxFunctionPointer fn;
};

static const struct slot core[] = {
	{ NVTX_CBID_CORE_MarkEx, FN(cb_mark_ex) },
	{ NVTX_CBID_CORE_MarkA, FN(cb_mark_a) },
	{ NVTX_CBID_CORE_MarkW, FN(cb_mark_w) },
	{ NVTX_CBID_CORE_RangeStartEx, FN(cb_start_ex) },
	{ NVTX_CBID_CORE_RangeStartA, FN(cb_start_a) },
	{ NVTX_CBID_CORE_RangeStartW, FN(cb_start_w) },
	{ NVTX_CBID_CORE_RangeEnd, FN(cb_end) },
	{ NVTX_CBID_CORE_RangePushEx, FN(cb_push_ex) },
	{ NVTX_CBID_CORE_RangePushA, FN(cb_push_a) },
	{ NVTX_CBID_CORE_RangePushW, FN(cb_push_w) },
	{ NVTX_CBID_CORE_RangePop, FN(cb_pop) },
	{ NVTX_CBID_CORE_NameCategoryA, FN(cb_name_category_a) },
	{ NVTX_CBID_CORE_NameCategoryW, FN(cb_name_category_w) },
	{ NVTX_CBID_CORE_NameOsThreadA, FN(cb_name_thread_a) },
	{ NVTX_CBID_CORE_NameOsThreadW, FN(cb_name_thread_w) },
};

static const struct slot core2[] = {
	{ NVTX_CBID_CORE2_DomainMarkEx, FN(cb_domain_mark_ex) },
	{ NVTX_CBID_CORE2_DomainRangeStartEx, FN(cb_domain_start_ex) },
	{ NVTX_CBID_CORE2_DomainRangeEnd, FN(cb_domain_end) },
	{ NVTX_CBID_CORE2_DomainRangePushEx, FN(cb_domain_push_ex) },
	{ NVTX_CBID_CORE2_DomainRangePop, FN(cb_domain_pop) },
	{ NVTX_CBID_CORE2_DomainResourceCreate, FN(cb_resource_create) },
	{ NVTX_CBID_CORE2_DomainResourceDestroy, FN(cb_resource_destroy) },
	{ NVTX_CBID_CORE2_DomainNameCategoryA, FN(cb_domain_category_a) },
	{ NVTX_CBID_CORE2_DomainNameCategoryW, FN(cb_domain_category_w) },
	{ NVTX_CBID_CORE2_DomainRegisterStringA, FN(cb_register_a) },
	{ NVTX_CBID_CORE2_DomainRegisterStringW, FN(cb_register_w) },
	{ NVTX_CBID_CORE2_DomainCreateA, FN(cb_domain_create_a) },
	{ NVTX_CBID_CORE2_DomainCreateW, FN(cb_domain_create_w) },
	{ NVTX_CBID_CORE2_DomainDestroy, FN(cb_domain_destroy) },
	{ NVTX_CBID_CORE2_Initialize, FN(cb_initialize) },
};

static const struct slot cuda[] = {
	{ NVTX_CBID_CUDA_NameCuDeviceA, FN(cb_cu_device_a) },
	{ NVTX_CBID_CUDA_NameCuDeviceW, FN(cb_cu_device_w) },
	{ NVTX_CBID_CUDA_NameCuContextA, FN(cb_cu_context_a) },
	{ NVTX_CBID_CUDA_NameCuContextW, FN(cb_cu_context_w) },
	{ NVTX_CBID_CUDA_NameCuStreamA, FN(cb_cu_stream_a) },
	{ NVTX_CBID_CUDA_NameCuStreamW, FN(cb_cu_stream_w) },
	{ NVTX_CBID_CUDA_NameCuEventA, FN(cb_cu_event_a) },
	{ NVTX_CBID_CUDA_NameCuEventW, FN(cb_cu_event_w) },
};

static const struct slot cudart[] = {
	{ NVTX_CBID_CUDART_NameCudaDeviceA, FN(cb_cuda_device_a) },
	{ NVTX_CBID_CUDART_NameCudaDeviceW, FN(cb_cuda_device_w) },
	{ NVTX_CBID_CUDART_NameCudaStreamA, FN(cb_cuda_stream_a) },
	{ NVTX_CBID_CUDART_NameCudaStreamW, FN(cb_cuda_stream_w) },
	{ NVTX_CBID_CUDART_NameCudaEventA, FN(cb_cuda_event_a) },
	{ NVTX_CBID_CUDART_NameCudaEventW, FN(cb_cuda_event_w) },
};

/* Fill what this NVTX instance's table has room for: an older NVTX
 * has fewer entries. */
static int
install(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
        const struct slot *slots, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (slots[i].id < size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	return 1;
}

TKI_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

/* Without the default visibility the NVTX loader does not find this,
 * and says nothing: the library is built with -fvisibility=hidden. */
TKI_EXPORT int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	if (!get || tki_init() != 0)
		return 0;
	const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	if (!install(cb, NVTX_CB_MODULE_CORE, core, sizeof(core) / sizeof(core[0])))
		return 0;
	install(cb, NVTX_CB_MODULE_CORE2, core2, sizeof(core2) / sizeof(core2[0]));
	install(cb, NVTX_CB_MODULE_CUDA, cuda, sizeof(cuda) / sizeof(cuda[0]));
	install(cb, NVTX_CB_MODULE_CUDART, cudart, sizeof(cudart) / sizeof(cudart[0]));
	const NvtxExportTableVersionInfo *vi = get(NVTX_ETID_VERSIONINFO);
	if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
		vi->SetInjectionNvtxVersion(NVTX_VERSION);
	return 1;
}
