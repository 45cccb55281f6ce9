/* SPDX-License-Identifier: MIT */
/*
 * Aggregation of traces: one pass over each input, events to groups,
 * GPU work to per-device interval unions, counters and memory events to
 * peaks.  See aggregate.h.
 *
 * The hot path is one event: a track lookup (cached per scope by track
 * id), a group lookup (cached per scope by kind and string id), an
 * append to the group's durations and, for GPU work, to the device's
 * pending intervals.  Strings are touched only the first time an id is
 * seen in a scope.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aggregate.h"
#include "allocpeak.h"
#include "breakdown.h"
#include "busy.h"
#include "ranks.h"
#include "steps.h"
#include "common/strmap.h"
#include "common/util.h"
#include "import/autoread.h"
#include "support.h"

/* A cached name: group index + 1 (0 = not looked up, -1 = filtered out). */
struct nslot {
	int32_t g;
	uint32_t dom;            /* ranges: the domain id it was looked up with */
	uint8_t per;             /* ranges: the --per range */
};

enum { CTR_NONE, CTR_RSS, CTR_DEVMEM, CTR_ALLOCATED, CTR_RESERVED };

/* A cached track of the current scope. */
struct trk {
	uint8_t valid;
	uint8_t pass;            /* the --pid/--device/--stream filters keep it */
	uint8_t counter;         /* CTR_* */
	uint8_t thread;          /* a thread's track (not a stream's) */
	int32_t dev;             /* device index in agg->devs, -1 */
	int32_t proc;            /* process index in agg->procs, -1 */
	uint32_t proc_track;     /* its process's track id, 0 = unknown */
	int32_t rank;            /* --distributed: index in ranks.h, -1 */
	uint32_t label;          /* its process's label: 0 none, else
	                            index in agg.label_map + 1 */
};

/* Per-device state of the current scope. */
struct dev_scope {
	struct busy busy;
	struct pairbuf mem;      /* (ts, +bytes / -bytes) */
	int64_t in_use;          /* allocated and not freed in this scope */
	int active;
};

/* The runs of one trace scope (TK_RUN events), by begin time. */
struct run_window {
	uint32_t index;
	int64_t b, e;
};

struct scope_runs {
	struct run_window *v;
	size_t n, cap;
};

struct scope {
	struct nslot *names[TK_KIND_MAX + 1];
	size_t nnames[TK_KIND_MAX + 1];
	struct trk *trk;
	size_t ntrk;
	int32_t *devmap;         /* scope device id -> index in agg->devs */
	size_t ndevmap;
	uint64_t chunk;          /* offset of the current chunk */
	int64_t watermark;       /* highest promise so far */
	int64_t settled_before;  /* events beginning at or before this come
	                            in begin order: the current chunk is
	                            sorted and promised nothing earlier later */
	int started;             /* an event of this scope was seen */
	int64_t lo, hi;          /* keep events beginning in [lo, hi) */
	unsigned number;
};

struct segment {
	int64_t first, last;
};

struct device {
	struct agg_device pub;
	uint8_t uuid[16];
	struct dev_scope cur;
	struct segment *segs;    /* activity window in each scope */
	size_t nsegs, capsegs;
};

struct agg {
	struct agg_options opt;
	int filter_tracks;       /* --pid, --device or --stream */
	int filter_time;         /* --from, --to or --run */
	struct agg_group *groups;
	size_t ngroups, capgroups;
	struct strmap group_map;
	int32_t memcpy_map[11][8][8]; /* by copy, src, dst kind: group + 1 */
	int32_t memset_map[8];
	struct device *devs;
	size_t ndevs, capdevs;
	struct strmap dev_map;
	struct agg_process *procs;
	size_t nprocs, capprocs;
	struct strmap proc_map;
	struct strmap meta_map, drop_map;
	size_t capmeta, capdrops; /* of run.meta, run.drops */
	struct agg_run run;
	struct scope sc;
	struct scope_runs *runs; /* --run, by_run: by scope number */
	size_t nruns;
	struct perinst *per;
	struct step_match per_match; /* per_match.name: NULL until known */
	char *per_label;         /* what agg_per_name() says */
	int per_whole_input;     /* an instance was a capture range */
	struct breakdown *bd;    /* with per: step time by category */
	struct opview *ops;      /* options.operators */
	struct ranks *ranks;     /* options.distributed */
	struct allocpeak *alloc; /* the allocator's peaks per step and the
	                            operation at each (NULL with
	                            AGG_SKIP_MEMORY) */
	struct strmap label_map; /* process labels seen, for trk.label */
	long nlabels;
	const char *cur_path;    /* the input being read */
	const struct perinst_result *per_result;
	int finished;
	int restored;            /* built from a summary (agg_restore_*):
	                            the groups' summaries are given, their
	                            distributions empty */
	int64_t resolution;      /* restored: the clock tick it was given */
	int64_t in_min, in_max;  /* by_input: earliest begin, latest end of
	                            the input being read */
};


static void
oom_if(int rc)
{
	if (rc < 0)
		cmd_die(EXIT_USAGE, "out of memory");
}

/* tkp_grow(), or exit 2 when memory runs out. */
static void *
xgrow(void *items, size_t *cap, size_t need, size_t size)
{
	void *p = tkp_grow(items, cap, need, size);
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	return p;
}

int
agg_table_of(unsigned kind)
{
	switch (kind) {
	case TK_KERNEL: return AGG_KERNELS;
	case TK_MEMCPY: case TK_MEMSET: return AGG_MEMOPS;
	case TK_API: return AGG_API;
	case TK_RANGE: case TK_ASYNC_RANGE: return AGG_RANGES;
	}
	return -1;
}

/* Does --per NAME take steps: "ProfilerStep" (its series), "step",
 * "iteration#3", ...? */
static int
names_steps(const char *name)
{
	char numbered[256];
	snprintf(numbered, sizeof(numbered), "%s#1", name);
	return step_kind("", name) > 0 || step_kind("", numbered) > 0;
}

struct agg *
agg_new(const struct agg_options *o)
{
	struct agg *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->opt = *o;
	a->filter_tracks = o->npids || o->ndevices || o->nstreams;
	a->filter_time = o->from > 0 || o->to != INT64_MAX || o->run;
	a->run.t_min = INT64_MAX;
	a->run.t_max = INT64_MIN;
	a->run.exact = (struct dist_budget)DIST_BUDGET_INIT(
		o->exact_budget ? o->exact_budget : SIZE_MAX);
	if ((o->per || o->steps) &&
	    (!(a->per = perinst_new(o->approx, &a->run.exact)) ||
	     !(a->bd = breakdown_new()) ||
	     (o->per && (step_match_init(&a->per_match, o->per) < 0 ||
	                 !(a->per_label = strdup(o->per)))))) {
		agg_free(a);
		return NULL;
	}
	/* steps own the work of the threads that have none (PyTorch's
	 * autograd threads): --steps, or --per a step series' name */
	if (a->per)
		perinst_process_wide(a->per, o->steps || (o->per && names_steps(o->per)));
	if ((o->operators && !(a->ops = opview_new())) ||
	    (o->distributed && !(a->ranks = ranks_new())) ||
	    (!(o->skip & (AGG_SKIP_MEMORY | AGG_SKIP_ALLOC_OPS)) &&
	     !(a->alloc = allocpeak_new(a->per != NULL)))) {
		agg_free(a);
		return NULL;
	}
	return a;
}

static void
free_scope_maps(struct scope *sc)
{
	for (unsigned k = 0; k <= TK_KIND_MAX; k++)
		free(sc->names[k]);
	free(sc->trk);
	free(sc->devmap);
	memset(sc, 0, sizeof(*sc));
}

static void
free_runs(struct agg *a)
{
	for (size_t i = 0; i < a->nruns; i++)
		free(a->runs[i].v);
	free(a->runs);
	a->runs = NULL;
	a->nruns = 0;
}

