/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "perinst.h"
#include "support.h"

/* An instance as seen on its thread in the current scope. */
struct inst {
	int64_t b, e;
	uint32_t idx;            /* global instance number */
	int32_t parent;          /* enclosing instance in the sorted list, -1 */
};

struct thread_insts {
	struct inst *v;
	size_t n, cap;
	int dirty;               /* not sorted / parents stale */
};

struct pending {
	int64_t ts, dur;
	uint64_t corr;
	uint32_t group;
	uint32_t who;            /* thread (cpu) or process (gpu) */
	uint32_t process;        /* cpu: the thread's process */
	int gpu;                 /* 0 host, 1 kernel, 2 copy, 3 API call */
};

/* open-addressing table: (process, correlation) -> launch (thread, ts) */
struct launch {
	uint64_t corr;           /* 0 = empty (CUPTI ids start at 1) */
	uint32_t process, thread;
	int64_t ts;
};

/* (group, instance) -> count and time */
struct cell {
	uint64_t key;            /* group << 32 | instance; UINT64_MAX = empty */
	uint64_t count;
	int64_t time;
};

struct perinst {
	int approx;
	struct dist_budget *budget;
	/* scope */
	struct thread_insts *threads;   /* by thread track id */
	size_t nthreads;
	struct thread_insts *procs;     /* all its threads', by process track id */
	size_t nprocs;
	struct thread_insts *inputs;    /* perinst_input_instance(), by key */
	size_t ninputs;
	uint32_t *thread_key;    /* by thread track id: key + 1, 0 = none */
	size_t nthread_key;
	int process_wide;        /* perinst_process_wide() */
	struct launch *launches;
	size_t nlaunch, caplaunch;
	struct pending *pend;
	size_t npend, cappend;
	/* whole input */
	struct cell *cells;
	size_t ncells, capcells;
	uint64_t ninst;
	struct perinst_instance *inst; /* by instance number */
	size_t capinst;
	size_t scope_first;      /* first instance of the current scope */
	struct perinst_result res;
};

struct perinst *
perinst_new(int approx, struct dist_budget *budget)
{
	struct perinst *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->approx = approx;
	p->budget = budget;
	dist_init_budget(&p->res.dur, approx, budget);
	p->res.first = INT64_MAX;
	p->res.last = INT64_MIN;
	return p;
}

static void
clear_scope(struct perinst *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].v);
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
	for (size_t i = 0; i < p->nprocs; i++)
		free(p->procs[i].v);
	free(p->procs);
	p->procs = NULL;
	p->nprocs = 0;
	for (size_t i = 0; i < p->ninputs; i++)
		free(p->inputs[i].v);
	free(p->inputs);
	p->inputs = NULL;
	p->ninputs = 0;
	free(p->thread_key);
	p->thread_key = NULL;
	p->nthread_key = 0;
	free(p->launches);
	p->launches = NULL;
	p->nlaunch = p->caplaunch = 0;
	p->scope_first = (size_t)p->ninst;
}

void
perinst_free(struct perinst *p)
{
	if (!p)
		return;
	clear_scope(p);
	free(p->pend);
	free(p->cells);
	free(p->inst);
	dist_free(&p->res.dur);
	for (size_t i = 0; i < p->res.nchildren; i++) {
		dist_free(&p->res.children[i].count);
		dist_free(&p->res.children[i].time);
	}
	free(p->res.children);
	free(p);
}

/* ---- instances ------------------------------------------------------------- */

/* The list of track `id` among *lists (n of them), grown if `create`. */
static struct thread_insts *
list_of(struct thread_insts **lists, size_t *n, uint32_t id, int create)
{
	if (id >= *n) {
		if (!create)
			return NULL;
		size_t cap = *n;
		struct thread_insts *t = tkp_grow(*lists, &cap, (size_t)id + 1, sizeof(*t));
		if (!t)
			return NULL;
		memset(t + *n, 0, (cap - *n) * sizeof(*t));
		*lists = t;
		*n = cap;
	}
	return &(*lists)[id];
}

static struct thread_insts *
thread_list(struct perinst *p, uint32_t thread, int create)
{
	return list_of(&p->threads, &p->nthreads, thread, create);
}

static int
add_inst(struct thread_insts *t, const struct inst *in)
{
	struct inst *v = tkp_grow(t->v, &t->cap, t->n + 1, sizeof(*v));
	if (!v)
		return -1;
	t->v = v;
	t->v[t->n++] = *in;
	t->dirty = 1;
	return 0;
}

