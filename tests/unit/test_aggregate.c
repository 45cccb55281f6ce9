/* SPDX-License-Identifier: MIT */
/*
 * The aggregation behind trace-stats and trace-diff: interval unions
 * (cmd/analysis/busy.c) against a bitmap, per-instance attribution
 * (cmd/analysis/perinst.c) on hand-made cases, and the aggregator
 * (cmd/analysis/aggregate.c) on small traces written here with known answers,
 * sorted and not.
 */
#include <math.h>

#include "tap.h"
#include "helpers.h"
#include "analysis/aggregate.h"
#include "analysis/allocpeak.h"
#include "analysis/breakdown.h"
#include "analysis/busy.h"
#include "analysis/opview.h"
#include "analysis/steps.h"
#include "analysis/perinst.h"
#include "common/strmap.h"
#include "common/util.h"

/* ---- busy ---------------------------------------------------------------------- */

#define SPAN 20000

/* Length of the union by marking every covered nanosecond. */
static int64_t
bitmap_union(const int64_t (*iv)[3], size_t n, int cls)
{
	static unsigned char covered[SPAN + 2000];
	memset(covered, 0, sizeof(covered));
	for (size_t i = 0; i < n; i++)
		if (cls < 0 || iv[i][2] == cls)
			for (int64_t t = iv[i][0]; t < iv[i][1]; t++)
				covered[t] = 1;
	int64_t total = 0;
	for (size_t t = 0; t < sizeof(covered); t++)
		total += covered[t];
	return total;
}

TEST(busy_union_any_order)
{
	int ok = 1;
	for (int round = 0; round < 60 && ok; round++) {
		size_t n = 1 + rnd_below(400);
		int64_t (*iv)[3] = malloc(n * sizeof(*iv));
		for (size_t i = 0; i < n; i++) {
			iv[i][0] = (int64_t)rnd_below(SPAN);
			iv[i][1] = iv[i][0] + (int64_t)rnd_below(round % 3 ? 300 : 1500);
			iv[i][2] = (int64_t)rnd_below(2);
		}
		/* deliver in begin order with local shuffles, releasing at
		 * watermarks that are true (the earliest begin still to come) */
		size_t *order = malloc(n * sizeof(*order));
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (iv[order[j]][0] < iv[order[i]][0]) {
					size_t t = order[i]; order[i] = order[j]; order[j] = t;
				}
		size_t window = 1 + rnd_below(20);
		for (size_t i = 0; i + 1 < n; i++)
			if (rnd_below(2)) {
				size_t j = i + rnd_below(window);
				if (j < n) { size_t t = order[i]; order[i] = order[j]; order[j] = t; }
			}
		struct busy b;
		busy_init(&b);
		for (size_t i = 0; i < n; i++) {
			const int64_t *x = iv[order[i]];
			busy_add(&b, (int)x[2], x[0], x[1], 0);
			if (rnd_below(5) == 0) {
				int64_t w = INT64_MAX;
				for (size_t j = i + 1; j < n; j++)
					if (iv[order[j]][0] < w)
						w = iv[order[j]][0];
				busy_release(&b, w);
			}
		}
		busy_release(&b, INT64_MAX);
		ok &= busy_total(&b) == bitmap_union((const int64_t (*)[3])iv, n, -1);
		ok &= busy_class_total(&b, BUSY_KERNEL) == bitmap_union((const int64_t (*)[3])iv, n, BUSY_KERNEL);
		ok &= busy_class_total(&b, BUSY_COPY) == bitmap_union((const int64_t (*)[3])iv, n, BUSY_COPY);
		if (!ok)
			fprintf(stderr, "# round %d: %lld vs %lld\n", round,
			        (long long)busy_total(&b),
			        (long long)bitmap_union((const int64_t (*)[3])iv, n, -1));
		busy_free(&b);
		free(iv);
		free(order);
	}
	CHECK(ok);
}

TEST(busy_settled_fast_path)
{
	/* settled intervals are swept at once, but never ahead of pending
	 * earlier ones */
	struct busy b;
	busy_init(&b);
	busy_add(&b, BUSY_KERNEL, 100, 200, 1);
	busy_add(&b, BUSY_COPY, 150, 300, 1);
	CHECK_EQ_INT(b.pending[0].n + b.pending[1].n, 0);
	busy_add(&b, BUSY_KERNEL, 500, 600, 0);
	busy_add(&b, BUSY_KERNEL, 400, 450, 1);   /* pending exists: buffered */
	CHECK_EQ_INT(b.pending[BUSY_KERNEL].n, 2);
	busy_release(&b, INT64_MAX);
	CHECK_EQ_INT(busy_total(&b), 200 + 50 + 100);
	CHECK_EQ_INT(busy_class_total(&b, BUSY_KERNEL), 100 + 50 + 100);
	CHECK_EQ_INT(busy_class_total(&b, BUSY_COPY), 150);
	CHECK_EQ_INT(b.first, 100);
	CHECK_EQ_INT(b.last, 600);
	busy_free(&b);
}

TEST(pairbuf_ready_and_drop)
{
	struct pairbuf p = { 0 };
	int64_t a[] = { 5, 3, 9, 1, 7 };
	for (int i = 0; i < 5; i++)
		pairbuf_push(&p, a[i], i);
	CHECK(p.unsorted);
	CHECK_EQ_INT(pairbuf_ready(&p, 6), 3);  /* 1, 3, 5 */
	CHECK_EQ_INT(p.v[0].a, 1);
	CHECK_EQ_INT(p.v[2].a, 5);
	pairbuf_drop(&p, 3);
	CHECK_EQ_INT(p.n, 2);
	CHECK_EQ_INT(p.v[0].a, 7);
	CHECK_EQ_INT(pairbuf_ready(&p, INT64_MAX), 2);
	pairbuf_free(&p);
}

