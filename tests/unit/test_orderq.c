/* SPDX-License-Identifier: MIT */
/*
 * lib/orderq: whatever the order in, items come out by (ts, seq).
 * Each case makes a list of operations (push an item, or pop one) from
 * a pattern of times: ascending, descending, spans written in end order
 * as recorders do, shuffled, all equal; pops come at random between the
 * pushes.  The reference knows every key in advance, sorted, and takes
 * the lowest one still in (a flag per key): no heap, no runs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orderq.h"
#include "tap.h"

struct key {
	int64_t ts;
	uint64_t seq;
	size_t id;               /* the item: its index in push order */
};

static int
key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

enum pattern { ASCENDING, DESCENDING, BY_END, SHUFFLED, EQUAL, FEW_RUNS_TOO_MANY };

/* The times of n items pushed in the order a pattern gives. */
static void
make_times(enum pattern p, size_t n, int64_t *ts)
{
	switch (p) {
	case ASCENDING:
		for (size_t i = 0; i < n; i++)
			ts[i] = (int64_t)(i * 3 + next_rand() % 3);
		break;
	case DESCENDING:
		for (size_t i = 0; i < n; i++)
			ts[i] = (int64_t)((n - i) * 10);
		break;
	case BY_END: {
		/* nested spans: a span of depth d holds spans of depth d+1;
		 * written when they end, so a parent after its children */
		size_t k = 0;
		int64_t t = 0;
		while (k < n) {
			int64_t begins[6];
			int depth = 1 + (int)(next_rand() % 5);
			for (int d = 0; d < depth; d++)
				begins[d] = t + d;
			t += depth;
			for (int leaf = 0; leaf < 20 && k < n; leaf++)
				ts[k++] = t + leaf * 2;
			t += 40;
			for (int d = depth - 1; d >= 0 && k < n; d--)
				ts[k++] = begins[d];
		}
		break;
	}
	case SHUFFLED:
		for (size_t i = 0; i < n; i++)
			ts[i] = (int64_t)(next_rand() % (n * 4)) - (int64_t)n;
		break;
	case EQUAL:
		for (size_t i = 0; i < n; i++)
			ts[i] = -7;
		break;
	case FEW_RUNS_TOO_MANY:
		/* more interleaved ascending runs than the queue keeps: the rest
		 * goes to the heap */
		for (size_t i = 0; i < n; i++)
			ts[i] = (int64_t)((i % (TKP_ORDERQ_RUNS * 3)) * 1000000 + i);
		break;
	}
}

/* Run one case: 1 when every pop gave the reference's item. */
static int
run_case(enum pattern p, size_t n, unsigned pop_percent)
{
	int64_t *ts = malloc(n * sizeof(*ts));
	struct key *sorted = malloc(n * sizeof(*sorted));
	size_t *rank = malloc(n * sizeof(*rank));
	unsigned char *present = calloc(n, 1);
	if (!ts || !sorted || !rank || !present)
		return 0;
	make_times(p, n, ts);
	for (size_t i = 0; i < n; i++)
		sorted[i] = (struct key){ ts[i], 1000 + i * 7, i };
	qsort(sorted, n, sizeof(*sorted), key_cmp);
	for (size_t r = 0; r < n; r++)
		rank[sorted[r].id] = r;

	struct tkp_orderq q;
	memset(&q, 0, sizeof(q));
	size_t pushed = 0, in = 0, low = n;
	int ok = 1;
	while (ok && (pushed < n || in > 0)) {
		int pop = pushed == n || (in > 0 && next_rand() % 100 < pop_percent);
		if (!pop) {
			if (tkp_orderq_push(&q, ts[pushed], 1000 + pushed * 7,
			                    (void *)(uintptr_t)(pushed + 1)) != 0)
				ok = 0;
			present[rank[pushed]] = 1;
			if (rank[pushed] < low)
				low = rank[pushed];
			pushed++;
			in++;
			ok = ok && q.n == in;
			continue;
		}
		while (low < n && !present[low])
			low++;
		const struct tkp_okey *min = tkp_orderq_min(&q);
		ok = min && min->ts == sorted[low].ts && min->seq == sorted[low].seq;
		size_t got = (size_t)(uintptr_t)tkp_orderq_pop(&q) - 1;
		ok = ok && got == sorted[low].id;
		present[low] = 0;
		in--;
	}
	ok = ok && tkp_orderq_min(&q) == NULL && q.n == 0;
	tkp_orderq_free(&q);
	free(ts);
	free(sorted);
	free(rank);
	free(present);
	return ok;
}

TEST(orders_every_pattern)
{
	static const enum pattern pats[] = { ASCENDING, DESCENDING, BY_END,
	                                     SHUFFLED, EQUAL, FEW_RUNS_TOO_MANY };
	static const unsigned pops[] = { 0, 10, 45, 90 };
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		for (size_t j = 0; j < sizeof(pops) / sizeof(pops[0]); j++)
			CHECK(run_case(pats[i], 20000, pops[j]));
	/* a run longer than the compaction threshold, popped as it grows */
	CHECK(run_case(ASCENDING, 50000, 50));
	CHECK(run_case(BY_END, 1, 0));
}

static size_t each_count;
static uintptr_t each_sum;

static void
count_item(void *item)
{
	each_count++;
	each_sum += (uintptr_t)item;
}

TEST(each_visits_what_is_left)
{
	struct tkp_orderq q;
	memset(&q, 0, sizeof(q));
	CHECK(tkp_orderq_min(&q) == NULL);
	int64_t ts[300];
	make_times(FEW_RUNS_TOO_MANY, 300, ts);
	for (size_t i = 0; i < 300; i++)
		CHECK(tkp_orderq_push(&q, ts[i], i, (void *)(uintptr_t)(i + 1)) == 0);
	CHECK(q.nheap > 0 && q.nruns == TKP_ORDERQ_RUNS);
	uintptr_t popped = 0;
	for (int i = 0; i < 100; i++)
		popped += (uintptr_t)tkp_orderq_pop(&q);
	tkp_orderq_each(&q, count_item);
	CHECK_EQ_INT(each_count, 200);
	CHECK_EQ_INT(each_sum + popped, 300 * 301 / 2);
	tkp_orderq_free(&q);
	CHECK(q.n == 0 && q.nruns == 0 && q.heap == NULL);
}

int
main(void)
{
	RUN(orders_every_pattern);
	RUN(each_visits_what_is_left);
	return tap_done();
}
