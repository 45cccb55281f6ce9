/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the .tkt reader on arbitrary bytes.  Built with
 * TK_FUZZING the reader skips its checksum comparisons, so mutations
 * reach the decoders behind them.  Every field of every record is
 * touched so that the sanitizers see any bad pointer; then the same
 * bytes are read by columns.  What reads back must agree with itself
 * (a failure aborts, as libFuzzer wants): the columns give the events
 * of the record-by-record pass, in order, with the same kind, times
 * and name, and end the same way (all of them at TK_EOF, a prefix at
 * the same error); after an end, every later call returns it again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracekit.h"

static volatile size_t sink;

static void
touch(const char *s)
{
	if (s)
		sink += strlen(s);
}

static void
touch_track(const struct tk_track *t)
{
	switch (t->type) {
	case TK_TRACK_PROCESS:
		touch(t->u.process.host);
		touch(t->u.process.label);
		for (uint32_t i = 0; i < t->u.process.argc; i++)
			touch(t->u.process.argv[i]);
		break;
	case TK_TRACK_THREAD: touch(t->u.thread.name); break;
	case TK_TRACK_STREAM: touch(t->u.stream.name); break;
	case TK_TRACK_COUNTER:
		touch(t->u.counter.name);
		touch(t->u.counter.unit);
		break;
	default: break;
	}
}

#define REQUIRE(cond)                                                       \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: %s fails\n", __FILE__,     \
			        __LINE__, #cond);                           \
			abort();                                            \
		}                                                           \
	} while (0)

/* What the first pass read of each event, to check the second. */
struct seen {
	int64_t ts, dur;
	uint64_t name;
	unsigned kind;
};
static struct seen *seen;
static size_t nseen, capseen;
/* The first pass ended in an error.  The column read decodes only the
 * common columns (tracekit.h), so damage in an attribute or args column
 * that stopped the first pass may pass unseen by the second: past what
 * the first pass read, there is nothing to compare. */
static int first_failed;

static uint64_t
hash(const char *s)
{
	uint64_t h = 1469598103934665603u;
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static void
remember(const struct tk_event *e)
{
	if (nseen == capseen) {
		capseen = capseen ? 2 * capseen : 256;
		seen = realloc(seen, capseen * sizeof(*seen));
		REQUIRE(seen);
	}
	seen[nseen++] = (struct seen){ e->ts, e->dur, hash(e->name), e->kind };
}

/* The next event of the second pass against the first's. */
static void
agree(size_t *i, unsigned kind, int64_t ts, int64_t dur, const char *name)
{
	/* a kind newer than this library: tk_reader_next() skips it, the
	 * columns give it for the caller to skip (tracekit.h) */
	if (kind > TK_KIND_MAX)
		return;
	if (*i >= nseen && first_failed) {
		(*i)++;
		return;
	}
	REQUIRE(*i < nseen);
	const struct seen *s = &seen[(*i)++];
	REQUIRE(s->kind == kind);
	REQUIRE(s->ts == ts);
	REQUIRE(s->dur == dur);
	REQUIRE(s->name == hash(name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	int rc1, rc2;
	if (!r)
		return 0;
	nseen = 0;
	first_failed = 0;
	if ((rc1 = tk_reader_open_mem(r, data, size, "fuzz")) == TK_OK) {
		while ((rc1 = tk_reader_next(r, &rec)) == TK_OK) {
			switch (rec.type) {
			case TK_REC_EVENT: {
				const struct tk_event *e = rec.u.event;
				remember(e);
				touch(e->name);
				touch_track(e->trk);
				if (e->args)
					for (uint32_t i = 0; i < e->args_len; i++)
						sink += (unsigned char)e->args[i];
				if (e->kind <= TK_RANGE + 2)
					touch(e->u.range.domain);
				if (e->kind == TK_KERNEL)
					touch(e->u.kernel.mangled);
				if (e->kind == TK_DROPPED)
					touch(e->u.dropped.reason);
				if (e->kind == TK_FLOW)
					touch(e->u.flow.category);
				sink += (size_t)e->ts + (size_t)e->dur;
				break;
			}
			case TK_REC_TRACK: touch_track(rec.u.track); break;
			case TK_REC_DEVICE:
				touch(rec.u.device->name);
				touch(rec.u.device->host);
				break;
			case TK_REC_META:
				touch(rec.u.meta->key);
				touch(rec.u.meta->value);
				break;
			case TK_REC_CATEGORY:
				touch(rec.u.category->domain);
				touch(rec.u.category->name);
				break;
			default: break;
			}
		}
		touch(tk_reader_error(r));
		/* the end, or the error, stays */
		REQUIRE(tk_reader_next(r, &rec) == rc1);
		first_failed = rc1 != TK_EOF;
	}
	tk_reader_free(r);

	/* again by columns, every id resolved; odd batches mixed with
	 * events one by one */
	if (!(r = tk_reader_new()))
		return 0;
	if ((rc2 = tk_reader_open_mem(r, data, size, "fuzz")) == TK_OK) {
		struct tk_columns c;
		const struct tk_event *e;
		size_t at = 0;
		for (unsigned batch = 0; (rc2 = tk_reader_next_columns(r, &c)) == TK_OK; batch++) {
			REQUIRE(c.n > 0);
			for (size_t i = 0; i < c.n; i++) {
				const char *name = tk_reader_string(r, c.name_id[i]);
				touch(name);
				const struct tk_track *t = tk_reader_track(r, c.track[i]);
				if (t)
					touch_track(t);
				sink += c.kind[i] + (size_t)c.ts[i] + (size_t)c.dur[i];
				agree(&at, c.kind[i], c.ts[i], c.dur[i], name);
			}
			if (batch % 2) {
				int rc = tk_reader_next_event(r, &e);
				if (rc == TK_OK) {
					touch(e->name);
					agree(&at, e->kind, e->ts, e->dur, e->name);
				} else {
					REQUIRE(tk_reader_next_columns(r, &c) == rc);
					rc2 = rc;
					break;
				}
			}
		}
		touch(tk_reader_error(r));
		REQUIRE(tk_reader_next_columns(r, &c) == rc2);
		/* a clean first pass: the same clean end and every event; a
		 * failed one: the columns may get further (first_failed) */
		REQUIRE(rc2 == rc1 || first_failed);
		REQUIRE(rc1 != TK_EOF || (rc2 == TK_EOF && at == nseen));
	} else {
		REQUIRE(rc2 == rc1);
	}
	tk_reader_free(r);
	return 0;
}