TEST(sweep_clamps_lying_order)
{
	/* an interval before the open one (a lying watermark) never counts
	 * time twice */
	struct sweep s = { 0 };
	sweep_add(&s, 100, 200);
	sweep_add(&s, 50, 150);
	sweep_add(&s, 10, 20);
	CHECK_EQ_INT(sweep_total(&s), 100);
}

/* ---- perinst -------------------------------------------------------------------- */

static const struct perinst_child *
child(const struct perinst_result *r, uint32_t group)
{
	for (size_t i = 0; i < r->nchildren; i++)
		if (r->children[i].group == group)
			return &r->children[i];
	return NULL;
}

TEST(perinst_attribution)
{
	struct perinst *p = perinst_new(0, NULL);
	/* thread 2 (of process 1) has steps [0,100) and [100,200); thread 3
	 * (of process 5) one step [0,1000) holding a nested step [10,20) */
	perinst_instance(p, 1, 2, 100, 200);        /* written when it ended */
	perinst_cpu(p, 7, 0, 1, 2, 120, 5);            /* child of step 2 */
	perinst_instance(p, 1, 2, 0, 100);
	perinst_cpu(p, 7, 0, 1, 2, 10, 5);             /* child of step 1 */
	perinst_cpu(p, 7, 0, 1, 2, 30, 5);
	perinst_cpu(p, 8, 0, 1, 2, 250, 5);            /* outside any step */
	perinst_instance(p, 5, 3, 0, 1000);
	perinst_instance(p, 5, 3, 10, 20);
	perinst_cpu(p, 7, 0, 5, 3, 15, 1);             /* innermost: the nested one */
	perinst_cpu(p, 7, 0, 5, 3, 500, 1);            /* the outer one */
	/* a kernel launched in step 1 runs during step 2's time: it is
	 * step 1's (its launch), not step 2's (overlap) */
	perinst_gpu(p, 9, 0, 1, 42, 150, 40);
	perinst_launch(p, 1, 42, 2, 90);
	perinst_gpu(p, 9, 0, 1, 43, 300, 10);    /* launched outside steps */
	perinst_launch(p, 1, 43, 2, 260);
	perinst_gpu(p, 9, 1, 1, 44, 310, 10);    /* no launch call seen */
	perinst_release(p, 50);                  /* partial: nothing breaks */
	perinst_scope_end(p);
	const struct perinst_result *r = perinst_finish(p);
	CHECK(r != NULL);
	CHECK_EQ_INT(r->dur.count, 4);
	CHECK_EQ_INT(r->first, 0);
	CHECK_EQ_INT(r->last, 1000);
	/* instances are numbered as they came: [100,200)=0, [0,100)=1,
	 * [0,1000)=2, [10,20)=3 */
	const struct perinst_child *c7 = child(r, 7);
	CHECK(c7 != NULL);
	CHECK_EQ_INT(c7->count.count, 4);        /* one value per instance */
	size_t n;
	const int64_t *counts = dist_values(&c7->count, &n);
	const int64_t *times = dist_values(&c7->time, &n);
	int64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += counts[i];
	CHECK_EQ_INT(sum, 5);
	CHECK_EQ_INT(c7->instances_with, 4);
	CHECK_EQ_INT(c7->time.total, 5 + 5 + 5 + 1 + 1);
	(void)times;
	CHECK(child(r, 8) == NULL);
	const struct perinst_child *c9 = child(r, 9);
	CHECK(c9 != NULL && c9->time.total == 40 && c9->instances_with == 1);
	const struct perinst_child *all = child(r, PERINST_ALL_KERNELS);
	CHECK(all != NULL && all->time.total == 40);
	CHECK(child(r, PERINST_ALL_COPIES) == NULL);
	CHECK_EQ_INT(r->gpu_outside, 1);
	CHECK_EQ_INT(r->gpu_outside_ns, 10);
	CHECK_EQ_INT(r->gpu_no_launch, 1);
	perinst_free(p);
}

TEST(perinst_other_threads)
{
	/* Process 1: thread 2 has the steps [0,100) and [100,200) (the
	 * training loop), thread 4 none (PyTorch's autograd thread, which
	 * launches the backward pass), thread 3 a range of its own
	 * [500,600).  Process 9's thread 6 and thread 7 of no known process
	 * have no step. */
	struct perinst *p = perinst_new(0, NULL);
	perinst_process_wide(p, 1);
	perinst_instance(p, 1, 2, 0, 100);
	perinst_instance(p, 1, 2, 100, 200);
	perinst_instance(p, 1, 3, 500, 600);
	perinst_cpu(p, 7, 0, 1, 4, 20, 5);       /* thread 4 at 20: step 1 */
	perinst_cpu(p, 7, 1, 1, 4, 150, 6);      /* an API call there: step 2 */
	perinst_launch(p, 1, 50, 4, 150);        /* ... launching corr 50 */
	perinst_gpu(p, 9, 0, 1, 50, 210, 30);    /* runs after step 2: its */
	perinst_cpu(p, 8, 0, 1, 3, 150, 5);      /* thread 3 has its own: none */
	perinst_cpu(p, 8, 0, 9, 6, 150, 5);      /* another process: none */
	perinst_cpu(p, 8, 0, 0, 7, 150, 5);      /* no known process: none */
	perinst_scope_end(p);
	const struct perinst_result *r = perinst_finish(p);
	CHECK(r != NULL);
	const struct perinst_child *c7 = child(r, 7);
	CHECK(c7 != NULL);
	CHECK_EQ_INT(c7->time.total, 5 + 6);
	CHECK_EQ_INT(c7->instances_with, 2);
	CHECK(child(r, 8) == NULL);
	const struct perinst_child *c9 = child(r, 9);
	CHECK(c9 != NULL && c9->time.total == 30 && c9->instances_with == 1);
	CHECK_EQ_INT(r->gpu_outside, 0);
	CHECK_EQ_INT(r->inst[1].kernel, 30);     /* by begin: [100,200) */
	CHECK_EQ_INT(r->inst[1].api, 6);
	CHECK_EQ_INT(r->inst[0].kernel, 0);
	perinst_free(p);
	/* not steps (a data loader's ranges): thread 4's work is not theirs */
	p = perinst_new(0, NULL);
	perinst_instance(p, 1, 2, 100, 200);
	perinst_cpu(p, 7, 0, 1, 4, 150, 5);
	perinst_launch(p, 1, 50, 4, 150);
	perinst_gpu(p, 9, 0, 1, 50, 210, 30);
	perinst_scope_end(p);
	r = perinst_finish(p);
	CHECK(child(r, 7) == NULL && child(r, 9) == NULL);
	CHECK_EQ_INT(r->gpu_outside, 1);
	perinst_free(p);
}