void
perinst_process_wide(struct perinst *p, int on)
{
	p->process_wide = on;
}

int
perinst_instance(struct perinst *p, uint32_t process, uint32_t thread,
                 int64_t begin, int64_t end)
{
	return perinst_instance_keyed(p, process, thread, 0, begin, end);
}

/* A new instance in list t and, unless NULL, in list pt. */
static int
new_instance(struct perinst *p, struct thread_insts *t, struct thread_insts *pt,
             uint32_t key, int64_t begin, int64_t end)
{
	if (end < begin)
		end = begin;
	struct perinst_instance *in = tkp_grow(p->inst, &p->capinst, p->ninst + 1,
	                                       sizeof(*in));
	if (!in)
		return -1;
	p->inst = in;
	memset(&in[p->ninst], 0, sizeof(*in));
	in[p->ninst].begin = begin;
	in[p->ninst].dur = end - begin;
	in[p->ninst].key = key;
	struct inst in1 = { begin, end, (uint32_t)p->ninst, -1 };
	if (add_inst(t, &in1) < 0 || (pt && add_inst(pt, &in1) < 0))
		return -1;
	p->ninst++;
	if (dist_add(&p->res.dur, end - begin) < 0)
		return -1;
	if (begin < p->res.first)
		p->res.first = begin;
	if (end > p->res.last)
		p->res.last = end;
	return 0;
}

int
perinst_instance_keyed(struct perinst *p, uint32_t process, uint32_t thread,
                       uint32_t key, int64_t begin, int64_t end)
{
	struct thread_insts *t = thread_list(p, thread, 1);
	/* the process's list only where other threads look into it */
	struct thread_insts *pt = p->process_wide
		? list_of(&p->procs, &p->nprocs, process, 1) : NULL;
	if (!t || (p->process_wide && !pt))
		return -1;
	return new_instance(p, t, pt, key, begin, end);
}

int
perinst_input_instance(struct perinst *p, uint32_t key, int64_t begin,
                       int64_t end)
{
	struct thread_insts *t = list_of(&p->inputs, &p->ninputs, key, 1);
	return t ? new_instance(p, t, NULL, key, begin, end) : -1;
}

int
perinst_thread_key(struct perinst *p, uint32_t thread, uint32_t key)
{
	uint32_t *v = tkp_grow_zeroed(p->thread_key, &p->nthread_key, (size_t)thread + 1,
	                              sizeof(*v));
	if (!v)
		return -1;
	p->thread_key = v;
	p->thread_key[thread] = key + 1;
	return 0;
}

static int
inst_cmp(const struct inst *x, const struct inst *y)
{
	/* by begin; an enclosing instance before those it contains */
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return (x->e < y->e) - (x->e > y->e);
}

static void
prepare(struct thread_insts *t)
{
	/* instances arrive nearly in order: insertion sort is linear then */
	for (size_t i = 1; i < t->n; i++) {
		struct inst x = t->v[i];
		size_t j = i;
		while (j > 0 && inst_cmp(&t->v[j - 1], &x) > 0) {
			t->v[j] = t->v[j - 1];
			j--;
		}
		t->v[j] = x;
	}
	/* parents, with a stack of the instances still open */
	int32_t top = -1;
	for (size_t i = 0; i < t->n; i++) {
		while (top >= 0 && t->v[top].e <= t->v[i].b &&
		       !(t->v[top].b == t->v[i].b))
			top = t->v[top].parent;
		t->v[i].parent = top;
		top = (int32_t)i;
	}
	t->dirty = 0;
}

static int
contains(const struct inst *in, int64_t t)
{
	return in->b <= t && (t < in->e || in->b == in->e);
}

/* Global number of the innermost instance of list th containing t, or -1. */
static long
enclosing_in(struct thread_insts *th, int64_t t)
{
	if (!th || th->n == 0)
		return -1;
	if (th->dirty)
		prepare(th);
	/* last instance beginning at or before t */
	size_t lo = 0, hi = th->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (th->v[mid].b <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int32_t j = (int32_t)lo - 1; j >= 0; j = th->v[j].parent)
		if (contains(&th->v[j], t))
			return th->v[j].idx;
	return -1;
}

