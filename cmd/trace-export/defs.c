/* SPDX-License-Identifier: MIT */
/*
 * Rows of the definitions (processes, threads, devices, streams, the
 * strings the events name) as the reader meets them, and the run's own
 * row at the end.  A definition given again (a thread renamed) gets a
 * row again: the last one is the one that held at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "common/util.h"

/* The pid of process track `id`, or a null. */
static void
put_pid(struct ex *x, struct sink *s, uint32_t id)
{
	const struct tk_track *p = id ? tk_reader_track(x->r, id) : NULL;
	if (p && p->type == TK_TRACK_PROCESS)
		sink_i64(s, p->u.process.pid);
	else
		sink_null(s);
}

/* The CUDA ordinal of device `id`, or a null. */
static void
put_device(struct ex *x, struct sink *s, uint32_t id)
{
	const struct tk_device *d = id ? tk_reader_device(x->r, id) : NULL;
	if (d)
		sink_i64(s, d->index);
	else
		sink_null(s);
}

static char *
join_argv(const struct tk_process *p)
{
	size_t n = 1;
	for (uint32_t i = 0; i < p->argc; i++)
		n += strlen(p->argv[i]) + 1;
	char *s = cmd_xrealloc(NULL, n), *q = s;
	*q = 0;
	for (uint32_t i = 0; i < p->argc; i++)
		q += sprintf(q, "%s%s", i ? " " : "", p->argv[i]);
	return s;
}

static void
process_row(struct ex *x, const struct tk_process *p)
{
	struct sink *s = &x->t[XT_PROCESSES];
	char *cmd = join_argv(p);
	sink_run(s, x);
	sink_i64(s, p->pid);
	if (p->ppid)
		sink_i64(s, p->ppid);
	else
		sink_null(s);
	sink_str(s, p->host);
	sink_str(s, cmd);
	sink_str(s, p->label);
	if (p->start)
		sink_i64(s, p->start);
	else
		sink_null(s);
	sink_end_row(s);
	if (!x->host && p->host && *p->host)
		x->host = cmd_xstrdup(p->host);
	if (!x->command && *cmd)
		x->command = cmd;
	else
		free(cmd);
}

void
ex_track(struct ex *x, const struct tk_track *t)
{
	struct sink *s;
	switch (t->type) {
	case TK_TRACK_PROCESS:
		process_row(x, &t->u.process);
		break;
	case TK_TRACK_THREAD:
		s = &x->t[XT_THREADS];
		sink_run(s, x);
		put_pid(x, s, t->u.thread.process);
		sink_i64(s, t->u.thread.tid);
		sink_str(s, t->u.thread.name);
		sink_end_row(s);
		break;
	case TK_TRACK_STREAM:
		s = &x->t[XT_STREAMS];
		sink_run(s, x);
		put_pid(x, s, t->u.stream.process);
		put_device(x, s, t->u.stream.device);
		sink_u64(s, t->u.stream.context);
		sink_u64(s, t->u.stream.stream);
		sink_str(s, t->u.stream.name);
		sink_end_row(s);
		break;
	default:
		break; /* counters: their name and unit are in each sample */
	}
}

void
ex_device(struct ex *x, const struct tk_device *d)
{
	struct sink *s = &x->t[XT_DEVICES];
	char uuid[33];
	for (int i = 0; i < 16; i++)
		snprintf(uuid + 2 * i, 3, "%02x", d->uuid[i]);
	sink_run(s, x);
	sink_i64(s, d->index);
	sink_str(s, d->host);
	sink_str(s, d->name);
	sink_str(s, uuid);
	sink_i64(s, d->sm_count);
	sink_u64(s, d->memory);
	sink_i64(s, d->cc_major);
	sink_i64(s, d->cc_minor);
	sink_end_row(s);
	if (!x->gpu && d->name && *d->name)
		x->gpu = cmd_xstrdup(d->name);
}

void
ex_scope(struct ex *x)
{
	memset(x->seen_string, 0, x->nseen);
}

void
ex_string(struct ex *x, uint32_t id, const char *str)
{
	if (id == 0)
		return;
	if (id / 8 >= x->nseen) {
		size_t n = x->nseen ? x->nseen : 64;
		while (id / 8 >= n)
			n *= 2;
		x->seen_string = cmd_xrealloc(x->seen_string, n);
		memset(x->seen_string + x->nseen, 0, n - x->nseen);
		x->nseen = n;
	}
	if (x->seen_string[id / 8] & (1u << (id % 8)))
		return;
	x->seen_string[id / 8] |= (uint8_t)(1u << (id % 8));
	struct sink *s = &x->t[XT_STRINGS];
	sink_run(s, x);
	sink_i64(s, tk_reader_scope(x->r));
	sink_i64(s, id);
	sink_str(s, str);
	sink_end_row(s);
}

static void
opt_str(struct sink *s, const char *v)
{
	if (v && *v)
		sink_str(s, v);
	else
		sink_null(s);
}

void
ex_run_row(struct ex *x, const char *source)
{
	struct sink *s = &x->t[XT_RUNS];
	const char *host = tk_reader_meta_get(x->r, "host");
	const char *cmd = tk_reader_meta_get(x->r, "command");
	sink_run(s, x);
	sink_str(s, source);
	opt_str(s, host ? host : x->host);
	opt_str(s, cmd ? cmd : x->command);
	opt_str(s, tk_reader_meta_get(x->r, "git.commit"));
	opt_str(s, tk_reader_meta_get(x->r, "git.branch"));
	opt_str(s, x->gpu);
	opt_str(s, tk_reader_meta_get(x->r, "cuda.driver"));
	if (x->events) {
		sink_i64(s, x->t_min);
		sink_i64(s, x->t_max);
		sink_i64(s, x->t_max - x->t_min);
	} else {
		sink_null(s);
		sink_null(s);
		sink_null(s);
	}
	sink_u64(s, x->events);
	sink_i64(s, tk_reader_scope(x->r));
	sink_end_row(s);
}

void
ex_defs_free(struct ex *x)
{
	free(x->seen_string);
	free(x->host);
	free(x->command);
	free(x->gpu);
}