TEST(perinst_input_wide)
{
	/* Two inputs in one scope, keys 1 and 2, each with a capture range
	 * on a placeholder thread: key 1's [0,1000), key 2's [1,500).
	 * Key 1: process 1's thread 2 and process 3's thread 4 have no
	 * step; process 5 has steps of its own on thread 6 ([2,100)), so
	 * its thread 7 is its steps', not the input's.  Key 2: thread 8.
	 * Thread 9 was given no key: it belongs to no input. */
	struct perinst *p = perinst_new(0, NULL);
	perinst_process_wide(p, 1);
	static const uint32_t key_of[][2] = {
		{ 2, 1 }, { 4, 1 }, { 6, 1 }, { 7, 1 }, { 8, 2 },
	};
	for (size_t i = 0; i < sizeof(key_of) / sizeof(key_of[0]); i++)
		CHECK_EQ_INT(perinst_thread_key(p, key_of[i][0], key_of[i][1]), 0);
	CHECK_EQ_INT(perinst_input_instance(p, 1, 0, 1000), 0);
	CHECK_EQ_INT(perinst_input_instance(p, 2, 1, 500), 0);
	perinst_instance(p, 5, 6, 2, 100);
	perinst_cpu(p, 7, 1, 1, 2, 10, 3);       /* key 1's capture range */
	perinst_launch(p, 1, 60, 2, 10);
	perinst_gpu(p, 9, 0, 1, 60, 1200, 40);   /* runs after it: still its */
	perinst_cpu(p, 7, 1, 3, 4, 900, 5);      /* another process, key 1 */
	perinst_cpu(p, 7, 1, 5, 7, 50, 7);       /* process 5's step */
	perinst_cpu(p, 8, 1, 5, 7, 600, 11);     /* after it: no step's */
	perinst_cpu(p, 7, 1, 2, 8, 400, 13);     /* key 2's */
	perinst_cpu(p, 8, 1, 2, 8, 700, 17);     /* after key 2's range */
	perinst_cpu(p, 8, 1, 1, 9, 10, 19);      /* no key */
	perinst_scope_end(p);
	const struct perinst_result *r = perinst_finish(p);
	CHECK(r != NULL);
	CHECK_EQ_INT(r->ninst, 3);
	CHECK(child(r, 8) == NULL);
	CHECK_EQ_INT(r->gpu_outside, 0);
	/* by begin: key 1's, key 2's, process 5's step */
	CHECK_EQ_INT(r->inst[0].dur, 1000);
	CHECK_EQ_INT(r->inst[0].api, 3 + 5);
	CHECK_EQ_INT(r->inst[0].kernel, 40);
	CHECK_EQ_INT(r->inst[0].key, 1);
	CHECK_EQ_INT(r->inst[1].dur, 499);
	CHECK_EQ_INT(r->inst[1].api, 13);
	CHECK_EQ_INT(r->inst[1].key, 2);
	CHECK_EQ_INT(r->inst[2].api, 7);
	perinst_free(p);
}

TEST(steps_series_and_breakdown)
{
	/* --per NAME: the name, or its numbered series */
	struct step_match m;
	CHECK_EQ_INT(step_match_init(&m, "ProfilerStep"), 0);
	CHECK_EQ_INT(step_match(&m, "ProfilerStep#1009"), 1);
	CHECK_EQ_INT(step_match(&m, "ProfilerStep"), 1);
	CHECK_EQ_INT(step_match(&m, "ProfilerStepX#1"), 0);
	CHECK_EQ_INT(step_match(&m, "Optimizer.step#SGD.step"), 0);
	step_match_free(&m);
	CHECK_EQ_INT(step_match_init(&m, "ProfilerStep#7"), 0);
	CHECK_EQ_INT(step_match(&m, "ProfilerStep#12"), 1);
	step_match_free(&m);
	CHECK_EQ_INT(step_kind("user_annotation", "ProfilerStep#3"), 1);
	CHECK_EQ_INT(step_kind("nvtx", "Train_Step_4"), 2);
	CHECK_EQ_INT(step_kind("nvtx", "stepper"), 0);
	CHECK_EQ_INT(step_kind("Trace", "PyTorch Profiler (0)"), 3);
	/* the API call's time inside [0,100) is runtime, then the kernel
	 * wins where both run, CPU work fills the rest but [90,100) */
	struct perinst *p = perinst_new(0, NULL);
	perinst_instance(p, 1, 2, 0, 100);
	perinst_cpu(p, 4, 1, 1, 2, 5, 10);       /* an API call: api time */
	struct breakdown *b = breakdown_new();
	breakdown_add(b, BD_CPU, 0, 90);
	breakdown_add(b, BD_RUNTIME, 5, 15);
	breakdown_add(b, BD_KERNEL, 10, 30);
	breakdown_add(b, BD_KERNEL, 20, 40);     /* overlapping: a union */
	breakdown_add(b, BD_MEMCPY, 35, 50);
	breakdown_add(b, BD_DATALOADER, 95, 120);
	size_t n;
	struct perinst_instance *v = perinst_scope_instances(p, &n);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(breakdown_scope_end(b, v, n), 0);
	CHECK_EQ_INT(v[0].cat[BD_KERNEL], 30);
	CHECK_EQ_INT(v[0].cat[BD_MEMCPY], 10);
	CHECK_EQ_INT(v[0].cat[BD_RUNTIME], 5);
	CHECK_EQ_INT(v[0].cat[BD_CPU], 45);
	CHECK_EQ_INT(v[0].cat[BD_DATALOADER], 5);
	CHECK_EQ_INT(v[0].cat[BD_OTHER], 5);
	perinst_scope_end(p);
	const struct perinst_result *r = perinst_finish(p);
	CHECK(r != NULL && r->ninst == 1 && r->inst[0].api == 10);
	breakdown_free(b);
	perinst_free(p);
}