void
agg_free(struct agg *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->ngroups; i++) {
		free(a->groups[i].name);
		free(a->groups[i].domain);
		free(a->groups[i].run_total);
		free(a->groups[i].run_count);
		dist_free(&a->groups[i].dur);
	}
	free(a->groups);
	strmap_free(&a->group_map);
	for (size_t i = 0; i < a->ndevs; i++) {
		free(a->devs[i].pub.host);
		free(a->devs[i].pub.name);
		busy_free(&a->devs[i].cur.busy);
		pairbuf_free(&a->devs[i].cur.mem);
		free(a->devs[i].segs);
		free(a->devs[i].pub.busy_tl);
		free(a->devs[i].pub.mem_tl);
	}
	free(a->devs);
	strmap_free(&a->dev_map);
	for (size_t i = 0; i < a->nprocs; i++) {
		free(a->procs[i].host);
		free(a->procs[i].name);
		free(a->procs[i].command);
		free(a->procs[i].label);
	}
	free(a->procs);
	strmap_free(&a->proc_map);
	for (size_t i = 0; i < a->run.nmeta; i++) {
		free(a->run.meta[i].key);
		free(a->run.meta[i].value);
	}
	free(a->run.meta);
	strmap_free(&a->meta_map);
	for (size_t i = 0; i < a->run.ndrops; i++)
		free(a->run.drops[i].reason);
	free(a->run.drops);
	strmap_free(&a->drop_map);
	free_scope_maps(&a->sc);
	free_runs(a);
	free(a->run.run_wall);
	perinst_free(a->per);
	breakdown_free(a->bd);
	opview_free(a->ops);
	ranks_free(a->ranks);
	allocpeak_free(a->alloc);
	strmap_free(&a->label_map);
	step_match_free(&a->per_match);
	free(a->per_label);
	free(a);
}

/* ---- groups ------------------------------------------------------------------ */

/* Does the name pass --name and --exclude? */
static int
name_kept(const struct agg *a, const char *name)
{
	if (a->opt.name && regexec(a->opt.name, name, 0, NULL, 0) != 0)
		return 0;
	if (a->opt.exclude && regexec(a->opt.exclude, name, 0, NULL, 0) == 0)
		return 0;
	return 1;
}

/* Group index + 1 for this identity, created on first use; -1 when the
 * name filters drop it. */
static int32_t
group_for(struct agg *a, unsigned kind, const char *domain, const char *name,
          unsigned copy_kind, unsigned src, unsigned dst)
{
	if (!name_kept(a, name))
		return -1;
	/* identity: kind, domain, name (a copy's name spells its kinds) */
	size_t ld = strlen(domain), ln = strlen(name);
	char stackbuf[512];
	char *key = ld + ln + 8 <= sizeof(stackbuf) ? stackbuf
	                                            : cmd_xrealloc(NULL, ld + ln + 8);
	key[0] = (char)kind;
	memcpy(key + 1, domain, ld);
	key[1 + ld] = '\x1f';
	memcpy(key + 2 + ld, name, ln);
	size_t klen = 2 + ld + ln;
	long g = strmap_get(&a->group_map, key, klen);
	if (g < 0) {
		a->groups = xgrow(a->groups, &a->capgroups, a->ngroups + 1,
		                  sizeof(*a->groups));
		g = (long)a->ngroups++;
		struct agg_group *gr = &a->groups[g];
		memset(gr, 0, sizeof(*gr));
		gr->table = (enum agg_table)agg_table_of(kind);
		gr->kind = kind;
		gr->name = cmd_xstrdup(name);
		gr->domain = cmd_xstrdup(domain);
		gr->copy_kind = copy_kind;
		gr->src_kind = src;
		gr->dst_kind = dst;
		gr->first_ts = INT64_MAX;
		dist_init_budget(&gr->dur, a->opt.approx, &a->run.exact);
		oom_if(strmap_put(&a->group_map, key, klen, g));
	}
	if (key != stackbuf)
		free(key);
	return (int32_t)g + 1;
}

static struct nslot *
name_slot(struct scope *sc, unsigned kind, uint32_t id)
{
	if (id >= sc->nnames[kind]) {
		size_t n = sc->nnames[kind];
		sc->names[kind] = xgrow(sc->names[kind], &n, (size_t)id + 1,
		                        sizeof(struct nslot));
		memset(sc->names[kind] + sc->nnames[kind], 0,
		       (n - sc->nnames[kind]) * sizeof(struct nslot));
		sc->nnames[kind] = n;
	}
	return &sc->names[kind][id];
}

static unsigned
clamp_kind(unsigned k, unsigned n)
{
	return k < n ? k : 0;
}

/* Group + 1 of an event of a table, -1 when filtered out. */
static int32_t
event_group(struct agg *a, const struct tk_event *e, int *is_per)
{
	struct scope *sc = &a->sc;
	*is_per = 0;
	if (e->kind == TK_MEMCPY && e->u.memcpy.copy_kind) {
		unsigned c = clamp_kind(e->u.memcpy.copy_kind, 11);
		unsigned s = clamp_kind(e->u.memcpy.src_kind, 8);
		unsigned d = clamp_kind(e->u.memcpy.dst_kind, 8);
		int32_t *g = &a->memcpy_map[c][s][d];
		if (!*g) {
			char label[96];
			snprintf(label, sizeof(label), "Memcpy %s (%s -> %s)",
			         tk_copy_kind_name(c), tk_mem_kind_name(s),
			         tk_mem_kind_name(d));
			*g = group_for(a, TK_MEMCPY, "", label, c, s, d);
		}
		return *g;
	}
	if (e->kind == TK_MEMSET) {
		unsigned m = clamp_kind(e->u.memset.mem_kind, 8);
		int32_t *g = &a->memset_map[m];
		if (!*g) {
			char label[64];
			snprintf(label, sizeof(label), "Memset (%s)", tk_mem_kind_name(m));
			*g = group_for(a, TK_MEMSET, "", label, 0, 0, m);
		}
		return *g;
	}
	int range = e->kind == TK_RANGE || e->kind == TK_ASYNC_RANGE;
	uint32_t dom = range ? e->u.range.domain_id : 0;
	struct nslot *s = name_slot(sc, e->kind, e->name_id);
	if (!s->g || s->dom != dom) {
		/* a name seen with another domain than the cached one: look
		 * up without caching over it (rare: the same range name in
		 * several domains) */
		const char *domain = range ? e->u.range.domain : "";
		const char *name = e->name;
		if (e->kind == TK_MEMCPY && !*name)
			name = "Memcpy Unknown";
		int32_t g = group_for(a, e->kind, domain, name, 0, 0, 0);
		int per = range && a->per_match.name ? step_match(&a->per_match, e->name) : 0;
		oom_if(per);
		if (s->g && s->dom != dom) {
			*is_per = per;
			return g;
		}
		s->g = g;
		s->dom = dom;
		s->per = (uint8_t)per;
	}
	*is_per = s->per;
	return s->g;
}

/* ---- devices and processes ------------------------------------------------------- */

