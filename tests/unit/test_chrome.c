/* SPDX-License-Identifier: MIT */
/* The parts of trace-to-chrome: number formats, the reorder buffer, the
 * nesting placement and the flow matcher, checked against brute force. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "trace-to-chrome/chrome.h"

static const char *
text(struct sbuf *b)
{
	sb_ch(b, 0);
	b->len--;
	return b->p;
}

TEST(numbers)
{
	static const struct { int64_t ns; const char *us; } us[] = {
		{ 0, "0" }, { 5000, "5" }, { 1500, "1.5" }, { 1234567, "1234.567" },
		{ 1001, "1.001" }, { 10, "0.01" }, { -1500, "-1.5" },
		{ INT64_MIN, "-9223372036854775.808" },
	};
	for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
		struct sbuf b = { 0 };
		sb_us(&b, us[i].ns);
		CHECK_STR(text(&b), us[i].us);
		sb_free(&b);
	}
	static const uint64_t u[] = { 0, 9, 10, 99, 100, 101, 12345, UINT64_MAX };
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		struct sbuf b = { 0 };
		char want[32];
		snprintf(want, sizeof(want), "%llu", (unsigned long long)u[i]);
		sb_u64(&b, u[i]);
		CHECK_STR(text(&b), want);
		sb_free(&b);
	}
	struct sbuf b = { 0 };
	sb_dbl(&b, 0.1);
	sb_ch(&b, ' ');
	sb_dbl(&b, 1887436800.0);
	sb_ch(&b, ' ');
	sb_dbl(&b, 1.0 / 0.0);
	CHECK_STR(text(&b), "0.1 1887436800 null");
	sb_free(&b);
}

static int
entry_before(const struct chrome_entry *a, const struct chrome_entry *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->end != b->end)
		return a->end > b->end;
	return a->seq < b->seq;
}

TEST(reorder)
{
	/* random entries, partly in order, released at random bounds: what
	 * comes out is in key order below each bound, and all of it */
	struct chrome_reorder ro;
	chrome_reorder_init(&ro, (size_t)1 << 30);
	srand(7);
	int64_t t = 0, bound = INT64_MIN;
	size_t pushed = 0, popped = 0, bad = 0;
	struct chrome_entry last = { 0 };
	int have_last = 0;
	for (int round = 0; round < 200; round++) {
		for (int k = 0; k < 100; k++) {
			struct chrome_entry e = { 0 };
			t += rand() % 50;
			e.ts = rand() % 3 ? t : t - rand() % 500;  /* some late */
			if (e.ts < bound)
				e.ts = bound;  /* a watermark is a promise */
			e.end = e.ts + rand() % 100;
			char txt[16];
			int n = snprintf(txt, sizeof(txt), "%lld", (long long)e.ts);
			e.head_len = (uint32_t)n;
			chrome_reorder_push(&ro, &e, txt, (size_t)n);
			pushed++;
		}
		bound = t - 600;
		struct chrome_entry e;
		const char *p;
		while (chrome_reorder_pop(&ro, bound, &e, &p)) {
			char want[16];
			snprintf(want, sizeof(want), "%lld", (long long)e.ts);
			if (e.ts >= bound || (have_last && entry_before(&e, &last)) ||
			    strlen(want) != e.head_len || memcmp(p, want, e.head_len) != 0)
				bad++;
			last = e;
			have_last = 1;
			chrome_reorder_done(&ro, &e);
			popped++;
		}
	}
	struct chrome_entry e;
	const char *p;
	while (chrome_reorder_pop(&ro, INT64_MAX, &e, &p)) {
		if (have_last && entry_before(&e, &last))
			bad++;
		last = e;
		chrome_reorder_done(&ro, &e);
		popped++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(popped, pushed);
	CHECK(ro.held <= (1u << 20));  /* only the slab being filled */
	chrome_reorder_free(&ro);
}