TEST(breakdown_many_keys_in_any_order)
{
	/* eight ranks merged, their work added in no order of rank: each
	 * rank's step [0,100) holds its two kernels (7 ns) and nothing of
	 * the others' */
	static const uint32_t order[] = { 5, 2, 8, 1, 7, 3, 6, 4 };
	struct perinst *p = perinst_new(0, NULL);
	for (uint32_t k = 1; k <= 8; k++)
		perinst_instance_keyed(p, 10 * k, 10 * k + 1, k, 0, 100);
	struct breakdown *b = breakdown_new();
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < 8; i++) {
			uint32_t k = order[round ? 7 - i : i];
			if (round == 0)
				CHECK_EQ_INT(breakdown_add_keyed(b, BD_KERNEL, k, 5 * k, 5 * k + 3), 0);
			else
				CHECK_EQ_INT(breakdown_add_keyed(b, BD_KERNEL, k, 50 + 5 * k, 54 + 5 * k), 0);
		}
	size_t n;
	struct perinst_instance *v = perinst_scope_instances(p, &n);
	CHECK_EQ_INT(n, 8);
	CHECK_EQ_INT(breakdown_scope_end(b, v, n), 0);
	for (size_t i = 0; i < n; i++) {
		CHECK(v[i].key >= 1 && v[i].key <= 8);
		CHECK_EQ_INT(v[i].cat[BD_KERNEL], 7);
		CHECK_EQ_INT(v[i].cat[BD_OTHER], 93);
	}
	perinst_scope_end(p);
	breakdown_free(b);
	perinst_free(p);
}

TEST(breakdown_by_key)
{
	/* two ranks merged: rank 1's step [0,100) counts rank 1's kernel
	 * and work of no rank, not rank 2's kernel or CPU work */
	struct perinst *p = perinst_new(0, NULL);
	perinst_instance_keyed(p, 1, 2, 1, 0, 100);
	perinst_instance_keyed(p, 5, 3, 2, 0, 100);
	struct breakdown *b = breakdown_new();
	breakdown_add_keyed(b, BD_KERNEL, 1, 10, 20);
	breakdown_add_keyed(b, BD_KERNEL, 2, 30, 60);
	breakdown_add_keyed(b, BD_CPU, 2, 0, 100);
	breakdown_add(b, BD_MEMCPY, 15, 25);     /* no rank: both */
	size_t n;
	struct perinst_instance *v = perinst_scope_instances(p, &n);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(breakdown_scope_end(b, v, n), 0);
	for (size_t i = 0; i < n; i++) {
		if (v[i].key == 1) {
			CHECK_EQ_INT(v[i].cat[BD_KERNEL], 10);
			CHECK_EQ_INT(v[i].cat[BD_MEMCPY], 5);
			CHECK_EQ_INT(v[i].cat[BD_CPU], 0);
			CHECK_EQ_INT(v[i].cat[BD_OTHER], 85);
		} else {
			CHECK_EQ_INT(v[i].key, 2);
			CHECK_EQ_INT(v[i].cat[BD_KERNEL], 30);
			CHECK_EQ_INT(v[i].cat[BD_MEMCPY], 10);
			CHECK_EQ_INT(v[i].cat[BD_CPU], 60);
			CHECK_EQ_INT(v[i].cat[BD_OTHER], 0);
		}
	}
	perinst_scope_end(p);
	breakdown_free(b);
	perinst_free(p);
}

TEST(opview_groups_in_any_order)
{
	/* groups 0, 8, 16 (each just past a capacity), then 3; one range
	 * each on its own thread, of 10 + group ns: a row per group up to
	 * the highest, the rows between them empty */
	static const uint32_t groups[] = { 0, 8, 16, 3 };
	struct opview *v = opview_new();
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		CHECK_EQ_INT(opview_range(v, groups[i], "r", groups[i], 0, 10 + groups[i]), 0);
	CHECK_EQ_INT(opview_scope_end(v), 0);
	size_t n;
	const struct opview_row *w = opview_rows(v, &n);
	CHECK_EQ_INT(n, 17);
	for (size_t g = 0; g < n; g++) {
		int used = g == 0 || g == 3 || g == 8 || g == 16;
		CHECK_EQ_INT(w[g].group, g);
		CHECK_EQ_INT(w[g].count, used);
		CHECK_EQ_INT(w[g].total, used ? 10 + (int64_t)g : 0);
		CHECK_EQ_INT(w[g].self, used ? 10 + (int64_t)g : 0);
	}
	opview_free(v);
}