static int32_t
device_for(struct agg *a, const struct tk_device *d)
{
	char key[512];
	int n;
	static const uint8_t zero[16];
	if (!d) {
		n = snprintf(key, sizeof(key), "?");
	} else if (memcmp(d->uuid, zero, 16) != 0) {
		/* the same GPU in several traces is one device */
		n = snprintf(key, sizeof(key), "%s\x1fuuid", d->host);
		if (n > 0 && (size_t)n + 16 < sizeof(key)) {
			memcpy(key + n, d->uuid, 16);
			n += 16;
		}
	} else if (*d->host) {
		n = snprintf(key, sizeof(key), "%s\x1f%u", d->host, d->index);
	} else {
		/* no UUID and no host: nothing proves it is a GPU of another
		 * input (GPU 0 of two imported ranks, of an A100 and a V100
		 * run): one device per definition, in each scope */
		n = snprintf(key, sizeof(key), "\x1e%u\x1f%u", a->run.scopes, d->id);
	}
	if (n < 0 || (size_t)n >= sizeof(key))
		n = (int)sizeof(key) - 1;
	long i = strmap_get(&a->dev_map, key, (size_t)n);
	if (i >= 0)
		return (int32_t)i;
	a->devs = xgrow(a->devs, &a->capdevs, a->ndevs + 1, sizeof(*a->devs));
	struct device *dv = &a->devs[a->ndevs];
	memset(dv, 0, sizeof(*dv));
	dv->pub.host = cmd_xstrdup(d ? d->host : "");
	dv->pub.name = cmd_xstrdup(d ? d->name : "unknown device");
	dv->pub.index = d ? (int64_t)d->index : -1;
	dv->pub.sm_count = d ? d->sm_count : 0;
	dv->pub.memory = d ? d->memory : 0;
	dv->pub.first = INT64_MAX;
	dv->pub.last = INT64_MIN;
	busy_init(&dv->cur.busy);
	if (a->opt.timeline) {
		dv->pub.busy_tl = cmd_xrealloc(NULL, sizeof(*dv->pub.busy_tl));
		dv->pub.mem_tl = cmd_xrealloc(NULL, sizeof(*dv->pub.mem_tl));
		timeline_init(dv->pub.busy_tl, TL_SUM);
		timeline_init(dv->pub.mem_tl, TL_MAX);
		dv->cur.busy.all.tl = dv->pub.busy_tl;
	}
	oom_if(strmap_put(&a->dev_map, key, (size_t)n, (long)a->ndevs));
	return (int32_t)a->ndevs++;
}

/* Index in a->devs of scope device id `id` (0 = unknown). */
static int32_t
scope_device(struct agg *a, const struct tk_reader *r, uint32_t id)
{
	struct scope *sc = &a->sc;
	if (id < sc->ndevmap && sc->devmap[id] >= 0)
		return sc->devmap[id];
	if (id >= sc->ndevmap) {
		size_t n = sc->ndevmap;
		sc->devmap = xgrow(sc->devmap, &n, (size_t)id + 1, sizeof(*sc->devmap));
		for (size_t i = sc->ndevmap; i < n; i++)
			sc->devmap[i] = -1;
		sc->ndevmap = n;
	}
	sc->devmap[id] = device_for(a, id ? tk_reader_device(r, id) : NULL);
	return sc->devmap[id];
}

