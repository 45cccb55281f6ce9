/* SPDX-License-Identifier: MIT */
/*
 * owners: for each event of the traces, in stream order, the index of
 * its file and the identity of the process it belongs to, tab-separated:
 * file, host, pid, process start, label.  Tests line it up with the rows
 * of `trace-dump --csv FILE...`, whose pid alone cannot tell apart two
 * processes of one pid on two hosts.  An event of no process (a device's
 * counter) shows its device's host and pid -1.
 *
 *   owners FILE...
 */
#include <inttypes.h>
#include <stdio.h>

#include "tracekit.h"
#include "common/util.h"

static const struct tk_track *
process_of(const struct tk_reader *r, const struct tk_track *t)
{
	uint32_t p = 0;
	switch (t->type) {
	case TK_TRACK_PROCESS: return t;
	case TK_TRACK_THREAD: p = t->u.thread.process; break;
	case TK_TRACK_STREAM: p = t->u.stream.process; break;
	case TK_TRACK_COUNTER: p = t->u.counter.process; break;
	default: break;
	}
	return tk_reader_track(r, p);
}

static int
owners(int index, const char *path)
{
	struct tk_reader *r = cmd_open_reader(path);
	if (!r)
		return 1;
	const struct tk_event *e;
	int rc;
	while ((rc = tk_reader_next_event(r, &e)) == TK_OK) {
		const struct tk_track *p = process_of(r, e->trk);
		if (p && p->type == TK_TRACK_PROCESS) {
			printf("%d\t%s\t%" PRId64 "\t%" PRId64 "\t%s\n", index,
			       p->u.process.host, p->u.process.pid,
			       p->u.process.start, p->u.process.label);
			continue;
		}
		const struct tk_device *d = NULL;
		if (e->trk->type == TK_TRACK_COUNTER)
			d = tk_reader_device(r, e->trk->u.counter.device);
		printf("%d\t%s\t-1\t0\t\n", index, d ? d->host : "");
	}
	int status = 0;
	if (rc != TK_EOF) {
		cmd_reader_error(path, r);
		status = 1;
	}
	tk_reader_free(r);
	return status;
}

int
main(int argc, char **argv)
{
	cmd_init("owners");
	int status = 0;
	for (int i = 1; i < argc; i++)
		status |= owners(i - 1, argv[i]);
	return cmd_finish(status);
}