TEST(placement)
{
	/* random intervals in begin order (and some late ones) on one base
	 * track: every resulting track must be strictly nested */
	struct chrome_layout l;
	chrome_layout_init(&l);
	l.max_overflow = 1000;
	struct tk_track th = { 1, TK_TRACK_THREAD, { .thread = { 0, 7, "main" } } };
	const struct chrome_tkmap *m = chrome_layout_map(&l, NULL, &th);
	uint32_t base = m->ctrack;
	enum { N = 3000 };
	static struct { int64_t b, e; uint32_t t; } s[N];
	srand(11);
	int64_t t = 0;
	for (int i = 0; i < N; i++) {
		t += rand() % 20;
		s[i].b = i % 50 == 49 ? t - 100 : t;
		s[i].e = s[i].b + rand() % 200;
		s[i].t = chrome_layout_place(&l, base, s[i].b, s[i].e);
	}
	size_t bad = 0, moved = 0;
	for (int i = 0; i < N; i++) {
		moved += s[i].t != base;
		if (!s[i].t)
			bad++;
		for (int j = 0; j < N; j++) {
			if (i == j || s[i].t != s[j].t)
				continue;
			/* overlap without nesting */
			if (s[i].b < s[j].b && s[j].b < s[i].e && s[i].e < s[j].e)
				bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(moved, l.moved);
	CHECK(moved > 0 && moved < N);
	/* the names of the extra tracks say whose they are */
	CHECK_STR(l.tracks[l.tracks[base].next_overflow].name, "main (overlap 1)");
	chrome_layout_free(&l);
}

static uint64_t pairs[16][4];
static int npairs;

static void
record(void *ctx, uint64_t id, uint32_t at, int64_t ats, uint32_t gt, int64_t gts)
{
	(void)ctx;
	(void)id;
	if (npairs < 16) {
		pairs[npairs][0] = at;
		pairs[npairs][1] = (uint64_t)ats;
		pairs[npairs][2] = gt;
		pairs[npairs][3] = (uint64_t)gts;
	}
	npairs++;
}

TEST(flows)
{
	struct chrome_flows f;
	chrome_flows_init(&f, 4, record, NULL);
	chrome_flows_add(&f, CF_API, 1, 10, 1, 100);   /* call, then its kernel */
	chrome_flows_add(&f, CF_GPU, 1, 10, 2, 150);
	CHECK_EQ_INT(npairs, 1);
	CHECK(pairs[0][0] == 1 && pairs[0][1] == 100 && pairs[0][2] == 2 && pairs[0][3] == 150);
	chrome_flows_add(&f, CF_GPU, 1, 10, 3, 160);   /* a graph: more work */
	CHECK_EQ_INT(npairs, 2);
	chrome_flows_add(&f, CF_GPU, 1, 11, 2, 170);   /* work before its call */
	chrome_flows_add(&f, CF_GPU, 2, 11, 2, 170);   /* same id, other trace */
	chrome_flows_add(&f, CF_API, 1, 11, 1, 120);
	CHECK_EQ_INT(npairs, 3);
	CHECK(pairs[2][1] == 120 && pairs[2][3] == 170);
	/* the ring holds 4: old entries give way, orphaned work is counted */
	for (uint64_t c = 20; c < 30; c++)
		chrome_flows_add(&f, CF_API, 1, c, 1, (int64_t)c);
	chrome_flows_add(&f, CF_GPU, 1, 10, 2, 999);   /* its call is gone */
	CHECK_EQ_INT(npairs, 3);
	chrome_flows_finish(&f);
	CHECK_EQ_INT(f.unmatched_gpu, 2);  /* scope 2's and the last one */
	chrome_flows_free(&f);
}

/* The matcher against a model that searches the whole ring: random calls
 * and GPU work over a few correlation ids and two scopes, a ring of 8, so
 * that entries give way all the time, work often comes before its call,
 * and chains cross reused slots (the matcher reads chains lazily). */
struct flow_log {
	uint64_t (*v)[5];
	size_t n, cap;
};

static void
log_flow(void *ctx, uint64_t id, uint32_t at, int64_t ats, uint32_t gt, int64_t gts)
{
	struct flow_log *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	uint64_t *e = l->v[l->n++];
	e[0] = id;
	e[1] = at;
	e[2] = (uint64_t)ats;
	e[3] = gt;
	e[4] = (uint64_t)gts;
}

struct model_end {
	int role;
	uint32_t scope, ctrack;
	uint64_t corr, serial;
	int64_t ts;
};

TEST(flows_against_a_model)
{
	enum { CAP = 8, OPS = 200000 };
	struct chrome_flows f;
	struct flow_log got = { 0 }, want = { 0 };
	chrome_flows_init(&f, CAP, log_flow, &got);
	struct model_end ring[CAP] = { { 0 } };
	unsigned head = 0;
	uint64_t serial = 1, next_id = UINT64_C(1) << 52, unmatched = 0;
	uint32_t seed = 12345;
	for (int op = 0; op < OPS; op++) {
		seed = seed * 1103515245u + 12345u;
		uint32_t r = seed >> 8;
		int role = (r & 1) ? CF_GPU : CF_API;
		uint32_t scope = 1 + (r >> 1 & 1);
		uint64_t corr = (r >> 2) % 12;
		uint32_t ctrack = r >> 6 & 7;
		int64_t ts = op;
		chrome_flows_add(&f, role, scope, corr, ctrack, ts);
		/* the model: newest first, by serial */
		int inserted = 1;
		for (;;) {
			int best = -1;
			for (int i = 0; i < CAP; i++)
				if (ring[i].role && ring[i].role != role && ring[i].scope == scope &&
				    ring[i].corr == corr && (best < 0 || ring[i].serial > ring[best].serial))
					best = i;
			if (best < 0)
				break;
			if (role == CF_GPU) {
				log_flow(&want, next_id++, ring[best].ctrack, ring[best].ts, ctrack, ts);
				inserted = 0;
				break;
			}
			log_flow(&want, next_id++, ctrack, ts, ring[best].ctrack, ring[best].ts);
			ring[best].role = 0;
		}
		if (inserted) {
			if (ring[head].role == CF_GPU)
				unmatched++;
			ring[head] = (struct model_end){ role, scope, ctrack, corr, serial++, ts };
			head = (head + 1) % CAP;
		}
	}
	chrome_flows_finish(&f);
	for (int i = 0; i < CAP; i++)
		unmatched += ring[i].role == CF_GPU;
	CHECK(want.n > OPS / 10);  /* the mix matches often */
	CHECK_EQ_INT(got.n, want.n);
	CHECK(got.n == want.n && memcmp(got.v, want.v, got.n * sizeof(*got.v)) == 0);
	CHECK_EQ_INT(f.unmatched_gpu, unmatched);
	chrome_flows_free(&f);
	free(got.v);
	free(want.v);
}

/* sb_dbl_exact() against what it replaces: printf at 15, 16, then 17
 * digits until the text reads back.  Random doubles of every magnitude,
 * the durations trace-to-chrome writes with it (whole nanoseconds / 1000,
 * a few units in the last place off), short decimals and their
 * neighbours, powers of ten, and ties at the 16th and 17th digit. */
static void
dbl_reference(char *out, size_t size, double v)
{
	for (int p = 15; p <= 17; p++) {
		snprintf(out, size, "%.*g", p, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

static int
dbl_same(double v)
{
	char want[64];
	struct sbuf b = { 0 };
	dbl_reference(want, sizeof(want), v);
	sb_dbl_exact(&b, v);
	int same = strcmp(text(&b), want) == 0;
	if (!same)
		fprintf(stderr, "# %.17g: %s, printf %s\n", v, text(&b), want);
	sb_free(&b);
	return same;
}

TEST(exact_doubles)
{
	uint64_t seed = 88172645463325252ull;
	long bad = 0, n = 0;
	double powers[] = { 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 1e3, 1e9, 1e14, 1e15, 1e16, 1e17 };
	for (size_t i = 0; i < sizeof(powers) / sizeof(powers[0]); i++)
		for (int side = -1; side <= 1; side += 2) {
			double v = powers[i];
			for (int k = 0; k < 40; k++, n++) {
				bad += !dbl_same(v) + !dbl_same(-v);
				v = nextafter(v, side * INFINITY);
			}
		}
	for (int i = 0; i < 300000; i++, n++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		double v;
		switch (i % 5) {
		case 0: /* any finite double */
			memcpy(&v, &seed, sizeof(v));
			if (!isfinite(v))
				continue;
			break;
		case 1: { /* a duration: ns / 1000, nudged a few ulps */
			v = (double)(seed >> 24) / 1000;
			for (int k = (int)(seed & 7); k > 0; k--)
				v = nextafter(v, (seed & 8) ? INFINITY : 0);
			break;
		}
		case 2: /* short decimals and their neighbours */
			v = (double)(seed % 1000000) / 1000 + (double)(seed >> 40 & 0xffff);
			if (seed & 1)
				v = nextafter(v, INFINITY);
			break;
		case 3: /* 16 and 17 digits ending in 5: ties after rounding */
			v = (double)(seed % 1000000000000000ull) + 0.5;
			break;
		default: /* a value in the range of a trace, any bits below */
			v = ldexp((double)(seed >> 11), -(int)(seed % 70));
			break;
		}
		bad += !dbl_same(v) + !dbl_same(-v);
	}
	CHECK(n > 300000);
	CHECK_EQ_INT(bad, 0);
}

int
main(void)
{
	RUN(numbers);
	RUN(exact_doubles);
	RUN(reorder);
	RUN(placement);
	RUN(flows);
	RUN(flows_against_a_model);
	return tap_done();
}