static int
in_list(const int64_t *v, size_t n, int64_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static char *
join_argv(const struct tk_process *p)
{
	size_t len = 1;
	for (uint32_t i = 0; i < p->argc; i++)
		len += strlen(p->argv[i]) + 1;
	char *s = cmd_xrealloc(NULL, len);
	s[0] = 0;
	char *o = s;
	for (uint32_t i = 0; i < p->argc; i++) {
		size_t l = strlen(p->argv[i]);
		if (i)
			*o++ = ' ';
		memcpy(o, p->argv[i], l);
		o += l;
		*o = 0;
	}
	return s;
}

int
agg_placeholder_process(const struct tk_process *p)
{
	/* the PyTorch profiler's: its string pids "Spans", "Traces" and ""
	 * (made-up ids above any OS pid once imported) hold the profiler's
	 * own marks, not a program */
	return p->pid >= (INT64_C(1) << 32) &&
	       (p->argc == 0 || (p->argc == 1 && (!*p->argv[0] ||
	        strcmp(p->argv[0], "Spans") == 0 || strcmp(p->argv[0], "Traces") == 0)));
}

/* Index in a->procs of a process track, registered on first sight (-1:
 * a placeholder, not a process). */
static int32_t
process_for(struct agg *a, const struct tk_track *t)
{
	const struct tk_process *p = &t->u.process;
	if (agg_placeholder_process(p))
		return -1;
	char key[320];
	/* the same process in several inputs only when that is sure: same
	 * host, pid and start time (and label: trace-merge -l tells inputs
	 * apart by it); else one process per definition, in each scope */
	int n = *p->host && p->start
	      ? snprintf(key, sizeof(key), "%s\x1f%" PRId64 "\x1f%" PRId64 "\x1f%s",
	                 p->host, p->pid, p->start, p->label)
	      : snprintf(key, sizeof(key), "\x1e%u\x1f%u\x1f%s", a->run.scopes, t->id,
	                 p->label);
	if (n < 0 || (size_t)n >= sizeof(key))
		n = (int)sizeof(key) - 1;
	long i = strmap_get(&a->proc_map, key, (size_t)n);
	if (i >= 0)
		return (int32_t)i;
	a->procs = xgrow(a->procs, &a->capprocs, a->nprocs + 1, sizeof(*a->procs));
	struct agg_process *pr = &a->procs[a->nprocs];
	memset(pr, 0, sizeof(*pr));
	pr->host = cmd_xstrdup(p->host);
	pr->pid = p->pid;
	pr->ppid = p->ppid;
	pr->start = p->start;
	pr->label = cmd_xstrdup(p->label);
	pr->command = join_argv(p);
	const char *base = p->argc ? strrchr(p->argv[0], '/') : NULL;
	pr->name = cmd_xstrdup(p->argc ? (base ? base + 1 : p->argv[0]) : "");
	oom_if(strmap_put(&a->proc_map, key, (size_t)n, (long)a->nprocs));
	return (int32_t)a->nprocs++;
}

/* A process label as a small number: the ranks merged into one trace
 * (trace-merge -l) are told apart by it, in the step breakdown. */
static uint32_t
label_key(struct agg *a, const char *label)
{
	size_t n = strlen(label);
	if (!n)
		return 0;
	long i = strmap_get(&a->label_map, label, n);
	if (i < 0) {
		i = a->nlabels++;
		oom_if(strmap_put(&a->label_map, label, n, i));
	}
	return (uint32_t)i + 1;
}

/* --distributed: the rank of a process's events.  What says it, first
 * found: the process's label (trace-merge -l, trace-record -l), the
 * trace's distributedInfo.rank (trace-import), the input. */
static int32_t
rank_of(struct agg *a, const struct tk_reader *r, const struct tk_track *pt)
{
	char name[64];
	const char *key = a->cur_path ? cmd_display_path(a->cur_path) : "-";
	const char *rank = tk_reader_meta_get(r, "distributedInfo.rank");
	if (pt && *pt->u.process.label)
		key = pt->u.process.label;
	else if (rank && *rank) {
		snprintf(name, sizeof(name), "rank %s", rank);
		key = name;
	}
	int32_t i = ranks_key(a->ranks, key);
	oom_if(i);
	return i;
}

/* Fill the cache entry of a track. */
static struct trk *
track_info(struct agg *a, const struct tk_reader *r, uint32_t id,
           const struct tk_track *t)
{
	struct scope *sc = &a->sc;
	if (id >= sc->ntrk) {
		size_t n = sc->ntrk;
		sc->trk = xgrow(sc->trk, &n, (size_t)id + 1, sizeof(*sc->trk));
		memset(sc->trk + sc->ntrk, 0, (n - sc->ntrk) * sizeof(*sc->trk));
		sc->ntrk = n;
	}
	struct trk *k = &sc->trk[id];
	memset(k, 0, sizeof(*k));
	k->valid = 1;
	k->dev = -1;
	k->proc = -1;
	uint32_t proc_id = 0, dev_id = 0;
	int has_dev = 0;
	int64_t stream = -1;
	switch (t->type) {
	case TK_TRACK_PROCESS: proc_id = t->id; break;
	case TK_TRACK_THREAD:
		proc_id = t->u.thread.process;
		k->thread = 1;
		break;
	case TK_TRACK_STREAM:
		proc_id = t->u.stream.process;
		dev_id = t->u.stream.device;
		has_dev = 1;
		stream = (int64_t)t->u.stream.stream;
		break;
	case TK_TRACK_COUNTER:
		proc_id = t->u.counter.process;
		dev_id = t->u.counter.device;
		has_dev = dev_id != 0;
		if (strcmp(t->u.counter.name, "rss") == 0)
			k->counter = CTR_RSS;
		else if (strcmp(t->u.counter.name, "device memory") == 0)
			k->counter = CTR_DEVMEM;
		else if (strcmp(t->u.counter.name, "Total Allocated") == 0)
			k->counter = CTR_ALLOCATED;
		else if (strcmp(t->u.counter.name, "Total Reserved") == 0)
			k->counter = CTR_RESERVED;
		break;
	default:
		break;
	}
	const struct tk_track *pt = proc_id ? tk_reader_track(r, proc_id) : NULL;
	if (pt && pt->type != TK_TRACK_PROCESS)
		pt = NULL;
	k->proc_track = pt ? pt->id : 0;
	k->pass = 1;
	if (a->opt.npids && !(pt && in_list(a->opt.pids, a->opt.npids, pt->u.process.pid)))
		k->pass = 0;
	if (has_dev) {
		k->dev = scope_device(a, r, dev_id);
		int64_t idx = a->devs[k->dev].pub.index;
		if (a->opt.ndevices && !in_list(a->opt.devices, a->opt.ndevices, idx))
			k->pass = 0;
	}
	if (a->opt.nstreams && t->type == TK_TRACK_STREAM &&
	    !in_list(a->opt.streams, a->opt.nstreams, stream))
		k->pass = 0;
	if (pt && k->pass)
		k->proc = process_for(a, pt);
	k->rank = a->ranks ? rank_of(a, r, pt) : -1;
	k->label = pt ? label_key(a, pt->u.process.label) : 0;
	/* a capture range's step owns the threads of its label's processes */
	if (a->per && k->thread)
		oom_if(perinst_thread_key(a->per, id, k->label));
	return k;
}

/* ---- metadata and drops ------------------------------------------------------------- */

static void
add_meta(struct agg *a, const char *key, const char *value)
{
	size_t lk = strlen(key), lv = strlen(value);
	char *k = cmd_xrealloc(NULL, lk + lv + 2);
	memcpy(k, key, lk);
	k[lk] = '\x1f';
	memcpy(k + lk + 1, value, lv + 1);
	if (strmap_get(&a->meta_map, k, lk + lv + 1) < 0) {
		oom_if(strmap_put(&a->meta_map, k, lk + lv + 1, 0));
		a->run.meta = xgrow(a->run.meta, &a->capmeta, a->run.nmeta + 1,
		                    sizeof(*a->run.meta));
		a->run.meta[a->run.nmeta].key = cmd_xstrdup(key);
		a->run.meta[a->run.nmeta].value = cmd_xstrdup(value);
		a->run.nmeta++;
	}
	free(k);
}

static void
add_drop(struct agg *a, const char *reason, uint64_t count)
{
	long i = strmap_get(&a->drop_map, reason, strlen(reason));
	if (i < 0) {
		i = (long)a->run.ndrops;
		a->run.drops = xgrow(a->run.drops, &a->capdrops, a->run.ndrops + 1,
		                     sizeof(*a->run.drops));
		a->run.drops[i].reason = cmd_xstrdup(reason);
		a->run.drops[i].count = 0;
		a->run.ndrops++;
		oom_if(strmap_put(&a->drop_map, reason, strlen(reason), i));
	}
	a->run.drops[i].count += count;
	a->run.dropped += count;
}

/* ---- scopes, chunks and watermarks ---------------------------------------------------- */

static void
device_memory_release(struct device *d, int64_t w)
{
	size_t n = pairbuf_ready(&d->cur.mem, w);
	for (size_t i = 0; i < n; i++) {
		d->cur.in_use += d->cur.mem.v[i].b;
		if (d->cur.in_use > d->pub.peak)
			d->pub.peak = d->cur.in_use;
		if (d->pub.mem_tl)
			timeline_max(d->pub.mem_tl, d->cur.mem.v[i].a, d->cur.in_use);
	}
	pairbuf_drop(&d->cur.mem, n);
}

/* Everything that begins before w has been read: sweep it. */
static void
release(struct agg *a, int64_t w)
{
	for (size_t i = 0; i < a->ndevs; i++) {
		struct device *d = &a->devs[i];
		if (!d->cur.active)
			continue;
		busy_release(&d->cur.busy, w);
		device_memory_release(d, w);
	}
	if (a->per)
		oom_if(perinst_release(a->per, w));
}

static void
begin_scope(struct agg *a, const struct tk_reader *r)
{
	free_scope_maps(&a->sc);
	a->sc.chunk = UINT64_MAX;
	a->sc.watermark = INT64_MIN;
	a->sc.settled_before = INT64_MIN;
	a->sc.lo = INT64_MIN;
	a->sc.hi = INT64_MAX;
	a->sc.number = tk_reader_scope(r);
	a->run.scopes++;
}

/* The operation at each allocator peak reached in this scope. */
static void
allocator_scope_end(struct agg *a)
{
	for (size_t i = 0; i < a->ndevs + a->nprocs; i++) {
		int is_host = i >= a->ndevs;
		struct agg_allocator *m = is_host ? &a->procs[i - a->ndevs].allocator
		                                  : &a->devs[i].pub.allocator;
		for (int w = 0; w < 2; w++) {
			if (!m->op_pending[w])
				continue;
			m->op[w] = allocpeak_op_at(a->alloc, is_host,
			                           is_host ? (int32_t)(i - a->ndevs) : -1,
			                           m->peak_ts[w]);
			m->op_pending[w] = 0;
		}
	}
}

static void
end_scope(struct agg *a)
{
	release(a, INT64_MAX);
	for (size_t i = 0; i < a->ndevs; i++) {
		struct device *d = &a->devs[i];
		if (!d->cur.active)
			continue;
		struct busy *b = &d->cur.busy;
		sweep_flush(&b->all);
		d->pub.busy += busy_total(b);
		d->pub.kernel += busy_class_total(b, BUSY_KERNEL);
		d->pub.copy += busy_class_total(b, BUSY_COPY);
		if (b->n) {
			d->segs = xgrow(d->segs, &d->capsegs, d->nsegs + 1, sizeof(*d->segs));
			d->segs[d->nsegs++] = (struct segment){ b->first, b->last };
			if (b->first < d->pub.first)
				d->pub.first = b->first;
			if (b->last > d->pub.last)
				d->pub.last = b->last;
		}
		busy_free(b);
		b->all.tl = d->pub.busy_tl;
		pairbuf_free(&d->cur.mem);
		/* allocations are counted within each trace: the peak is the
		 * highest of any, what was not freed adds up */
		d->pub.in_use += d->cur.in_use;
		d->cur.in_use = 0;
		d->cur.active = 0;
	}
	if (a->alloc)
		allocator_scope_end(a);
	if (a->per) {
		size_t n;
		struct perinst_instance *v = perinst_scope_instances(a->per, &n);
		oom_if(breakdown_scope_end(a->bd, v, n));
		if (a->alloc)
			oom_if(allocpeak_scope_end(a->alloc, v, n));
		oom_if(perinst_scope_end(a->per));
	} else if (a->alloc) {
		oom_if(allocpeak_scope_end(a->alloc, NULL, 0));
	}
	if (a->ops)
		oom_if(opview_scope_end(a->ops));
}

/* The first event of a scope fixes its time window. */
static void
start_window(struct agg *a, const struct tk_reader *r)
{
	struct scope *sc = &a->sc;
	sc->started = 1;
	if (!a->filter_time)
		return;
	int64_t origin = tk_reader_chunk(r)->t_min;
	int64_t end = INT64_MAX;
	if (a->opt.run) {
		const struct run_window *w = NULL;
		const struct scope_runs *sr = sc->number < a->nruns ? &a->runs[sc->number] : NULL;
		for (size_t i = 0; sr && i < sr->n; i++)
			if (sr->v[i].index == a->opt.run)
				w = &sr->v[i];
		if (!w) {
			a->run.run_missing = 1;
			sc->lo = INT64_MAX;
			sc->hi = INT64_MIN;
			return;
		}
		origin = w->b;
		end = w->e < INT64_MAX ? w->e + 1 : INT64_MAX;
	}
	sc->lo = a->opt.from > INT64_MAX - origin ? INT64_MAX : origin + a->opt.from;
	sc->hi = a->opt.to == INT64_MAX || a->opt.to > INT64_MAX - origin
	                 ? INT64_MAX : origin + a->opt.to;
	if (end < sc->hi)
		sc->hi = end;
}

static void
chunk_changed(struct agg *a, const struct tk_reader *r)
{
	const struct tk_chunk_info *ci = tk_reader_chunk(r);
	struct scope *sc = &a->sc;
	if (sc->chunk != UINT64_MAX && sc->watermark != INT64_MIN)
		release(a, sc->watermark);
	sc->chunk = ci->offset;
	if (ci->watermark > sc->watermark)
		sc->watermark = ci->watermark;
	sc->settled_before = ci->flags & TK_CHUNK_SORTED ? ci->watermark : INT64_MIN;
}

/* by_run: the index of the run of the current scope in which ts falls,
 * 0 for none. */
static uint32_t
run_at(const struct agg *a, int64_t ts)
{
	if (a->sc.number >= a->nruns)
		return 0;
	const struct scope_runs *sr = &a->runs[a->sc.number];
	size_t lo = 0, hi = sr->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sr->v[mid].b <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && ts <= sr->v[lo - 1].e ? sr->v[lo - 1].index : 0;
}

/* ---- events ---------------------------------------------------------------------------- */

static struct device *
active_device(struct agg *a, const struct tk_reader *r, struct trk *t)
{
	int32_t i = t->dev >= 0 ? t->dev : scope_device(a, r, 0);
	struct device *d = &a->devs[i];
	d->cur.active = 1;
	return d;
}

static void
gpu_work(struct agg *a, const struct tk_reader *r, struct trk *t,
         const struct tk_event *e, int32_t g, uint64_t corr)
{
	struct device *d = active_device(a, r, t);
	d->pub.ops++;
	if (!(a->opt.skip & AGG_SKIP_GPU)) {
		int64_t end = e->ts + e->dur < e->ts ? INT64_MAX : e->ts + e->dur;
		oom_if(busy_add(&d->cur.busy, e->kind == TK_KERNEL ? BUSY_KERNEL
		                                                   : BUSY_COPY,
		                e->ts, end, e->ts <= a->sc.settled_before));
	}
	if (a->per && g > 0)
		oom_if(perinst_gpu(a->per, (uint32_t)g - 1, e->kind != TK_KERNEL,
		                   t->proc_track, corr, e->ts, e->dur));
}

/* A kept event of a table: its group's figures. */
static void
add_to_group(struct agg *a, struct agg_group *gr, const struct tk_event *e)
{
	oom_if(dist_add(&gr->dur, e->dur));
	if (e->ts < gr->first_ts) {
		gr->first_ts = e->ts;
		gr->first_dur = e->dur;
	}
	uint32_t run = a->opt.by_input ? a->run.inputs
	             : a->opt.by_run ? run_at(a, e->ts) : 0;
	if (run) {
		if (run > gr->nrun_total) {
			gr->run_total = cmd_xrealloc(gr->run_total, run * sizeof(*gr->run_total));
			gr->run_count = cmd_xrealloc(gr->run_count, run * sizeof(*gr->run_count));
			memset(gr->run_total + gr->nrun_total, 0,
			       (run - gr->nrun_total) * sizeof(*gr->run_total));
			memset(gr->run_count + gr->nrun_total, 0,
			       (run - gr->nrun_total) * sizeof(*gr->run_count));
			gr->nrun_total = run;
		}
		gr->run_total[run - 1] += e->dur;
		gr->run_count[run - 1]++;
	}
	if (gr->table == AGG_MEMOPS) {
		uint64_t bytes = e->kind == TK_MEMCPY ? e->u.memcpy.bytes
		                                      : e->u.memset.bytes;
		gr->bytes += bytes;
		if (e->dur > 0) {
			gr->rate_sum += (double)bytes / (double)e->dur;
			gr->rate_n++;
		}
	}
}

/* The per-instance view: an API call launches GPU work and may be a
 * child of an instance; a range is an instance or a child. */
static void
per_host_event(struct agg *a, const struct trk *t, const struct tk_event *e,
               int32_t g, int is_per)
{
	if (e->kind == TK_API) {
		oom_if(perinst_launch(a->per, t->proc_track, e->u.api.correlation,
		                      e->track, e->ts));
		if (g > 0)
			oom_if(perinst_cpu(a->per, (uint32_t)g - 1, 1, t->proc_track,
			                   e->track, e->ts, e->dur));
	} else if (is_per) {
		/* a step is the CPU's: Kineto mirrors ProfilerStep#N on the
		 * GPU's streams (gpu_user_annotation), which is no step */
		if (!t->thread)
			return;
		int64_t end = e->ts + e->dur < e->ts ? INT64_MAX : e->ts + e->dur;
		/* Kineto's capture range sits alone on a placeholder process:
		 * as a step (a trace with no ProfilerStep#N) it is one over
		 * every process of its input, as TensorBoard's overview takes
		 * such a trace whole */
		if (step_is_capture(e->u.range.domain)) {
			oom_if(perinst_input_instance(a->per, t->label, e->ts, end));
			a->per_whole_input = 1;
		} else {
			oom_if(perinst_instance_keyed(a->per, t->proc_track, e->track,
			                              t->label, e->ts, end));
		}
	} else if (g > 0) {
		oom_if(perinst_cpu(a->per, (uint32_t)g - 1, 0, t->proc_track, e->track,
		                   e->ts, e->dur));
	}
}

/* --steps with --pid: Kineto's capture range sits on a placeholder
 * process that the filter leaves out, yet as a step it spans every
 * process of its input, the chosen ones too; so it still makes its
 * instance (nothing else of it is counted), as it does without --pid. */
static void
capture_step_filtered(struct agg *a, const struct trk *t, const struct tk_event *e)
{
	if (!a->per || !a->per_match.name || !t->thread || e->kind != TK_RANGE ||
	    !step_is_capture(e->u.range.domain))
		return;
	int per = step_match(&a->per_match, e->name);
	oom_if(per);
	if (!per)
		return;
	int64_t end = e->ts + e->dur < e->ts ? INT64_MAX : e->ts + e->dur;
	oom_if(perinst_input_instance(a->per, t->label, e->ts, end));
	a->per_whole_input = 1;
}

/* Data loading, as TensorBoard tells it: PyTorch's DataLoader and
 * DataPipe iterators. */
static int
is_data_loading(const char *name)
{
	size_t n = strlen(name);
	return (strncmp(name, "enumerate(DataLoader)#", 22) == 0 &&
	        n >= 9 && strcmp(name + n - 9, ".__next__") == 0) ||
	       strncmp(name, "enumerate(DataPipe)#", 20) == 0;
}

/* The category of an event's time in a step's breakdown (BD_OTHER:
 * none): GPU work by kind, API calls, and the ranges on CPU threads but
 * the steps themselves and Kineto's capture range. */
static enum bd_cat
breakdown_category(const struct trk *t, const struct tk_event *e, int is_per)
{
	switch (e->kind) {
	case TK_KERNEL: return BD_KERNEL;
	case TK_MEMCPY: return BD_MEMCPY;
	case TK_MEMSET: return BD_MEMSET;
	case TK_API: return BD_RUNTIME;
	case TK_RANGE:
		if (!t->thread || is_per || step_is_capture(e->u.range.domain))
			return BD_OTHER;
		return is_data_loading(e->name) ? BD_DATALOADER : BD_CPU;
	}
	return BD_OTHER;
}

/* The operator view: ranges on CPU threads, launch calls, GPU work. */
static void
operator_event(struct agg *a, const struct trk *t, const struct tk_event *e,
               int32_t g)
{
	switch (e->kind) {
	case TK_RANGE:
		/* Kineto's capture range sits alone on a placeholder thread:
		 * all self time, no operator */
		if (t->thread && g > 0 && !step_is_capture(e->u.range.domain))
			oom_if(opview_range(a->ops, (uint32_t)g - 1, a->groups[g - 1].name,
			                    e->track, e->ts, e->dur));
		break;
	case TK_API:
		oom_if(opview_launch(a->ops, t->proc_track, e->u.api.correlation,
		                     e->track, e->ts));
		break;
	case TK_KERNEL:
		oom_if(opview_gpu(a->ops, t->proc_track, e->u.kernel.correlation, e->dur));
		break;
	case TK_MEMCPY:
		oom_if(opview_gpu(a->ops, t->proc_track, e->u.memcpy.correlation, e->dur));
		break;
	case TK_MEMSET:
		oom_if(opview_gpu(a->ops, t->proc_track, e->u.memset.correlation, e->dur));
		break;
	}
}

/* The distributed view: GPU work by class, and the steps (ranges of the
 * --per/--steps series on CPU threads). */
static void
rank_event(struct agg *a, const struct trk *t, const struct tk_event *e,
           int is_per)
{
	int64_t end = e->ts + e->dur < e->ts ? INT64_MAX : e->ts + e->dur;
	if ((e->kind == TK_KERNEL || e->kind == TK_MEMCPY || e->kind == TK_MEMSET) &&
	    t->dev >= 0 && !a->devs[t->dev].pub.rank)
		a->devs[t->dev].pub.rank = ranks_name(a->ranks, t->rank);
	switch (e->kind) {
	case TK_KERNEL:
		oom_if(ranks_gpu(a->ranks, t->rank, ranks_is_comm(e->name) ? RANK_COMM
		                                                          : RANK_COMPUTE,
		                 e->ts, end));
		break;
	case TK_MEMCPY:
	case TK_MEMSET:
		oom_if(ranks_gpu(a->ranks, t->rank, RANK_MEMOPS, e->ts, end));
		break;
	case TK_RANGE:
		if (is_per && t->thread)
			oom_if(ranks_step(a->ranks, t->rank, e->name, e->ts, end));
		break;
	}
}

/* The "rss" and "device memory" counters: their highest sample. */
static void
counter_sample(struct agg *a, const struct trk *t, const struct tk_event *e)
{
	if (t->counter == CTR_RSS && t->proc >= 0) {
		struct agg_process *p = &a->procs[t->proc];
		if (!p->has_rss || e->u.counter.value > p->rss_max)
			p->rss_max = e->u.counter.value;
		p->has_rss = 1;
	} else if (t->counter == CTR_DEVMEM && t->dev >= 0) {
		struct agg_device *d = &a->devs[t->dev].pub;
		if (!d->has_counter || e->u.counter.value > d->counter_max)
			d->counter_max = e->u.counter.value;
		d->has_counter = 1;
		/* allocations, when there are any, draw the picture */
		if (d->mem_tl && !d->allocs && e->u.counter.value >= 0 &&
		    e->u.counter.value < 9e18)
			timeline_max(d->mem_tl, e->ts, (int64_t)e->u.counter.value);
	} else if (t->counter == CTR_ALLOCATED || t->counter == CTR_RESERVED) {
		/* a GPU's totals, or the host's (a process counter) */
		struct agg_allocator *m = t->dev >= 0 ? &a->devs[t->dev].pub.allocator
		                        : t->proc >= 0 ? &a->procs[t->proc].allocator : NULL;
		int w = t->counter == CTR_ALLOCATED ? AGG_ALLOCATED : AGG_RESERVED;
		double v = e->u.counter.value;
		if (m && (!m->has[w] || v > m->peak[w] ||
		          (v == m->peak[w] && e->ts < m->peak_ts[w]))) {
			m->peak[w] = v;
			m->peak_ts[w] = e->ts;
			m->has[w] = 1;
			m->op[w] = NULL;
			m->op_pending[w] = 1;
		}
		if (m && a->alloc)
			oom_if(allocpeak_sample(a->alloc, t->dev < 0,
			                        t->dev >= 0 ? t->dev : t->proc,
			                        w == AGG_ALLOCATED ? ALLOC_ALLOCATED
			                                           : ALLOC_RESERVED,
			                        e->ts, v));
	}
}

/* An allocation or a free on a device: counted now, the peak once the
 * watermark passes it (device_memory_release()). */
static void
memory_event(struct agg *a, const struct tk_reader *r, struct trk *t,
             const struct tk_event *e)
{
	if (a->alloc && t->thread) {
		/* the PyTorch allocator's: on the thread that allocated, in
		 * the operation that did it */
		uint32_t op = allocpeak_innermost(a->alloc, e->track, e->ts);
		oom_if(allocpeak_event(a->alloc, e->u.memory.mem_kind != TK_MEM_DEVICE,
		                       t->proc, t->label, e->ts, op,
		                       op ? tk_reader_string(r, op) : NULL));
	}
	if (t->dev < 0 || (a->opt.skip & AGG_SKIP_MEMORY))
		return;
	struct device *d = active_device(a, r, t);
	uint64_t n = e->u.memory.bytes > INT64_MAX ? INT64_MAX : e->u.memory.bytes;
	if (e->u.memory.op == TK_MEM_FREE) {
		d->pub.frees++;
		oom_if(pairbuf_push(&d->cur.mem, e->ts, -(int64_t)n));
	} else {
		d->pub.allocs++;
		d->pub.alloc_bytes += n;
		oom_if(pairbuf_push(&d->cur.mem, e->ts, (int64_t)n));
	}
}

/* The end of a process: its rusage and exit. */
static void
process_event(struct agg *a, const struct trk *t, const struct tk_event *e)
{
	if (t->proc < 0)
		return;
	struct agg_process *p = &a->procs[t->proc];
	const struct tk_process_attrs *pa = &e->u.process;
	if (a->opt.by_input && p->has_rusage && p->rusage_input != a->run.inputs) {
		/* the same host and pid in another recording (synthetic
		 * traces, a container's fixed pids): another run of the
		 * program, whose time adds to the earlier runs' rather than
		 * replacing it */
		p->wall += e->dur;
		p->utime += pa->utime;
		p->stime += pa->stime;
		p->max_rss = pa->max_rss > p->max_rss ? pa->max_rss : p->max_rss;
	} else {
		p->wall = e->dur;
		p->utime = pa->utime;
		p->stime = pa->stime;
		p->max_rss = pa->max_rss;
	}
	p->has_rusage = 1;
	p->rusage_input = a->run.inputs;
	p->exit = pa->exit;
	p->exit_code = pa->exit_code;
	p->signal = pa->signal;
	if (*e->name && !*p->name) {
		free(p->name);
		p->name = cmd_xstrdup(e->name);
	}
}

/* A run of a repeated recording: its wall time, added up over inputs. */
static void
run_event(struct agg *a, const struct tk_event *e)
{
	uint32_t n = e->u.run.index;
	if (n == 0)
		return;
	if (n > a->run.runs_seen) {
		a->run.run_wall = cmd_xrealloc(a->run.run_wall, n * sizeof(*a->run.run_wall));
		memset(a->run.run_wall + a->run.runs_seen, 0,
		       (n - a->run.runs_seen) * sizeof(*a->run.run_wall));
		a->run.runs_seen = n;
	}
	a->run.run_wall[n - 1] += e->dur;
}

/* One event: the filters (time window, track, name), the counts of
 * what was kept, its group, then what its kind adds. */
static void
ingest(struct agg *a, const struct tk_reader *r, const struct tk_event *e)
{
	struct scope *sc = &a->sc;
	a->run.events_read++;
	if (e->kind == TK_DROPPED) {
		/* never filtered: lost data is always reported */
		add_drop(a, e->u.dropped.reason, e->u.dropped.count);
		a->run.events++;
		a->run.kind[TK_DROPPED]++;
		return;
	}
	if (!sc->started)
		start_window(a, r);
	if (e->ts < sc->lo || e->ts >= sc->hi)
		return;
	struct trk *t = e->track < sc->ntrk && sc->trk[e->track].valid
		? &sc->trk[e->track] : track_info(a, r, e->track, e->trk);
	if (!t->pass) {
		capture_step_filtered(a, t, e);
		return;
	}
	int32_t g = 0;
	int is_per = 0;
	int table = agg_table_of(e->kind);
	if (table >= 0 && !(a->opt.skip & AGG_SKIP_TABLE(table))) {
		g = event_group(a, e, &is_per);
		if (g < 0 && !is_per)
			return;
	}
	a->run.events++;
	a->run.kind[e->kind]++;
	if (e->ts < a->run.t_min)
		a->run.t_min = e->ts;
	if (e->ts + e->dur > a->run.t_max)
		a->run.t_max = e->ts + e->dur;
	if (e->ts < a->in_min)
		a->in_min = e->ts;
	if (e->ts + e->dur > a->in_max)
		a->in_max = e->ts + e->dur;
	if (g > 0)
		add_to_group(a, &a->groups[g - 1], e);
	if (a->ops)
		operator_event(a, t, e, g);
	if (a->ranks)
		rank_event(a, t, e, is_per);
	if (a->bd) {
		enum bd_cat c = breakdown_category(t, e, is_per);
		int64_t end = e->ts + e->dur < e->ts ? INT64_MAX : e->ts + e->dur;
		if (c != BD_OTHER)
			oom_if(breakdown_add_keyed(a->bd, c, t->label, e->ts, end));
	}
	switch (e->kind) {
	case TK_KERNEL:
		gpu_work(a, r, t, e, g, e->u.kernel.correlation);
		break;
	case TK_MEMCPY:
		gpu_work(a, r, t, e, g, e->u.memcpy.correlation);
		break;
	case TK_MEMSET:
		gpu_work(a, r, t, e, g, e->u.memset.correlation);
		break;
	case TK_RANGE:
		if (a->alloc && t->thread)
			oom_if(allocpeak_range(a->alloc, e->track, e->ts,
			                       e->ts + e->dur < e->ts ? INT64_MAX
			                                              : e->ts + e->dur,
			                       e->name_id));
		/* fall through */
	case TK_API:
	case TK_ASYNC_RANGE:
		if (a->per)
			per_host_event(a, t, e, g, is_per);
		break;
	case TK_COUNTER:
		counter_sample(a, t, e);
		break;
	case TK_MEMORY:
		memory_event(a, r, t, e);
		break;
	case TK_PROCESS:
		process_event(a, t, e);
		break;
	case TK_RUN:
		if (!a->opt.by_input)
			run_event(a, e);
		break;
	default:
		break;
	}
}

/* ---- inputs ------------------------------------------------------------------------------ */

static int
cmp_run_window(const void *x, const void *y)
{
	const struct run_window *p = x, *q = y;
	return (p->b > q->b) - (p->b < q->b);
}

/* --run and by_run: the time window of every run in each scope (a
 * first pass over the input). */
static int
find_runs(struct agg *a, int fd, const char *path)
{
	struct tk_reader *r = cmd_new_reader(CMD_READ_NO_ARGS);
	free_runs(a);
	int rc = tk_reader_open_fd(r, fd, path);
	const struct tk_event *e;
	while (rc == TK_OK && (rc = tk_reader_next_event(r, &e)) == TK_OK) {
		if (e->kind != TK_RUN)
			continue;
		unsigned s = tk_reader_scope(r);
		if (s >= a->nruns) {
			size_t n = a->nruns;
			a->runs = xgrow(a->runs, &n, (size_t)s + 1, sizeof(*a->runs));
			memset(a->runs + a->nruns, 0, (n - a->nruns) * sizeof(*a->runs));
			a->nruns = n;
		}
		struct scope_runs *sr = &a->runs[s];
		sr->v = xgrow(sr->v, &sr->cap, sr->n + 1, sizeof(*sr->v));
		sr->v[sr->n++] = (struct run_window){ e->u.run.index, e->ts,
		                                      e->ts + e->dur };
	}
	for (size_t i = 0; i < a->nruns; i++)
		if (a->runs[i].n > 1)
			qsort(a->runs[i].v, a->runs[i].n, sizeof(*a->runs[i].v),
			      cmp_run_window);
	/* errors are reported by the main pass, which meets them too */
	tk_reader_free(r);
	return 0;
}

/* A descriptor that can be read twice: the file itself (or its
 * import), or standard input (or a pipe) copied to an unlinked temporary
 * file, which `in` then holds. */
static int
rereadable_fd(struct autoread *in)
{
	int fd = in->fd;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return fd;
	const char *dir = getenv("TMPDIR");
	char tmpl[4096];
	snprintf(tmpl, sizeof(tmpl), "%s/trace-stats.XXXXXX", dir && *dir ? dir : "/tmp");
	int tmp = mkstemp(tmpl);
	if (tmp < 0) {
		cmd_warn("cannot create a temporary file in %s: %s",
		         dir && *dir ? dir : "/tmp", strerror(errno));
		return -1;
	}
	unlink(tmpl);
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* let the reader report it, on what was copied */
			break;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(tmp, buf + off, (size_t)(n - off));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				cmd_warn("temporary file: %s", strerror(errno));
				close(tmp);
				return -1;
			}
			off += w;
		}
	}
	autoread_close(in);
	in->fd = tmp;
	in->own_fd = 1;
	lseek(tmp, 0, SEEK_SET);
	return tmp;
}