TEST(opview_self_and_gpu_time)
{
	/* thread 1: a [0,100) holds b [10,50) holding c [20,30); d [60,60)
	 * empty; thread 2: e [0,100) alone */
	static const char *const names[] = { "a", "b", "c", "d", "e" };
	struct opview *v = opview_new();
	opview_range(v, 2, names[2], 1, 20, 10);
	opview_range(v, 0, names[0], 1, 0, 100);
	opview_range(v, 1, names[1], 1, 10, 40);
	opview_range(v, 3, names[3], 1, 60, 0);
	opview_range(v, 4, names[4], 2, 0, 100);
	opview_launch(v, 7, 100, 1, 25);         /* inside c */
	opview_launch(v, 7, 101, 1, 55);         /* inside a only */
	opview_gpu(v, 7, 100, 3);
	opview_gpu(v, 7, 101, 4);
	opview_gpu(v, 8, 100, 5);                /* another process: no launch */
	CHECK_EQ_INT(opview_scope_end(v), 0);
	size_t n;
	const struct opview_row *w = opview_rows(v, &n);
	CHECK_EQ_INT(n, 5);
	CHECK_EQ_INT(w[0].self, 100 - 40);
	CHECK_EQ_INT(w[1].self, 40 - 10);
	CHECK_EQ_INT(w[2].self, 10);
	CHECK_EQ_INT(w[4].self, 100);            /* other threads are not children */
	CHECK_EQ_INT(w[2].gpu_self, 3);
	CHECK_EQ_INT(w[1].gpu_self, 0);
	CHECK_EQ_INT(w[1].gpu_total, 3);
	CHECK_EQ_INT(w[0].gpu_self, 4);
	CHECK_EQ_INT(w[0].gpu_total, 7);
	opview_free(v);
}

TEST(perinst_scopes_forget_ids)
{
	/* track ids are per scope: a second scope's thread 2 is another */
	struct perinst *p = perinst_new(0, NULL);
	perinst_instance(p, 1, 2, 0, 100);
	perinst_launch(p, 1, 5, 2, 50);
	perinst_scope_end(p);
	perinst_gpu(p, 1, 0, 1, 5, 60, 10);      /* correlation 5 of scope 2 */
	perinst_cpu(p, 1, 0, 1, 2, 50, 1);
	perinst_scope_end(p);
	const struct perinst_result *r = perinst_finish(p);
	CHECK_EQ_INT(r->gpu_no_launch, 1);
	CHECK(child(r, 1) == NULL);
	perinst_free(p);
}

TEST(allocpeak_scopes_forget_ids)
{
	/* string ids are per scope: the operation of an allocation is
	 * looked up once per id, and an id of the next scope names another
	 * operation */
	struct allocpeak *ap = allocpeak_new(0);
	CHECK(ap != NULL);
	CHECK_EQ_INT(allocpeak_event(ap, 0, -1, 0, 10, 5, "aten::empty"), 0);
	CHECK_EQ_INT(allocpeak_event(ap, 0, -1, 0, 20, 7, "aten::add"), 0);
	CHECK_EQ_INT(allocpeak_event(ap, 0, -1, 0, 30, 5, "aten::empty"), 0);
	CHECK_STR(allocpeak_op_at(ap, 0, -1, 10), "aten::empty");
	CHECK_STR(allocpeak_op_at(ap, 0, -1, 20), "aten::add");
	CHECK_STR(allocpeak_op_at(ap, 0, -1, 30), "aten::empty");
	CHECK_EQ_INT(allocpeak_scope_end(ap, NULL, 0), 0);
	CHECK_EQ_INT(allocpeak_event(ap, 0, -1, 0, 40, 5, "aten::mm"), 0);
	CHECK_EQ_INT(allocpeak_event(ap, 0, -1, 0, 50, 0, NULL), 0);
	CHECK_STR(allocpeak_op_at(ap, 0, -1, 40), "aten::mm");
	CHECK(allocpeak_op_at(ap, 0, -1, 50) == NULL);
	allocpeak_free(ap);
}

TEST(strmap_many_keys)
{
	struct strmap m = { 0 };
	char k[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key%d", i);
		CHECK(strmap_put(&m, k, strlen(k), i) == 0);
	}
	int ok = 1;
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "key%d", i);
		ok &= strmap_get(&m, k, strlen(k)) == i;
	}
	CHECK(ok);
	CHECK(strmap_get(&m, "nokey", 5) == -1);
	/* keys are bytes: embedded separators and NULs are fine */
	CHECK(strmap_put(&m, "a\0b", 3, 7) == 0);
	CHECK(strmap_get(&m, "a\0b", 3) == 7);
	CHECK(strmap_get(&m, "a\0c", 3) == -1);
	strmap_free(&m);
}

/* ---- the aggregator on written traces ------------------------------------------- */

struct ids {
	uint32_t proc, thread, s1, s2, rss, devmem, dev;
};

static void
define(struct tk_writer *w, struct ids *id, int64_t pid)
{
	const char *argv[] = { "./train", "--fast" };
	struct tk_process p = { "host-a", pid, 1, 1000, 2, argv, "rank0" };
	id->proc = tk_writer_process(w, 0, &p);
	struct tk_thread t = { id->proc, pid, "main" };
	id->thread = tk_writer_thread(w, 0, &t);
	struct tk_device d = { 0 };
	d.host = "host-a";
	d.name = "Test GPU";
	d.index = 0;
	d.uuid[0] = 1;
	id->dev = tk_writer_device(w, 0, &d);
	struct tk_stream s = { id->proc, id->dev, 1, 7, "" };
	id->s1 = tk_writer_stream(w, 0, &s);
	s.stream = 13;
	id->s2 = tk_writer_stream(w, 0, &s);
	struct tk_counter c = { "rss", "bytes", id->proc, 0 };
	id->rss = tk_writer_counter(w, 0, &c);
	c = (struct tk_counter){ "device memory", "bytes", 0, id->dev };
	id->devmem = tk_writer_counter(w, 0, &c);
}

