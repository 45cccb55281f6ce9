/* SPDX-License-Identifier: MIT */
/*
 * Time order in bounded memory.  Chrome traces need not be sorted (the
 * PyTorch profiler writes CPU work first, then GPU work), but a .tkt
 * that is sorted can be read in one pass by every tool.
 *
 * Events wait in memory, their strings in an arena; when the memory
 * limit is reached they are sorted and written to an unlinked temporary
 * .tkt (a "run").  At the end, a trace that fits in memory is written
 * straight out; otherwise the sorted runs are merged into the output in
 * one pass.
 *
 * Memory while merging is that of a reader per run (its input buffer
 * and the arrays of one chunk: about half a MiB), so at most FAN_IN
 * runs are kept: when there are that many, the newest ones, of the
 * lowest levels, are merged into one run a level up (at least FAN_IN/2
 * runs each time).  An event is written again once per level, and the
 * levels are few: a 1 GB trace makes some 90 runs with the default
 * 16 MiB buffer, two levels.  (All runs were merged into one whenever
 * there were 48 of them before: each reader held its chunks' arrays
 * for 64 KiB chunks and workers reading ahead, 40 MB in all, and every
 * merge wrote everything so far again.)
 *
 * Why not the library's merge engine: a run carries the tracks as they
 * were known when it was written, and Kineto names its threads and
 * streams only at the very end.  Each run remembers which of our tracks
 * its track ids stand for, so the output is written with the final
 * definitions first, once, and the runs' events are mapped onto them.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

#define BLOCK_SIZE (64u * 1024u)
#define FAN_IN 48
/* Chunks of runs are small: a reader's arrays are sized to the events
 * of its chunk, and each run being merged has one */
#define RUN_CHUNK (16u * 1024u)

struct rec {
	struct tk_event ev;      /* strings point into the arena */
};

/* A run: a sorted .tkt in an unlinked temporary file. */
struct run {
	int fd;
	uint32_t *idx;           /* the run's track id -> our track index */
	uint32_t nidx;
	uint32_t level;          /* 0: sorted from memory; k + 1: merged
	                            from runs of level k and below */
	struct tk_reader *r;     /* while merging */
	const struct tk_event *head;
};

struct block {
	struct block *next;
	size_t used, size;
	char data[];
};

/* A string interned for the current run. */
struct istr {
	uint64_t hash;
	const char *s;
};

struct imp_sort {
	struct imp_tracks *t;
	size_t limit;
	char *tmpdir;
	struct rec *recs;        /* in the order they came */
	size_t n, cap, max_recs;
	uint64_t *keys;          /* sorting: times from the earliest */
	uint32_t *tmp;           /* sorting: the indexes of one pass */
	size_t block;            /* arena block size */
	uint32_t *idx;           /* recs in time order, once sorted */
	struct block *blocks;
	size_t arena_bytes;
	struct istr *strs;
	size_t nstrs, capstrs;
	struct run *runs;        /* sorted runs in temporary files */
	size_t capruns;
	uint32_t nruns, total_runs;
	uint32_t *map, *dmap;    /* track and device ids in a writer */
	uint32_t nmap;
	double *last;            /* output: last value of each counter */
	uint64_t repeats;
	uint64_t beyond;         /* output: events whose time plus the base
	                          * does not fit in 64 bits (skipped) */
	int failed;              /* a temporary file failed: no more */
	char errmsg[512];
};

struct imp_sort *
imp_sort_new(struct imp_tracks *t, size_t memory, const char *tmpdir)
{
	struct imp_sort *s = calloc(1, sizeof(*s));
	if (!s)
		cmd_die(EXIT_USAGE, "out of memory");
	s->t = t;
	s->limit = memory;
	/* half the memory for the events, half for their strings; an
	 * event's sort key and index cost 16 bytes more while sorting */
	s->max_recs = memory / 2 / (sizeof(struct rec) + sizeof(uint64_t) + sizeof(uint32_t));
	if (s->max_recs < 16)
		s->max_recs = 16;
	if (s->max_recs > UINT32_MAX)
		s->max_recs = UINT32_MAX;
	s->block = memory / 32 < BLOCK_SIZE ? memory / 32 : BLOCK_SIZE;
	if (s->block < 1024)
		s->block = 1024;
	if (!tmpdir || !*tmpdir)
		tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	if (!(s->tmpdir = strdup(tmpdir)))
		cmd_die(EXIT_USAGE, "out of memory");
	return s;
}