/* by_input: the input just read is run number inputs, its wall that
 * of its kept events. */
static void
input_run(struct agg *a)
{
	uint32_t n = a->run.inputs;
	if (n > a->run.runs_seen) {
		a->run.run_wall = cmd_xrealloc(a->run.run_wall, n * sizeof(*a->run.run_wall));
		memset(a->run.run_wall + a->run.runs_seen, 0,
		       (n - a->run.runs_seen) * sizeof(*a->run.run_wall));
		a->run.runs_seen = n;
	}
	a->run.run_wall[n - 1] = a->in_max > a->in_min ? a->in_max - a->in_min : 0;
}

/* --steps: the series of the first input that has one serves for all. */
static void
choose_steps(struct agg *a, int fd, const char *path)
{
	char *name = steps_find(fd, path);
	if (!name)
		return;
	oom_if(step_match_init(&a->per_match, name));
	free(name);
	a->per_label = cmd_xstrdup(a->per_match.norm);
}

int
agg_read(struct agg *a, const char *path)
{
	struct tk_reader *r;
	struct autoread in;
	int fd;
	a->run.inputs++;
	a->cur_path = path;
	a->in_min = INT64_MAX;
	a->in_max = INT64_MIN;
	int status = autoread_open(&in, path, NULL);
	if (status)
		return status;
	status = in.partial ? EXIT_BADINPUT : 0;
	int find_steps = a->opt.steps && !a->per_match.name;
	if (a->opt.run || a->opt.by_run || find_steps) {
		if ((fd = rereadable_fd(&in)) < 0) {
			autoread_close(&in);
			return EXIT_BADINPUT;
		}
		if (a->opt.run || a->opt.by_run)
			find_runs(a, fd, path);
		lseek(fd, 0, SEEK_SET);
		if (find_steps)
			choose_steps(a, fd, path);
		lseek(fd, 0, SEEK_SET);
		/* no table or finding reads args */
		r = cmd_new_reader(CMD_READ_NO_ARGS);
		if (tk_reader_open_fd(r, fd, cmd_display_path(path)) != TK_OK) {
			cmd_reader_error(path, r);
			tk_reader_free(r);
			autoread_close(&in);
			return EXIT_BADINPUT;
		}
	} else if (!(r = autoread_reader_flags(&in, path, CMD_READ_NO_ARGS))) {
		autoread_close(&in);
		return EXIT_BADINPUT;
	}
	begin_scope(a, r);
	struct tk_record rec;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
		switch (rec.type) {
		case TK_REC_EVENT:
			if (tk_reader_chunk(r)->offset != a->sc.chunk)
				chunk_changed(a, r);
			ingest(a, r, rec.u.event);
			break;
		case TK_REC_SCOPE:
			end_scope(a);
			begin_scope(a, r);
			break;
		case TK_REC_TRACK: {
			/* a redefinition (a thread renamed) refreshes the cache */
			uint32_t id = rec.u.track->id;
			if (id < a->sc.ntrk)
				a->sc.trk[id].valid = 0;
			if (rec.u.track->type == TK_TRACK_PROCESS)
				track_info(a, r, id, rec.u.track);
			break;
		}
		case TK_REC_META:
			add_meta(a, rec.u.meta->key, rec.u.meta->value);
			break;
		default:
			break;
		}
	}
	end_scope(a);
	if (a->opt.by_input)
		input_run(a);
	a->run.skipped += tk_reader_skipped(r);
	if (rc != TK_EOF) {
		cmd_reader_error(path, r);
		status = EXIT_BADINPUT;
	}
	tk_reader_free(r);
	autoread_close(&in);
	return status;
}

