/* SPDX-License-Identifier: MIT */
/*
 * The reader's worker threads (rpool.h).
 *
 * Checking and inflating a chunk needs nothing but its bytes, and
 * decoding its columns needs little more; applying its definitions
 * needs every chunk before it.  So workers check, inflate and decode
 * ahead of the caller (the decode through the reader's hook,
 * tkp_rpool.decode), and the reader's own thread applies definitions
 * in order and takes the decoded columns where they hold (reader.c,
 * struct unchecked, adopt()), else decodes the chunk itself.
 * The slots are a ring used in order: filled and posted by the reader,
 * worked on by whichever worker is free, taken back in order.  Workers
 * start with every signal blocked, as the writer's sealer thread does.
 *
 * What ties decoding the columns to the chunks before, precisely (the
 * predictors, D-column differences and groups restart at every chunk;
 * these do not), and how a worker's decode stands in for it:
 *  - the bounds of ids: names and string attributes up to the strings
 *    defined so far, tracks up to the tracks (+ UNKNOWN_TRACKS_MAX),
 *    launch configurations up to those defined; a bound that fails is
 *    an error of that chunk, reported in the order one thread meets it.
 *    The worker checks none and keeps the largest of each; the reader
 *    compares them with its counts;
 *  - which tracks are GPU streams, whose begin times are predicted from
 *    the previous end rather than the previous begin (decode_times()).
 *    The worker uses a copy of the flags taken when the chunk was read
 *    ahead; the reader compares it with its own over the tracks used;
 *  - string attributes resolved to pointers into the strings table,
 *    which the reader's thread grows (realloc) as definitions come, and
 *    kernels' launch configurations copied from their table.  The
 *    worker leaves the ids; the reader resolves them;
 *  - no_args as set when the chunk's first event is asked for (a caller
 *    may change it between chunks).  The worker uses the setting of when
 *    the chunk was read ahead; the reader compares.
 * Where a comparison fails, or the worker met any error, the reader
 * decodes the chunk again itself, so that the error and its offset are
 * one thread's.  The decoded arrays are swapped between the reader and
 * the slot's decoder, not copied: ~100-120 bytes an event of a chunk in
 * every slot.
 *
 * After fork() the child has the ring but no workers: from then on the
 * taker does the work of whatever slot is not done (a slot a worker was
 * in the middle of is done again, from its intact input), and no lock
 * is touched, since one may have been held by a thread that is gone. *
 * Which thread does a slot (a worker, or the reading thread in
 * tkp_rpool_take()) depends on timing, and nothing that comes out may:
 * every slot's result is a function of its bytes and of what the
 * reading thread copied into it before posting it.  So that tests see
 * both ways every time rather than whichever a machine's load favours,
 * a build with TK_RPOOL_SCHEDULE (test_parallel's only) reads
 * TK_RPOOL_SCHEDULE when the pool starts: "workers" (the reading thread
 * always waits for a worker), "reader" (workers claim nothing: the
 * reading thread does every slot, threads idle) or "jitter" (each
 * party sleeps up to 300 us at random before it claims a slot, after it
 * works on one and before it takes one).  Other builds compile none of it.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libdeflate.h>

#include "rpool.h"

enum { SLOT_FREE, SLOT_POSTED, SLOT_WORKING, SLOT_DONE, SLOT_HELD };

enum { SCHEDULE_ANY, SCHEDULE_WORKERS, SCHEDULE_READER, SCHEDULE_JITTER };

#ifdef TK_RPOOL_SCHEDULE
int
tkp_rpool_schedules(void)
{
	return 1;
}

static int
schedule_of_env(void)
{
	const char *s = getenv("TK_RPOOL_SCHEDULE");
	if (!s)
		return SCHEDULE_ANY;
	if (!strcmp(s, "workers"))
		return SCHEDULE_WORKERS;
	if (!strcmp(s, "reader"))
		return SCHEDULE_READER;
	if (!strcmp(s, "jitter"))
		return SCHEDULE_JITTER;
	return SCHEDULE_ANY;
}

/* Sleep up to 300 us under the jitter schedule (any thread; *seed is
 * the calling thread's own). */
