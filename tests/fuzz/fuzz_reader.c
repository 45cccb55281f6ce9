/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the .tkt reader on arbitrary bytes.  Built with
 * TK_FUZZING the reader skips its checksum comparisons, so mutations
 * reach the decoders behind them.  Every field of every record is
 * touched so that the sanitizers see any bad pointer; then the same
 * bytes are read by columns.
 */
#include <stdint.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_reader *r = tk_reader_new();
	struct tk_record rec;
	if (!r)
		return 0;
	if (tk_reader_open_mem(r, data, size, "fuzz") == TK_OK) {
		while (tk_reader_next(r, &rec) == TK_OK) {
			switch (rec.type) {
			case TK_REC_EVENT: {
				const struct tk_event *e = rec.u.event;
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
	}
	tk_reader_free(r);

	/* again by columns, every id resolved; odd batches mixed with
	 * events one by one */
	if (!(r = tk_reader_new()))
		return 0;
	if (tk_reader_open_mem(r, data, size, "fuzz") == TK_OK) {
		struct tk_columns c;
		const struct tk_event *e;
		for (unsigned batch = 0; tk_reader_next_columns(r, &c) == TK_OK; batch++) {
			for (size_t i = 0; i < c.n; i++) {
				touch(tk_reader_string(r, c.name_id[i]));
				const struct tk_track *t = tk_reader_track(r, c.track[i]);
				if (t)
					touch_track(t);
				sink += c.kind[i] + (size_t)c.ts[i] + (size_t)c.dur[i];
			}
			if (batch % 2 && tk_reader_next_event(r, &e) == TK_OK)
				touch(e->name);
		}
		touch(tk_reader_error(r));
	}
	tk_reader_free(r);
	return 0;
}