/* ---- results -------------------------------------------------------------------------------- */

static int
cmp_segment(const void *x, const void *y)
{
	const struct segment *p = x, *q = y;
	return (p->first > q->first) - (p->first < q->first);
}

void
agg_finish(struct agg *a)
{
	if (a->finished)
		return;
	a->finished = 1;
	for (size_t i = 0; i < a->ngroups && !a->restored; i++)
		dist_summary(&a->groups[i].dur, &a->groups[i].s);
	for (size_t i = 0; i < a->ndevs; i++) {
		struct device *d = &a->devs[i];
		if (d->nsegs > 1)
			qsort(d->segs, d->nsegs, sizeof(*d->segs), cmp_segment);
		int64_t last = INT64_MIN;
		for (size_t s = 0; s < d->nsegs; s++) {
			if (d->segs[s].first < last)
				d->pub.overlap = 1;
			if (d->segs[s].last > last)
				last = d->segs[s].last;
		}
	}
	if (a->per && !(a->per_result = perinst_finish(a->per)))
		cmd_die(EXIT_USAGE, "out of memory");
	if (a->ranks)
		oom_if(ranks_finish(a->ranks));
}

size_t
agg_ngroups(const struct agg *a)
{
	return a->ngroups;
}

struct agg_group *
agg_group(struct agg *a, size_t i)
{
	return i < a->ngroups ? &a->groups[i] : NULL;
}