/* The instance something on `thread` of `process` at time t belongs to:
 * the innermost of the thread's own instances containing t; when the
 * instances are steps (perinst_process_wide), on a thread with no
 * instance of its own, the innermost of its process's (any thread's)
 * containing t.  PyTorch's backward pass runs on its
 * autograd threads, its steps (ProfilerStep#N, NVTX ranges) on the main
 * thread: half a step's kernels are launched off the step's thread.
 * In a process with no instance either, the innermost of its input's
 * (perinst_input_instance()): Kineto's capture range is on a process of
 * its own, and stands for a trace with no ProfilerStep#N. */
static long
enclosing(struct perinst *p, uint32_t process, uint32_t thread, int64_t t)
{
	struct thread_insts *th = thread_list(p, thread, 0);
	if (th && th->n)
		return enclosing_in(th, t);
	/* no known process: its own only */
	struct thread_insts *pt = p->process_wide && process
		? list_of(&p->procs, &p->nprocs, process, 0) : NULL;
	if (pt && pt->n)
		return enclosing_in(pt, t);
	uint32_t key = thread < p->nthread_key ? p->thread_key[thread] : 0;
	if (!key)
		return -1;
	return enclosing_in(list_of(&p->inputs, &p->ninputs, key - 1, 0), t);
}

/* ---- launches ------------------------------------------------------------------ */

static struct launch *
launch_slot(struct launch *tab, size_t cap, uint32_t process, uint64_t corr)
{
	size_t mask = cap - 1;
	for (size_t i = tkp_hash_u64(corr ^ (uint64_t)process << 40) & mask;;
	     i = (i + 1) & mask)
		if (tab[i].corr == 0 || (tab[i].corr == corr && tab[i].process == process))
			return &tab[i];
}

int
perinst_launch(struct perinst *p, uint32_t process, uint64_t corr,
               uint32_t thread, int64_t ts)
{
	if (corr == 0)
		return 0;
	if ((p->nlaunch + 1) * 2 > p->caplaunch) {
		size_t cap = p->caplaunch ? p->caplaunch * 2 : 1024;
		struct launch *tab = calloc(cap, sizeof(*tab));
		if (!tab)
			return -1;
		for (size_t i = 0; i < p->caplaunch; i++)
			if (p->launches[i].corr)
				*launch_slot(tab, cap, p->launches[i].process,
				             p->launches[i].corr) = p->launches[i];
		free(p->launches);
		p->launches = tab;
		p->caplaunch = cap;
	}
	struct launch *s = launch_slot(p->launches, p->caplaunch, process, corr);
	if (s->corr == 0)
		p->nlaunch++;
	*s = (struct launch){ corr, process, thread, ts };
	return 0;
}

/* ---- children -------------------------------------------------------------------- */

static int
push_pending(struct perinst *p, const struct pending *x)
{
	struct pending *v = tkp_grow(p->pend, &p->cappend, p->npend + 1, sizeof(*v));
	if (!v)
		return -1;
	p->pend = v;
	p->pend[p->npend++] = *x;
	return 0;
}

int
perinst_cpu(struct perinst *p, uint32_t group, int is_api, uint32_t process,
            uint32_t thread, int64_t ts, int64_t dur)
{
	struct pending x = { ts, dur, 0, group, thread, process, is_api ? 3 : 0 };
	return push_pending(p, &x);
}

int
perinst_gpu(struct perinst *p, uint32_t group, int is_copy, uint32_t process,
            uint64_t corr, int64_t ts, int64_t dur)
{
	struct pending x = { ts, dur, corr, group, process, process, is_copy ? 2 : 1 };
	return push_pending(p, &x);
}

static struct cell *
cell_slot(struct cell *tab, size_t cap, uint64_t key)
{
	size_t mask = cap - 1;
	for (size_t i = tkp_hash_u64(key) & mask;; i = (i + 1) & mask)
		if (tab[i].key == UINT64_MAX || tab[i].key == key)
			return &tab[i];
}

static int
charge(struct perinst *p, uint32_t group, uint32_t inst, int64_t dur)
{
	if ((p->ncells + 1) * 2 > p->capcells) {
		size_t cap = p->capcells ? p->capcells * 2 : 1024;
		struct cell *tab = malloc(cap * sizeof(*tab));
		if (!tab)
			return -1;
		for (size_t i = 0; i < cap; i++)
			tab[i].key = UINT64_MAX;
		for (size_t i = 0; i < p->capcells; i++)
			if (p->cells[i].key != UINT64_MAX)
				*cell_slot(tab, cap, p->cells[i].key) = p->cells[i];
		free(p->cells);
		p->cells = tab;
		p->capcells = cap;
	}
	uint64_t key = (uint64_t)group << 32 | inst;
	struct cell *c = cell_slot(p->cells, p->capcells, key);
	if (c->key == UINT64_MAX) {
		c->key = key;
		c->count = 0;
		c->time = 0;
		p->ncells++;
	}
	c->count++;
	c->time += dur;
	return 0;
}