static void
clear_arena(struct imp_sort *s)
{
	while (s->blocks) {
		struct block *b = s->blocks->next;
		free(s->blocks);
		s->blocks = b;
	}
	s->arena_bytes = 0;
	if (s->strs)
		memset(s->strs, 0, s->capstrs * sizeof(*s->strs));
	s->nstrs = 0;
}

void
imp_sort_free(struct imp_sort *s)
{
	if (!s)
		return;
	clear_arena(s);
	for (uint32_t i = 0; i < s->nruns; i++) {
		close(s->runs[i].fd);
		free(s->runs[i].idx);
	}
	free(s->runs);
	free(s->recs);
	free(s->idx);
	free(s->keys);
	free(s->tmp);
	free(s->strs);
	free(s->map);
	free(s->dmap);
	free(s->last);
	free(s->tmpdir);
	free(s);
}

const char *
imp_sort_error(const struct imp_sort *s)
{
	return s->errmsg;
}

uint32_t
imp_sort_runs(const struct imp_sort *s)
{
	return s->total_runs;
}

uint64_t
imp_sort_repeats(const struct imp_sort *s)
{
	return s->repeats;
}

uint64_t
imp_sort_beyond(const struct imp_sort *s)
{
	return s->beyond;
}

static int sfail(struct imp_sort *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
sfail(struct imp_sort *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the arena --------------------------------------------------------------- */

static char *
arena_alloc(struct imp_sort *s, size_t n)
{
	struct block *b = s->blocks;
	if (!b || b->size - b->used < n) {
		size_t size = n > s->block / 4 ? n : s->block;
		struct block *nb = malloc(sizeof(*nb) + size);
		if (!nb)
			cmd_die(EXIT_USAGE, "out of memory");
		nb->size = size;
		nb->used = 0;
		if (b && n > s->block / 4) {
			/* a big one: behind the current block, which stays */
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			s->blocks = nb;
		}
		s->arena_bytes += sizeof(*nb) + size;
		b = nb;
	}
	char *p = b->data + b->used;
	b->used += n;
	return p;
}

/* The copy of s in this run's arena (one per distinct string). */
static const char *
intern(struct imp_sort *s, const char *str)
{
	if (!str || !*str)
		return "";
	size_t n = strlen(str);
	if ((s->nstrs + 1) * 2 > s->capstrs) {
		size_t cap = s->capstrs ? s->capstrs * 2 : 64;
		struct istr *t = calloc(cap, sizeof(*t));
		if (!t)
			cmd_die(EXIT_USAGE, "out of memory");
		for (size_t i = 0; i < s->capstrs; i++) {
			if (!s->strs[i].hash)
				continue;
			size_t j = s->strs[i].hash & (cap - 1);
			while (t[j].hash)
				j = (j + 1) & (cap - 1);
			t[j] = s->strs[i];
		}
		free(s->strs);
		s->strs = t;
		s->capstrs = cap;
	}
	uint64_t h = tkp_hash(str, n, 0) | 1;   /* 0 marks an empty slot */
	size_t j = h & (s->capstrs - 1);
	for (; s->strs[j].hash; j = (j + 1) & (s->capstrs - 1))
		if (s->strs[j].hash == h && strcmp(s->strs[j].s, str) == 0)
			return s->strs[j].s;
	char *c = arena_alloc(s, n + 1);
	memcpy(c, str, n + 1);
	s->strs[j].hash = h;
	s->strs[j].s = c;
	s->nstrs++;
	return c;
}

/* Time to write a run? */
static int
full(const struct imp_sort *s)
{
	return s->n >= s->max_recs ||
	       s->arena_bytes + s->capstrs * sizeof(struct istr) > s->limit / 2;
}

/* ---- sorting and writing ------------------------------------------------------- */

/*
 * s->idx: the buffered events by time, ties in the order they came.  A
 * stable radix sort of the times, a byte a pass, skipping the bytes all
 * times share (a run spans seconds: 4 or 5 passes); qsort's call per
 * comparison was 5 % of an import.  Stretches already in order are
 * common (a Kineto trace writes each thread's work in order), and a
 * buffer that is all in order is not sorted at all.
 */
static void
sort_recs(struct imp_sort *s)
{
	size_t n = s->n;
	if (!n)
		return;
	int64_t min = s->recs[0].ev.ts;
	int in_order = 1;
	for (size_t i = 1; i < n; i++) {
		int64_t ts = s->recs[i].ev.ts;
		in_order &= ts >= s->recs[i - 1].ev.ts;
		if (ts < min)
			min = ts;
	}
	for (size_t i = 0; i < n; i++)
		s->idx[i] = (uint32_t)i;
	if (in_order)
		return;
	/* from the earliest: unsigned, and the same order */
	uint32_t count[8][256] = { { 0 } };   /* per byte: keys per value */
	for (size_t i = 0; i < n; i++) {
		uint64_t k = (uint64_t)s->recs[i].ev.ts - (uint64_t)min;
		s->keys[i] = k;
		for (int b = 0; b < 8; b++)
			count[b][k >> (8 * b) & 0xff]++;
	}
	uint32_t *from = s->idx, *to = s->tmp;
	for (int b = 0; b < 8; b++) {
		uint32_t *c = count[b];
		if (c[s->keys[0] >> (8 * b) & 0xff] == n)
			continue;        /* every key has this byte */
		uint32_t sum = 0;
		for (int d = 0; d < 256; d++) {
			uint32_t k = c[d];
			c[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t x = from[i];
			to[c[s->keys[x] >> (8 * b) & 0xff]++] = x;
		}
		uint32_t *t = from;
		from = to;
		to = t;
	}
	if (from != s->idx)
		memcpy(s->idx, from, n * sizeof(*s->idx));
}

/* Fresh id maps for a new writer. */
static void
reset_maps(struct imp_sort *s)
{
	free(s->map);
	free(s->dmap);
	s->nmap = imp_ntracks(s->t) + 1;
	s->map = calloc(s->nmap, sizeof(*s->map));
	s->dmap = calloc(imp_ndevices(s->t) + 1, sizeof(*s->dmap));
	if (!s->map || !s->dmap)
		cmd_die(EXIT_USAGE, "out of memory");
}

static int
wfail(struct imp_sort *s, struct tk_writer *w, const char *what)
{
	return sfail(s, "%s: %s", what, tk_writer_error(w));
}

/* Write one event whose track (and end track) are our track indexes;
 * to the output (s->last set), counter samples that repeat the value
 * before are left out where the track says so. */
static int
put_event(struct imp_sort *s, struct tk_writer *w, struct tk_event *ev,
          int64_t offset, const char *what)
{
	if (s->last && ev->kind == TK_COUNTER &&
	    imp_counter_skips_repeats(s->t, ev->track)) {
		double *last = &s->last[ev->track];
		if (*last == ev->u.counter.value) {
			s->repeats++;
			return 0;
		}
		*last = ev->u.counter.value;
	}
	uint32_t id = imp_define_track(s->t, w, ev->track, s->map, s->dmap);
	if (!id)
		return wfail(s, w, what);
	ev->track = id;
	if ((ev->kind == TK_ASYNC_RANGE) && ev->u.range.end_track &&
	    !(ev->u.range.end_track = imp_define_track(s->t, w, ev->u.range.end_track,
	                                               s->map, s->dmap)))
		return wfail(s, w, what);
	/* a bad time in the input, not a failed output: the event is
	 * skipped and counted, and the import goes on */
	if ((offset > 0 && ev->ts > INT64_MAX - offset) ||
	    (offset < 0 && ev->ts < INT64_MIN - offset)) {
		s->beyond++;
		return 0;
	}
	ev->ts += offset;
	if (ev->ts > 0 && ev->dur > INT64_MAX - ev->ts)
		ev->dur = INT64_MAX - ev->ts;
	if (tk_writer_event(w, ev) != TK_OK)
		return wfail(s, w, what);
	return 0;
}

/* Write the buffered events, sorted, into w. */
static int
write_events(struct imp_sort *s, struct tk_writer *w, int64_t offset,
             const char *what)
{
	sort_recs(s);
	for (size_t i = 0; i < s->n; i++) {
		struct tk_event ev = s->recs[s->idx[i]].ev;
		if (put_event(s, w, &ev, offset, what) < 0)
			return -1;
	}
	s->n = 0;
	clear_arena(s);
	return 0;
}

static int
temp_file(struct imp_sort *s)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/trace-import-XXXXXX", s->tmpdir);
	int fd = mkstemp(path);
	if (fd < 0)
		return sfail(s, "cannot create a temporary file in %s: %s", s->tmpdir,
		             strerror(errno));
	unlink(path);  /* nothing is left behind, even when killed */
	return fd;
}

/* A sorted writer on a new temporary file, with fresh id maps. */
static struct tk_writer *
run_writer(struct imp_sort *s, int *fd)
{
	if ((*fd = temp_file(s)) < 0)
		return NULL;
	struct tk_writer_options o = TK_WRITER_OPTIONS_INIT;
	o.level = 1;             /* read back once: speed over size */
	o.sorted = 1;
	o.chunk_bytes = RUN_CHUNK;
	struct tk_writer *w = tk_writer_new();
	if (!w)
		cmd_die(EXIT_USAGE, "out of memory");
	if (tk_writer_open_fd(w, *fd, "(temporary file)", &o) != TK_OK) {
		wfail(s, w, "temporary file");
		tk_writer_free(w);
		close(*fd);
		return NULL;
	}
	reset_maps(s);
	return w;
}

/* Finish a run: close its writer and keep its track ids. */
static int
end_run(struct imp_sort *s, struct tk_writer *w, int fd, int ok, uint32_t level)
{
	if (ok && tk_writer_close(w) != TK_OK)
		ok = wfail(s, w, "temporary file") == 0;
	tk_writer_free(w);
	if (!ok) {
		close(fd);
		return -1;
	}
	struct run *r = tkp_grow(s->runs, &s->capruns, s->nruns + 1, sizeof(*r));
	if (!r)
		cmd_die(EXIT_USAGE, "out of memory");
	s->runs = r;
	r = &s->runs[s->nruns++];
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->level = level;
	/* the writer gave ids in order: invert our index -> id map */
	for (uint32_t i = 0; i < s->nmap; i++)
		if (s->map[i] >= r->nidx)
			r->nidx = s->map[i] + 1;
	r->idx = calloc(r->nidx ? r->nidx : 1, sizeof(*r->idx));
	if (!r->idx)
		cmd_die(EXIT_USAGE, "out of memory");
	for (uint32_t i = 0; i < s->nmap; i++)
		if (s->map[i])
			r->idx[s->map[i]] = i;
	return 0;
}

/* ---- merging the runs ----------------------------------------------------------- */

static int
run_before(const struct run *a, const struct run *b, uint32_t ia, uint32_t ib)
{
	if (a->head->ts != b->head->ts)
		return a->head->ts < b->head->ts;
	return ia < ib;          /* ties: the earlier run, as they arrived */
}

static void
sift(struct imp_sort *s, uint32_t *heap, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && run_before(&s->runs[heap[l]], &s->runs[heap[m]], heap[l], heap[m]))
			m = l;
		if (r < n && run_before(&s->runs[heap[r]], &s->runs[heap[m]], heap[r], heap[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* Next event of run r into r->head (NULL at its end). */
static int
advance(struct imp_sort *s, struct run *r)
{
	int rc = tk_reader_next_event(r->r, &r->head);
	if (rc == TK_OK)
		return 0;
	r->head = NULL;
	if (rc == TK_EOF)
		return 0;
	return sfail(s, "temporary file: %s", tk_reader_error(r->r));
}

/* Merge runs [first, nruns) into w, which s->map describes; then they
 * are closed. */
static int
merge_runs(struct imp_sort *s, uint32_t first, struct tk_writer *w,
           int64_t offset, const char *what)
{
	uint32_t n = 0, *heap = calloc(s->nruns + 1, sizeof(*heap));
	if (!heap)
		cmd_die(EXIT_USAGE, "out of memory");
	int rc = 0;
	for (uint32_t i = first; i < s->nruns && !rc; i++) {
		struct run *r = &s->runs[i];
		if (!(r->r = tk_reader_new()))
			cmd_die(EXIT_USAGE, "out of memory");
		/* no workers reading ahead: each would hold chunks of its
		 * own for every run, and the runs are many */
		struct tk_reader_options ro = TK_READER_OPTIONS_INIT;
		ro.threads = 1;
		tk_reader_set_options(r->r, &ro);
		if (lseek(r->fd, 0, SEEK_SET) < 0 ||
		    tk_reader_open_fd(r->r, r->fd, "(temporary file)") != TK_OK) {
			rc = sfail(s, "temporary file: %s", tk_reader_error(r->r));
			break;
		}
		if ((rc = advance(s, r)) == 0 && r->head)
			heap[n++] = i;
	}
	for (uint32_t i = n / 2; i-- > 0;)
		sift(s, heap, n, i);
	while (n && !rc) {
		struct run *r = &s->runs[heap[0]];
		struct tk_event ev = *r->head;
		if (ev.track >= r->nidx || !r->idx[ev.track] ||
		    (ev.kind == TK_ASYNC_RANGE && ev.u.range.end_track &&
		     (ev.u.range.end_track >= r->nidx || !r->idx[ev.u.range.end_track]))) {
			rc = sfail(s, "temporary file: an event on an unknown track");
			break;
		}
		/* back to our indexes; strings go by pointer */
		ev.track = r->idx[ev.track];
		if (ev.kind == TK_ASYNC_RANGE && ev.u.range.end_track)
			ev.u.range.end_track = r->idx[ev.u.range.end_track];
		ev.name_id = 0;
		switch (ev.kind) {
		case TK_RANGE: case TK_ASYNC_RANGE: case TK_MARK:
			ev.u.range.domain_id = 0; break;
		case TK_KERNEL: ev.u.kernel.mangled_id = 0; break;
		case TK_DROPPED: ev.u.dropped.reason_id = 0; break;
		case TK_FLOW: ev.u.flow.category_id = 0; break;
		}
		if ((rc = put_event(s, w, &ev, offset, what)) < 0)
			break;
		if ((rc = advance(s, r)) < 0)
			break;
		if (!r->head)
			heap[0] = heap[--n];
		sift(s, heap, n, 0);
	}
	free(heap);
	for (uint32_t i = first; i < s->nruns; i++) {
		tk_reader_free(s->runs[i].r);
		s->runs[i].r = NULL;
		close(s->runs[i].fd);
		free(s->runs[i].idx);
	}
	s->nruns = first;
	return rc;
}

/*
 * FAN_IN runs are open: merge the newest into one.  Levels never grow
 * from the oldest run to the newest, so the runs of the lowest levels
 * are the newest ones; enough levels are taken for at least half of
 * FAN_IN runs, so that each merge frees many places.  Ties in time
 * still go to the run that came first: the merged runs all came after
 * the ones left.
 */
static int
merge_newest(struct imp_sort *s)
{
	uint32_t first = s->nruns;
	while (first > 0 &&
	       (s->nruns - first < FAN_IN / 2 || s->runs[first - 1].level == s->runs[first].level))
		first--;
	uint32_t level = s->runs[first].level + 1;
	int fd;
	struct tk_writer *w = run_writer(s, &fd);
	if (!w)
		return -1;
	int ok = merge_runs(s, first, w, 0, "temporary file") == 0;
	return end_run(s, w, fd, ok, level);
}

/* Sort what waits and write it to a new run. */
static int
spill(struct imp_sort *s)
{
	int fd;
	struct tk_writer *w = run_writer(s, &fd);
	if (!w)
		return -1;
	int ok = write_events(s, w, 0, "temporary file") == 0;
	if (end_run(s, w, fd, ok, 0) < 0)
		return -1;
	s->total_runs++;
	/* after the events' strings are freed (write_events) */
	if (s->nruns >= FAN_IN && merge_newest(s) < 0)
		return -1;
	return 0;
}

int
imp_sort_add(struct imp_sort *s, const struct tk_event *ev)
{
	if (s->failed)
		return -1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		if (cap > s->max_recs)
			cap = s->max_recs;
		struct rec *r = realloc(s->recs, cap * sizeof(*r));
		uint32_t *x = realloc(s->idx, cap * sizeof(*x));
		uint32_t *t = realloc(s->tmp, cap * sizeof(*t));
		uint64_t *k = realloc(s->keys, cap * sizeof(*k));
		if (r)
			s->recs = r;
		if (x)
			s->idx = x;
		if (t)
			s->tmp = t;
		if (k)
			s->keys = k;
		if (!r || !x || !t || !k)
			cmd_die(EXIT_USAGE, "out of memory");
		s->cap = cap;
	}
	struct rec *r = &s->recs[s->n++];
	r->ev = *ev;
	struct tk_event *e = &r->ev;
	e->trk = NULL;
	e->name_id = 0;
	e->name = intern(s, ev->name);
	switch (ev->kind) {
	case TK_RANGE:
	case TK_ASYNC_RANGE:
	case TK_MARK:
		e->u.range.domain_id = 0;
		e->u.range.domain = intern(s, ev->u.range.domain);
		break;
	case TK_KERNEL:
		e->u.kernel.mangled_id = 0;
		e->u.kernel.mangled = intern(s, ev->u.kernel.mangled);
		break;
	case TK_DROPPED:
		e->u.dropped.reason_id = 0;
		e->u.dropped.reason = intern(s, ev->u.dropped.reason);
		break;
	case TK_FLOW:
		e->u.flow.category_id = 0;
		e->u.flow.category = intern(s, ev->u.flow.category);
		break;
	}
	if (ev->args && ev->args_len) {
		char *a = arena_alloc(s, ev->args_len);
		memcpy(a, ev->args, ev->args_len);
		e->args = a;
	} else {
		e->args = NULL;
		e->args_len = 0;
	}
	imp_track_used(s->t, ev->track);
	if (ev->kind == TK_ASYNC_RANGE)
		imp_track_used(s->t, ev->u.range.end_track);
	if (full(s) && spill(s) < 0) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

int
imp_sort_finish(struct imp_sort *s, struct tk_writer *out, int64_t offset,
                int (*meta_fn)(void *arg, struct tk_writer *w), void *meta_arg)
{
	if (s->failed)
		return -1;
	if (s->n && s->nruns && spill(s) < 0)
		return -1;
	if (s->nruns) {
		/* the merge needs the memory, not the empty buffer */
		free(s->recs);
		free(s->idx);
		free(s->keys);
		free(s->tmp);
		free(s->strs);
		s->recs = NULL;
		s->idx = NULL;
		s->keys = NULL;
		s->tmp = NULL;
		s->strs = NULL;
		s->cap = s->capstrs = 0;
	}
	/* the definitions, final and once: metadata, devices, tracks */
	reset_maps(s);
	if (!(s->last = malloc(s->nmap * sizeof(*s->last))))
		cmd_die(EXIT_USAGE, "out of memory");
	for (uint32_t i = 0; i < s->nmap; i++)
		s->last[i] = NAN;
	if (meta_fn && meta_fn(meta_arg, out) < 0)
		return wfail(s, out, "output");
	for (uint32_t d = 1; d < imp_ndevices(s->t); d++)
		if (!imp_define_device(s->t, out, d, s->dmap))
			return wfail(s, out, "output");
	for (uint32_t i = 1; i < imp_ntracks(s->t); i++)
		if (imp_track_is_used(s->t, i) &&
		    !imp_define_track(s->t, out, i, s->map, s->dmap))
			return wfail(s, out, "output");
	if (s->nruns)
		return merge_runs(s, 0, out, offset, "output");
	return write_events(s, out, offset, "output");
}