static void
jitter(const struct tkp_rpool *p, unsigned *seed)
{
	if (p->schedule != SCHEDULE_JITTER)
		return;
	struct timespec ts = { 0, (long)(rand_r(seed) % 300) * 1000 };
	nanosleep(&ts, NULL);
}
#else
static void
jitter(const struct tkp_rpool *p, unsigned *seed)
{
	(void)p;
	(void)seed;
}
#endif

void
tkp_rslot_work(struct tkp_rslot *s, struct libdeflate_decompressor *dec)
{
	struct tkp_chunk_header ch;
	s->crc_ok = 0;
	s->inflated = 0;
	if (!s->chunk)
		return;
	/* the reader framed it: the header's size and sizes are good */
	uint32_t hsize = (uint32_t)s->bytes[4] | (uint32_t)s->bytes[5] << 8 |
	                 (uint32_t)s->bytes[6] << 16 | (uint32_t)s->bytes[7] << 24;
	tkp_chunk_header_decode(s->bytes, hsize, &ch);
	const uint8_t *body = s->bytes + hsize;
	uint32_t crc = tkp_crc32(0, s->bytes, hsize - 4);
	crc = tkp_crc32(crc, body, ch.stored);
#ifdef TK_FUZZING
	s->crc_ok = 1; /* as the reader's check_crc() */
#else
	s->crc_ok = crc == ch.crc;
#endif
	if (!s->crc_ok || tkp_chunk_flags_unknown(ch.flags) ||
	    !(ch.flags & TK_CHUNK_DEFLATE))
		return;
	s->out.len = 0;
	if (tkp_buf_reserve(&s->out, ch.raw ? ch.raw : 1) < 0)
		return; /* inflated 0: the reader inflates it itself */
	size_t actual = 0;
	enum libdeflate_result res = libdeflate_zlib_decompress(
		dec, body, ch.stored, s->out.p, ch.raw, &actual);
	s->inflated = res == LIBDEFLATE_SUCCESS && actual == ch.raw ? 1 : -1;
}

/* All a worker does with a slot: the verdicts, then the hook. */
static void
work(struct tkp_rpool *p, struct tkp_rslot *s,
     struct libdeflate_decompressor *dec)
{
	tkp_rslot_work(s, dec);
	if (p->decode && s->inflated > 0)
		p->decode(s);
}

/* In a child of fork(), or with no threads: no locks, no waiting. */
static int
alone(struct tkp_rpool *p)
{
	if (!p->inline_only && getpid() != p->pid)
		p->inline_only = 1;
	return p->inline_only;
}

struct worker_arg {
	struct tkp_rpool *pool;
	unsigned index;
};