struct agg_group *
agg_find(struct agg *a, unsigned kind, const char *domain, const char *name)
{
	for (size_t i = 0; i < a->ngroups; i++) {
		struct agg_group *g = &a->groups[i];
		if (g->kind == kind && strcmp(g->name, name) == 0 &&
		    strcmp(g->domain, domain ? domain : "") == 0)
			return g;
	}
	return NULL;
}

size_t
agg_ndevices(const struct agg *a)
{
	return a->ndevs;
}

const struct agg_device *
agg_device(const struct agg *a, size_t i)
{
	return i < a->ndevs ? &a->devs[i].pub : NULL;
}

size_t
agg_nprocesses(const struct agg *a)
{
	return a->nprocs;
}

const struct agg_process *
agg_process(const struct agg *a, size_t i)
{
	return i < a->nprocs ? &a->procs[i] : NULL;
}

const struct agg_run *
agg_run(const struct agg *a)
{
	return &a->run;
}

const struct perinst_result *
agg_per(const struct agg *a)
{
	return a->per_result;
}

const struct allocpeak_step *
agg_step_memory(const struct agg *a, size_t *n)
{
	*n = 0;
	return a->alloc && a->per_result ? allocpeak_steps(a->alloc, n) : NULL;
}

const struct opview_row *
agg_operators(const struct agg *a, size_t *n)
{
	*n = 0;
	return a->ops ? opview_rows(a->ops, n) : NULL;
}

