/* SPDX-License-Identifier: MIT */
/*
 * scramble: rewrite a trace the way a recorder with per-thread buffers
 * writes one, for tests that need unsorted input.  Each track's events
 * are held until --batch of them have gathered, then written together,
 * so begin times go back and forth between chunks.  With each chunk
 * goes an honest watermark (the earliest begin still held or still to
 * be read), or none at all with --no-watermark.  --host renames the
 * host of every process and device (same pid, another machine).
 *
 *   scramble [--batch N] [--no-watermark] [--host NAME] [--chunk-bytes N]
 *            [-o OUT] [FILE]
 */
#include <getopt.h>
#include <stdint.h>

#include "copydefs.h"

struct held {
	struct tk_event *ev;
	uint32_t n, cap;
};

static struct held *held;
static uint32_t nheld;

static void
hold(const struct tk_event *e)
{
	if (e->track >= nheld) {
		uint32_t n = nheld ? nheld : 64;
		while (n <= e->track)
			n *= 2;
		held = realloc(held, n * sizeof(*held));
		if (!held)
			cmd_die(2, "out of memory");
		memset(held + nheld, 0, (n - nheld) * sizeof(*held));
		nheld = n;
	}
	struct held *h = &held[e->track];
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		if (!(h->ev = realloc(h->ev, h->cap * sizeof(*h->ev))))
			cmd_die(2, "out of memory");
	}
	struct tk_event *c = &h->ev[h->n++];
	*c = *e;
	if (e->args_len) {
		char *a = malloc(e->args_len);
		if (!a)
			cmd_die(2, "out of memory");
		memcpy(a, e->args, e->args_len);
		c->args = a;
	}
}

/* Earliest begin held, below `t`. */
static int64_t
held_min(int64_t t)
{
	for (uint32_t i = 0; i < nheld; i++)
		for (uint32_t j = 0; j < held[i].n; j++)
			if (held[i].ev[j].ts < t)
				t = held[i].ev[j].ts;
	return t;
}

static void
flush_track(struct tk_writer *w, uint32_t track)
{
	struct held *h = &held[track];
	for (uint32_t j = 0; j < h->n; j++) {
		if (tk_writer_event(w, &h->ev[j]))
			cmd_die(2, "%s", tk_writer_error(w));
		free((void *)h->ev[j].args);
	}
	h->n = 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "no-watermark", no_argument, NULL, 'W' },
		{ "host", required_argument, NULL, 'H' },
		{ "chunk-bytes", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	cmd_init("scramble");
	uint64_t batch = 32, chunk = 16384;
	int watermarks = 1;
	const char *out = "-";
	struct copymaps maps = { 0 };
	int c;
	while ((c = getopt_long(argc, argv, "b:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (cmd_parse_uint(optarg, &batch) || !batch)
				cmd_die(2, "bad --batch");
			break;
		case 'W': watermarks = 0; break;
		case 'H': maps.host = optarg; break;
		case 'c':
			if (cmd_parse_uint(optarg, &chunk))
				cmd_die(2, "bad --chunk-bytes");
			break;
		case 'o': out = optarg; break;
		default: cmd_die(2, "usage: scramble [--batch N] [--no-watermark] "
		                 "[--host NAME] [--chunk-bytes N] [-o OUT] [FILE]");
		}
	}
	const char *in = optind < argc ? argv[optind] : "-";
	struct tk_reader *r = cmd_open_reader(in);
	if (!r)
		return 1;
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	wo.chunk_bytes = (uint32_t)chunk;
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_path(w, out, &wo))
		cmd_die(2, "%s: %s", out, tk_writer_error(w));
	struct tk_record rec;
	struct tk_event ev;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		if (rec.type != TK_REC_EVENT) {
			copy_definition(w, &maps, &rec);
			continue;
		}
		copy_event(w, &maps, rec.u.event, &ev);
		hold(&ev);
		if (held[ev.track].n < batch)
			continue;
		if (watermarks) {
			/* what is still to be read begins no earlier than the
			 * input promises */
			const struct tk_chunk_info *ci = tk_reader_chunk(r);
			int64_t rest = ci->flags & TK_CHUNK_SORTED ? ev.ts : ci->t_min;
			int64_t next = rest < ci->watermark ? rest : ci->watermark;
			tk_writer_watermark(w, held_min(next));
		}
		flush_track(w, ev.track);
	}
	if (rc != TK_EOF) {
		cmd_reader_error(in, r);
		return 1;
	}
	for (uint32_t t = 0; t < nheld; t++)
		flush_track(w, t);
	if (tk_writer_close(w))
		cmd_die(2, "%s: %s", out, tk_writer_error(w));
	tk_writer_free(w);
	tk_reader_free(r);
	for (uint32_t t = 0; t < nheld; t++)
		free(held[t].ev);
	free(held);
	copymaps_free(&maps);
	return 0;
}