static void *
run(void *arg)
{
	struct tkp_rpool *p = ((struct worker_arg *)arg)->pool;
	struct libdeflate_decompressor *dec =
		p->decs[((struct worker_arg *)arg)->index];
	unsigned seed = ((struct worker_arg *)arg)->index; /* jitter()'s */
	free(arg);
	int paused = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct tkp_rslot *s = &p->slots[p->work % p->nslots];
		if (p->quit)
			break;
		if (s->state != SLOT_POSTED || p->schedule == SCHEDULE_READER) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		if (p->schedule == SCHEDULE_JITTER && !paused) {
			/* once before each claim: look again after it */
			paused = 1;
			pthread_mutex_unlock(&p->mu);
			jitter(p, &seed);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		paused = 0;
		s->state = SLOT_WORKING;
		p->work++;
		pthread_mutex_unlock(&p->mu);
		work(p, s, dec);
		jitter(p, &seed);
		pthread_mutex_lock(&p->mu);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void
start_threads(struct tkp_rpool *p, unsigned threads)
{
	if (!(p->threads = calloc(threads, sizeof(*p->threads))))
		return;
	if (pthread_mutex_init(&p->mu, NULL))
		return;
	if (pthread_cond_init(&p->cv, NULL)) {
		pthread_mutex_destroy(&p->mu);
		return;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < threads; i++) {
		struct worker_arg *a = malloc(sizeof(*a));
		if (!a)
			break;
		*a = (struct worker_arg){ p, i + 1 };
		if (pthread_create(&p->threads[i], NULL, run, a)) {
			free(a);
			break;
		}
		p->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->nthreads) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		return;
	}
	p->inline_only = 0;
}

struct tkp_rpool *
tkp_rpool_new(unsigned threads)
{
	struct tkp_rpool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->nslots = threads + 1;
	p->inline_only = 1;
	p->pid = getpid();
#ifdef TK_RPOOL_SCHEDULE
	p->schedule = schedule_of_env();
	p->schedule_seed = 12345;
#endif
	p->slots = calloc(p->nslots, sizeof(*p->slots));
	p->decs = calloc(threads + 1, sizeof(*p->decs));
	if (!p->slots || !p->decs)
		goto fail;
	for (unsigned i = 0; i <= threads; i++)
		if (!(p->decs[i] = libdeflate_alloc_decompressor()))
			goto fail;
	start_threads(p, threads);
	return p;
fail:
	tkp_rpool_free(p);
	return NULL;
}

struct tkp_rslot *
tkp_rpool_free_slot(struct tkp_rpool *p)
{
	struct tkp_rslot *s = &p->slots[p->fill % p->nslots];
	int state;
	if (alone(p)) {
		state = s->state;
	} else {
		pthread_mutex_lock(&p->mu);
		state = s->state;
		pthread_mutex_unlock(&p->mu);
	}
	return state == SLOT_FREE ? s : NULL;
}

void
tkp_rpool_post(struct tkp_rpool *p, struct tkp_rslot *s)
{
	p->fill++;
	if (alone(p)) {
		s->state = SLOT_POSTED;
		return;
	}
	pthread_mutex_lock(&p->mu);
	s->state = SLOT_POSTED;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

struct tkp_rslot *
tkp_rpool_take(struct tkp_rpool *p)
{
	struct tkp_rslot *s = &p->slots[p->take % p->nslots];
	if (alone(p)) {
		if (s->state == SLOT_FREE || s->state == SLOT_HELD)
			return NULL;
		if (s->state != SLOT_DONE)
			work(p, s, p->decs[0]);
		s->state = SLOT_HELD;
	} else {
		jitter(p, &p->schedule_seed);
		pthread_mutex_lock(&p->mu);
		if (s->state == SLOT_FREE || s->state == SLOT_HELD) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		if (s->state == SLOT_POSTED && p->schedule != SCHEDULE_WORKERS) {
			/* no worker has begun it (they are busy, or not
			 * running on a loaded machine): do it here rather
			 * than wait.  It is the next slot to work on: the
			 * workers claim slots in order, and those before it
			 * are taken. */
			s->state = SLOT_WORKING;
			p->work++;
			pthread_mutex_unlock(&p->mu);
			work(p, s, p->decs[0]);
			pthread_mutex_lock(&p->mu);
			s->state = SLOT_DONE;
		}
		while (s->state != SLOT_DONE)
			pthread_cond_wait(&p->cv, &p->mu);
		s->state = SLOT_HELD;
		pthread_mutex_unlock(&p->mu);
	}
	p->take++;
	return s;
}

void
tkp_rpool_release(struct tkp_rpool *p, struct tkp_rslot *s)
{
	if (alone(p)) {
		s->state = SLOT_FREE;
		return;
	}
	pthread_mutex_lock(&p->mu);
	s->state = SLOT_FREE;
	pthread_mutex_unlock(&p->mu);
}

void
tkp_rpool_free(struct tkp_rpool *p)
{
	if (!p)
		return;
	if (!alone(p)) {
		pthread_mutex_lock(&p->mu);
		p->quit = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		for (unsigned i = 0; i < p->nthreads; i++)
			pthread_join(p->threads[i], NULL);
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
	}
	free(p->threads);
	for (unsigned i = 0; p->slots && i < p->nslots; i++) {
		tkp_buf_free(&p->slots[i].in);
		tkp_buf_free(&p->slots[i].out);
		tk_reader_free(p->slots[i].decoder);
	}
	free(p->slots);
	if (p->decs)
		for (unsigned i = 0; i < p->nslots; i++)
			if (p->decs[i])
				libdeflate_free_decompressor(p->decs[i]);
	free(p->decs);
	free(p);
}