const char *
agg_per_name(const struct agg *a)
{
	return a->per_label;
}

int
agg_per_whole_input(const struct agg *a)
{
	return a->per_whole_input;
}

const struct ranks *
agg_ranks(const struct agg *a)
{
	return a->ranks;
}

int64_t
agg_wall(const struct agg *a)
{
	if (a->opt.by_input) {
		int64_t sum = 0;
		for (uint32_t i = 0; i < a->run.runs_seen; i++)
			sum += a->run.run_wall[i];
		return sum;
	}
	return a->run.t_max > a->run.t_min ? a->run.t_max - a->run.t_min : 0;
}

int64_t
agg_resolution(struct agg *a)
{
	if (a->restored)
		return a->resolution;
	int64_t tick = 1000;
	for (size_t i = 0; i < a->ngroups && tick > 1; i++) {
		const struct dist *d = &a->groups[i].dur;
		if (d->approx || !d->v)
			return 1;
		for (uint64_t k = 0; k < d->count && tick > 1; k++)
			while (tick > 1 && d->v[k] % tick)
				tick /= 10;
	}
	return tick;
}

/* ---- an aggregation restored from a summary --------------------------------------------- */

struct agg_group *
agg_restore_group(struct agg *a, unsigned kind, const char *domain, const char *name,
                  unsigned copy_kind, unsigned src, unsigned dst)
{
	a->restored = 1;
	if (agg_table_of(kind) < 0)
		return NULL;
	int32_t g = group_for(a, kind, domain ? domain : "", name, copy_kind, src, dst);
	return g > 0 ? &a->groups[g - 1] : NULL;
}

struct agg_device *
agg_restore_device(struct agg *a, const char *host, int64_t index, const char *name)
{
	a->restored = 1;
	a->devs = xgrow(a->devs, &a->capdevs, a->ndevs + 1, sizeof(*a->devs));
	struct device *dv = &a->devs[a->ndevs++];
	memset(dv, 0, sizeof(*dv));
	dv->pub.host = cmd_xstrdup(host ? host : "");
	dv->pub.name = cmd_xstrdup(name ? name : "");
	dv->pub.index = index;
	dv->pub.first = INT64_MAX;
	dv->pub.last = INT64_MIN;
	busy_init(&dv->cur.busy);
	return &dv->pub;
}

struct agg_process *
agg_restore_process(struct agg *a, const char *host, int64_t pid, const char *name,
                    const char *command, const char *label)
{
	a->restored = 1;
	a->procs = xgrow(a->procs, &a->capprocs, a->nprocs + 1, sizeof(*a->procs));
	struct agg_process *pr = &a->procs[a->nprocs++];
	memset(pr, 0, sizeof(*pr));
	pr->host = cmd_xstrdup(host ? host : "");
	pr->pid = pid;
	pr->name = cmd_xstrdup(name ? name : "");
	pr->command = cmd_xstrdup(command ? command : "");
	pr->label = cmd_xstrdup(label ? label : "");
	return pr;
}

struct agg_run *
agg_restore_run(struct agg *a)
{
	a->restored = 1;
	return &a->run;
}

void
agg_restore_meta(struct agg *a, const char *key, const char *value)
{
	a->restored = 1;
	add_meta(a, key, value);
}

void
agg_restore_resolution(struct agg *a, int64_t tick)
{
	a->restored = 1;
	a->resolution = tick;
}