static void
ev(struct tk_writer *w, unsigned kind, uint32_t track, int64_t ts, int64_t dur,
   const char *name, uint64_t corr)
{
	struct tk_event e = { 0 };
	e.kind = kind;
	e.track = track;
	e.ts = ts;
	e.dur = dur;
	e.name = name;
	switch (kind) {
	case TK_KERNEL: e.u.kernel.correlation = corr; break;
	case TK_API: e.u.api.correlation = corr; break;
	case TK_MEMCPY:
		e.u.memcpy.correlation = corr;
		e.u.memcpy.bytes = 1000;
		e.u.memcpy.copy_kind = TK_COPY_HTOD;
		e.u.memcpy.src_kind = TK_MEM_PAGEABLE;
		e.u.memcpy.dst_kind = TK_MEM_DEVICE;
		break;
	}
	if (tk_writer_event(w, &e) != TK_OK)
		abort();
}

static void
memory(struct tk_writer *w, uint32_t track, int64_t ts, unsigned op, uint64_t bytes)
{
	struct tk_event e = { 0 };
	e.kind = TK_MEMORY;
	e.track = track;
	e.ts = ts;
	e.name = op == TK_MEM_ALLOC ? "cudaMalloc" : "cudaFree";
	e.u.memory.op = op;
	e.u.memory.bytes = bytes;
	tk_writer_event(w, &e);
}

static void
counter(struct tk_writer *w, uint32_t track, int64_t ts, double v)
{
	struct tk_event e = { 0 };
	e.kind = TK_COUNTER;
	e.track = track;
	e.ts = ts;
	e.u.counter.value = v;
	tk_writer_event(w, &e);
}

/* A small run, written out of order with no watermarks (offset shifts
 * every time). */
static void
write_run(struct tk_writer *w, int64_t off, int64_t pid)
{
	struct ids id;
	define(w, &id, pid);
	tk_writer_meta(w, "command", "./train --fast");
	/* written in reverse: step 2 first */
	struct tk_event r = { 0 };
	r.kind = TK_RANGE;
	r.track = id.thread;
	r.ts = off + 1000;
	r.dur = 1000;
	r.name = "step";
	tk_writer_event(w, &r);
	r.ts = off;
	tk_writer_event(w, &r);
	r.ts = off + 10;
	r.dur = 50;
	r.name = "aten::mm";
	r.u.range.domain = "cpu_op";
	tk_writer_event(w, &r);
	r.u.range.domain = "";
	r.ts = off + 1010;
	tk_writer_event(w, &r);
	/* kernels: stream 1 [100,300) [250? no: same stream in order]
	 * stream 1: [100,300), [1100,1200); stream 2: [200,400) overlapping */
	ev(w, TK_KERNEL, id.s1, off + 1100, 100, "gemm", 3);
	ev(w, TK_KERNEL, id.s2, off + 200, 200, "relu", 2);
	ev(w, TK_KERNEL, id.s1, off + 100, 200, "gemm", 1);
	ev(w, TK_MEMCPY, id.s2, off + 350, 100, "", 4);   /* [350,450) */
	ev(w, TK_API, id.thread, off + 20, 5, "cudaLaunchKernel", 1);
	ev(w, TK_API, id.thread, off + 30, 5, "cudaLaunchKernel", 2);
	ev(w, TK_API, id.thread, off + 1020, 5, "cudaLaunchKernel", 3);
	ev(w, TK_API, id.thread, off + 40, 5, "cudaMemcpy", 4);
	/* memory: frees before allocs in the stream; peak 300 at 60..70 */
	memory(w, id.s1, off + 70, TK_MEM_FREE, 100);
	memory(w, id.s1, off + 80, TK_MEM_FREE, 200);
	memory(w, id.s1, off + 50, TK_MEM_ALLOC, 100);
	memory(w, id.s1, off + 60, TK_MEM_ALLOC, 200);
	counter(w, id.rss, off + 5, 5000);
	counter(w, id.rss, off + 1500, 7000);
	counter(w, id.devmem, off + 5, 300);
	struct tk_event d = { 0 };
	d.kind = TK_DROPPED;
	d.track = id.proc;
	d.ts = off + 1999;
	d.u.dropped.count = 12;
	d.u.dropped.reason = "buffer full";
	tk_writer_event(w, &d);
	struct tk_event p = { 0 };
	p.kind = TK_PROCESS;
	p.track = id.proc;
	p.ts = off;
	p.dur = 2000;
	p.name = "train";
	p.u.process.exit = TK_EXIT_NORMAL;
	p.u.process.utime = 1500;
	p.u.process.stime = 100;
	p.u.process.max_rss = 9000;
	tk_writer_event(w, &p);
}