static int
resolve(struct perinst *p, const struct pending *x)
{
	long inst;
	if (x->gpu == 0 || x->gpu == 3) {
		inst = enclosing(p, x->process, x->who, x->ts);
	} else {
		struct launch *l = p->caplaunch
			? launch_slot(p->launches, p->caplaunch, x->who, x->corr) : NULL;
		if (!l || l->corr == 0) {
			p->res.gpu_no_launch++;
			p->res.gpu_no_launch_ns += x->dur;
			return 0;
		}
		inst = enclosing(p, l->process, l->thread, l->ts);
		if (inst < 0) {
			p->res.gpu_outside++;
			p->res.gpu_outside_ns += x->dur;
			return 0;
		}
	}
	if (inst < 0)
		return 0;
	struct perinst_instance *in = &p->inst[inst];
	if (x->gpu == 1)
		in->kernel += x->dur;
	else if (x->gpu == 2)
		in->copy += x->dur;
	else if (x->gpu == 3)
		in->api += x->dur;
	if ((x->gpu == 1 || x->gpu == 2) &&
	    charge(p, x->gpu == 1 ? PERINST_ALL_KERNELS : PERINST_ALL_COPIES,
	           (uint32_t)inst, x->dur) < 0)
		return -1;
	return charge(p, x->group, (uint32_t)inst, x->dur);
}

int
perinst_release(struct perinst *p, int64_t w)
{
	size_t keep = 0;
	for (size_t i = 0; i < p->npend; i++) {
		if (p->pend[i].ts < w) {
			if (resolve(p, &p->pend[i]) < 0)
				return -1;
		} else {
			p->pend[keep++] = p->pend[i];
		}
	}
	p->npend = keep;
	return 0;
}

struct perinst_instance *
perinst_scope_instances(struct perinst *p, size_t *n)
{
	*n = (size_t)p->ninst - p->scope_first;
	return p->inst + p->scope_first;
}

int
perinst_scope_end(struct perinst *p)
{
	int rc = perinst_release(p, INT64_MAX);
	clear_scope(p);
	return rc;
}

/* ---- results ------------------------------------------------------------------------- */

static int
cmp_cell(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static int
cmp_instance(const void *a, const void *b)
{
	const struct perinst_instance *x = a, *y = b;
	return (x->begin > y->begin) - (x->begin < y->begin);
}

const struct perinst_result *
perinst_finish(struct perinst *p)
{
	struct perinst_result *r = &p->res;
	if (r->children)
		return r;
	/* compact the table, ordered by group then instance */
	size_t n = 0;
	for (size_t i = 0; i < p->capcells; i++)
		if (p->cells[i].key != UINT64_MAX)
			p->cells[n++] = p->cells[i];
	if (n > 1)
		qsort(p->cells, n, sizeof(*p->cells), cmp_cell);
	size_t ngroups = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || p->cells[i].key >> 32 != p->cells[i - 1].key >> 32)
			ngroups++;
	r->children = calloc(ngroups ? ngroups : 1, sizeof(*r->children));
	if (!r->children)
		return NULL;
	for (size_t i = 0; i < n;) {
		uint32_t g = (uint32_t)(p->cells[i].key >> 32);
		struct perinst_child *c = &r->children[r->nchildren++];
		c->group = g;
		dist_init_budget(&c->count, p->approx, p->budget);
		dist_init_budget(&c->time, p->approx, p->budget);
		uint64_t seen = 0;
		for (; i < n && (uint32_t)(p->cells[i].key >> 32) == g; i++) {
			if (dist_add(&c->count, (int64_t)p->cells[i].count) < 0 ||
			    dist_add(&c->time, p->cells[i].time) < 0)
				return NULL;
			seen++;
		}
		c->instances_with = seen;
		for (; seen < p->ninst; seen++)
			if (dist_add(&c->count, 0) < 0 || dist_add(&c->time, 0) < 0)
				return NULL;
	}
	free(p->cells);
	p->cells = NULL;
	p->ncells = p->capcells = 0;
	if (p->ninst > 1)
		qsort(p->inst, (size_t)p->ninst, sizeof(*p->inst), cmp_instance);
	r->inst = p->inst;
	r->ninst = (size_t)p->ninst;
	return r;
}