static char *
temp_trace(int64_t second_offset)
{
	static char path[64];
	strcpy(path, "/tmp/test_aggregate.XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	struct tk_writer *w = tk_writer_new();
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.chunk_bytes = 256;               /* many chunks */
	if (tk_writer_open_fd(w, fd, path, &o) != TK_OK)
		abort();
	write_run(w, 1000000, 77);
	if (tk_writer_close(w) != TK_OK)
		abort();
	if (second_offset) {
		/* a second trace in the same file: `cat a b` */
		if (tk_writer_open_fd(w, fd, path, &o) != TK_OK)
			abort();
		write_run(w, 1000000 + second_offset, 78);
		if (tk_writer_close(w) != TK_OK)
			abort();
	}
	tk_writer_free(w);
	close(fd);
	return path;
}

static const struct agg_group *
find(struct agg *a, unsigned kind, const char *domain, const char *name)
{
	return agg_find(a, kind, domain, name);
}

TEST(aggregate_unsorted_trace)
{
	char *path = temp_trace(0);
	struct agg_options o = AGG_OPTIONS_INIT;
	o.per = "step";
	struct agg *a = agg_new(&o);
	CHECK_EQ_INT(agg_read(a, path), 0);
	agg_finish(a);
	const struct agg_group *g = find(a, TK_KERNEL, NULL, "gemm");
	CHECK(g && g->s.count == 2 && g->s.total == 300 && g->s.min == 100 &&
	      g->s.max == 200 && g->s.p50 == 150);
	CHECK(g && g->first_ts == 1000100 && g->first_dur == 200);
	/* same name, two domains: two groups */
	CHECK(find(a, TK_RANGE, "cpu_op", "aten::mm") != NULL);
	CHECK(find(a, TK_RANGE, "", "aten::mm") != NULL);
	g = find(a, TK_MEMCPY, NULL, "Memcpy HtoD (Pageable -> Device)");
	CHECK(g && g->bytes == 1000 && g->rate_n == 1);
	CHECK_EQ_INT(agg_ndevices(a), 1);
	const struct agg_device *d = agg_device(a, 0);
	/* kernels [100,300) u [200,400) u [1100,1200) = 400; copy [350,450)
	 * = 100; all = [100,450) u [1100,1200) = 450 */
	CHECK_EQ_INT(d->kernel, 400);
	CHECK_EQ_INT(d->copy, 100);
	CHECK_EQ_INT(d->busy, 450);
	CHECK_EQ_INT(d->ops, 4);
	CHECK_EQ_INT(d->peak, 300);
	CHECK_EQ_INT(d->in_use, 0);
	CHECK_EQ_INT(d->allocs, 2);
	CHECK(d->has_counter && d->counter_max == 300);
	CHECK(!d->overlap);
	const struct agg_run *run = agg_run(a);
	CHECK_EQ_INT(run->dropped, 12);
	CHECK_EQ_INT(run->ndrops, 1);
	CHECK_STR(run->drops[0].reason, "buffer full");
	CHECK_EQ_INT(agg_wall(a), 2000);
	CHECK_EQ_INT(agg_nprocesses(a), 1);
	const struct agg_process *p = agg_process(a, 0);
	CHECK(p->has_rusage && p->utime == 1500 && p->max_rss == 9000);
	CHECK(p->has_rss && p->rss_max == 7000);
	CHECK_STR(p->command, "./train --fast");
	CHECK_STR(p->label, "rank0");
	/* per step: step 1 launched gemm#1 and relu, step 2 gemm#3 */
	const struct perinst_result *pr = agg_per(a);
	CHECK(pr && pr->dur.count == 2);
	const struct agg_group *gemm = find(a, TK_KERNEL, NULL, "gemm");
	for (size_t i = 0; pr && i < pr->nchildren; i++)
		if (agg_group(a, pr->children[i].group) == gemm)
			CHECK(pr->children[i].time.total == 300 &&
			      pr->children[i].instances_with == 2);
	agg_free(a);
	unlink(path);
}

TEST(aggregate_filters)
{
	char *path = temp_trace(0);
	regex_t re;
	regcomp(&re, "^cuda", REG_EXTENDED | REG_NOSUB);
	struct agg_options o = AGG_OPTIONS_INIT;
	o.exclude = &re;
	o.from = 1000;                     /* second step onwards */
	struct agg *a = agg_new(&o);
	CHECK_EQ_INT(agg_read(a, path), 0);
	agg_finish(a);
	CHECK(find(a, TK_API, NULL, "cudaLaunchKernel") == NULL);
	const struct agg_group *g = find(a, TK_KERNEL, NULL, "gemm");
	CHECK(g && g->s.count == 1 && g->s.total == 100);
	CHECK(find(a, TK_KERNEL, NULL, "relu") == NULL);
	agg_free(a);
	/* a pid that is not there keeps nothing but drops */
	int64_t pid = 5;
	struct agg_options q = AGG_OPTIONS_INIT;
	q.pids = &pid;
	q.npids = 1;
	a = agg_new(&q);
	agg_read(a, path);
	agg_finish(a);
	CHECK_EQ_INT(agg_ngroups(a), 0);
	CHECK_EQ_INT(agg_run(a)->events, 1);
	CHECK_EQ_INT(agg_run(a)->dropped, 12);
	agg_free(a);
	regfree(&re);
	unlink(path);
}

TEST(aggregate_concatenated_traces)
{
	/* the same GPU in two traces far apart: busy adds up exactly */
	char *path = temp_trace(100000);
	struct agg_options o = AGG_OPTIONS_INIT;
	struct agg *a = agg_new(&o);
	CHECK_EQ_INT(agg_read(a, path), 0);
	agg_finish(a);
	CHECK_EQ_INT(agg_ndevices(a), 1);
	CHECK_EQ_INT(agg_device(a, 0)->busy, 900);
	CHECK(!agg_device(a, 0)->overlap);
	CHECK_EQ_INT(agg_run(a)->scopes, 2);
	CHECK_EQ_INT(agg_nprocesses(a), 2);
	CHECK_EQ_INT(find(a, TK_KERNEL, NULL, "gemm")->s.count, 4);
	agg_free(a);
	unlink(path);
	/* overlapping in time: the sum, flagged */
	path = temp_trace(50);
	a = agg_new(&o);
	agg_read(a, path);
	agg_finish(a);
	CHECK_EQ_INT(agg_device(a, 0)->busy, 900);
	CHECK(agg_device(a, 0)->overlap);
	agg_free(a);
	unlink(path);
}

TEST(aggregate_approx_mode)
{
	char *path = temp_trace(100000);
	struct agg_options o = AGG_OPTIONS_INIT;
	o.approx = 1;
	struct agg *a = agg_new(&o);
	agg_read(a, path);
	agg_finish(a);
	const struct agg_group *g = find(a, TK_KERNEL, NULL, "gemm");
	CHECK(g && g->s.count == 4 && g->s.total == 600);
	CHECK(g && fabs(g->s.p50 - 150) <= 1.5);
	size_t n;
	CHECK(dist_values(&g->dur, &n) == NULL);
	agg_free(a);
	unlink(path);
}

/* The exact budget (-S) is the aggregation's own: past it, the groups
 * that grow keep sketches, and its results count them. */
TEST(aggregate_exact_budget)
{
	char *path = temp_trace(0);
	struct agg_options o = AGG_OPTIONS_INIT;
	struct agg *a = agg_new(&o);
	agg_read(a, path);
	agg_finish(a);
	CHECK(agg_run(a)->exact.limit == SIZE_MAX);  /* 0: no limit */
	CHECK_EQ_INT(agg_run(a)->exact.converted, 0);
	size_t ngroups = agg_ngroups(a);
	agg_free(a);
	/* room for the first group's first 16 values (128 bytes) only */
	o.exact_budget = 200;
	a = agg_new(&o);
	agg_read(a, path);
	agg_finish(a);
	CHECK_EQ_INT(agg_ngroups(a), ngroups);
	CHECK_EQ_INT(agg_run(a)->exact.converted, ngroups - 1);
	CHECK_EQ_INT(agg_run(a)->exact.used, 128);
	CHECK(!agg_group(a, 0)->dur.approx && agg_group(a, 1)->dur.approx);
	const struct agg_group *g = find(a, TK_KERNEL, NULL, "gemm");
	CHECK(g && g->s.count == 2 && g->s.total == 300 && g->s.min == 100);
	agg_free(a);
	unlink(path);
}

/* Two runs of a repeated recording: [1000,2000) and [3000,4000). */
static char *
runs_trace(void)
{
	static char path[64];
	strcpy(path, "/tmp/test_aggregate.XXXXXX");
	int fd = mkstemp(path);
	struct tk_writer *w = tk_writer_new();
	if (fd < 0 || tk_writer_open_fd(w, fd, path, NULL) != TK_OK)
		abort();
	struct ids id;
	define(w, &id, 9);
	/* kernels before the run events: written when they end */
	ev(w, TK_KERNEL, id.s1, 1100, 10, "k", 0);
	ev(w, TK_KERNEL, id.s1, 1500, 20, "k", 0);
	ev(w, TK_KERNEL, id.s1, 2500, 40, "k", 0);   /* between the runs */
	ev(w, TK_KERNEL, id.s1, 3100, 30, "k", 0);
	for (uint32_t r = 1; r <= 2; r++) {
		struct tk_event e = { 0 };
		e.kind = TK_RUN;
		e.track = id.proc;
		e.ts = 1000 + 2000 * (r - 1);
		e.dur = 1000;
		e.name = "run";
		e.u.run.index = r;
		e.u.run.exit = TK_EXIT_NORMAL;
		tk_writer_event(w, &e);
	}
	if (tk_writer_close(w) != TK_OK)
		abort();
	tk_writer_free(w);
	close(fd);
	return path;
}

TEST(aggregate_runs)
{
	char *path = runs_trace();
	struct agg_options o = AGG_OPTIONS_INIT;
	o.by_run = 1;
	struct agg *a = agg_new(&o);
	CHECK_EQ_INT(agg_read(a, path), 0);
	agg_finish(a);
	const struct agg_group *g = find(a, TK_KERNEL, NULL, "k");
	CHECK(g && g->s.count == 4 && g->nrun_total == 2);
	CHECK(g && g->run_total[0] == 30 && g->run_total[1] == 30);
	const struct agg_run *run = agg_run(a);
	CHECK_EQ_INT(run->runs_seen, 2);
	CHECK(run->run_wall[0] == 1000 && run->run_wall[1] == 1000);
	agg_free(a);
	/* one run only: its events, times relative to its start */
	struct agg_options q = AGG_OPTIONS_INIT;
	q.run = 2;
	a = agg_new(&q);
	agg_read(a, path);
	agg_finish(a);
	g = find(a, TK_KERNEL, NULL, "k");
	CHECK(g && g->s.count == 1 && g->s.total == 30);
	CHECK(!agg_run(a)->run_missing);
	agg_free(a);
	q.run = 1;
	q.from = 400;
	a = agg_new(&q);
	agg_read(a, path);
	agg_finish(a);
	g = find(a, TK_KERNEL, NULL, "k");
	CHECK(g && g->s.count == 1 && g->s.total == 20);
	agg_free(a);
	q.run = 3;
	q.from = 0;
	a = agg_new(&q);
	agg_read(a, path);
	agg_finish(a);
	CHECK(agg_run(a)->run_missing);
	CHECK_EQ_INT(agg_ngroups(a), 0);
	agg_free(a);
	unlink(path);
}

TEST(aggregate_bad_input)
{
	char path[] = "/tmp/test_aggregate.XXXXXX";
	int fd = mkstemp(path);
	CHECK(write(fd, "not a trace at all", 18) == 18);
	close(fd);
	struct agg_options o = AGG_OPTIONS_INIT;
	struct agg *a = agg_new(&o);
	fprintf(stderr, "# expected error follows\n");
	CHECK_EQ_INT(agg_read(a, path), 1);
	agg_finish(a);
	CHECK_EQ_INT(agg_run(a)->events, 0);
	agg_free(a);
	unlink(path);
}

int
main(void)
{
	cmd_init("test_aggregate");
	RUN(busy_union_any_order);
	RUN(busy_settled_fast_path);
	RUN(pairbuf_ready_and_drop);
	RUN(sweep_clamps_lying_order);
	RUN(perinst_attribution);
	RUN(perinst_other_threads);
	RUN(perinst_input_wide);
	RUN(perinst_scopes_forget_ids);
	RUN(allocpeak_scopes_forget_ids);
	RUN(steps_series_and_breakdown);
	RUN(breakdown_many_keys_in_any_order);
	RUN(breakdown_by_key);
	RUN(opview_self_and_gpu_time);
	RUN(opview_groups_in_any_order);
	RUN(strmap_many_keys);
	RUN(aggregate_unsorted_trace);
	RUN(aggregate_filters);
	RUN(aggregate_concatenated_traces);
	RUN(aggregate_approx_mode);
	RUN(aggregate_exact_budget);
	RUN(aggregate_runs);
	RUN(aggregate_bad_input);
	return tap_done();
}
