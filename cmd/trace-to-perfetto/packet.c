/* SPDX-License-Identifier: MIT */
/*
 * Packets of trace-to-perfetto's one sequence.  Each file begins with a
 * packet that clears the incremental state and defines clock 64, an
 * incremental clock: the timestamp of each later packet is then the
 * nanoseconds since the packet before, a byte or two instead of nine.
 * Clock 65 is the same in microseconds: a trace imported from JSON has
 * whole microseconds only, and its deltas are then a byte shorter (a
 * third of a packet's time bytes).  Which of the two packets use by
 * default follows the trace: after 64 whole microseconds in a row the
 * next packet switches the default to 65 (TracePacketDefaults, which
 * keeps the interned data), and a few packets that are not whole
 * switch it back; such a packet meanwhile names clock 64.
 * A packet that would go back in time (an unsorted input let out early)
 * carries an absolute BOOTTIME timestamp instead, which leaves the
 * incremental clock where it was.  New interned strings ride in the
 * packet that first uses them.
 */
#include "perfetto.h"
#include "common/util.h"

enum {
	TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11,
	TP_INTERNED = 12, TP_FLAGS = 13, TP_CLOCK_ID = 58, TP_DEFAULTS = 59,
	TP_FIRST_ON_SEQ = 87, TP_ATTRIBUTES = 126,
};
/* Event packets do not set SEQ_NEEDS_INCREMENTAL_STATE (2): it only asks
 * a reader to skip packets written before the state was cleared, which
 * a file never has (its first packet clears it), and it cost 2 bytes of
 * every slice begin and instant. */
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1 };

#define SCORE_MAX 64      /* whole microseconds in a row that switch to 65 */
#define SCORE_MISS 4      /* a packet on 64 meanwhile costs 3 bytes more */

/* t0: a whole microsecond, so that clock 65 reads it exactly. */
static void
clock_snapshot(struct pbuf *b, int64_t t0)
{
	size_t snap = pb_open(b, TP_CLOCK_SNAPSHOT);
	size_t c = pb_open(b, 1);
	pb_uint(b, 1, PF_CLOCK_INCR);
	pb_uint(b, 2, (uint64_t)t0);
	pb_uint(b, 3, 1);  /* is_incremental */
	pb_close(b, c);
	c = pb_open(b, 1);
	pb_uint(b, 1, PF_CLOCK_INCR_US);
	pb_uint(b, 2, (uint64_t)t0 / 1000);
	pb_uint(b, 3, 1);
	pb_uint(b, 4, 1000);  /* unit_multiplier_ns */
	pb_close(b, c);
	c = pb_open(b, 1);
	pb_uint(b, 1, PF_CLOCK_BOOTTIME);
	pb_uint(b, 2, (uint64_t)t0);
	pb_close(b, c);
	pb_close(b, snap);
}

void
pf_seq_start(struct pf_seq *s, int64_t t0, const char *const *meta, size_t nmeta)
{
	struct pbuf *b = &s->pkt;
	size_t pkt = pb_open(b, 1);
	pb_uint(b, TP_TIMESTAMP, (uint64_t)t0);
	pb_uint(b, TP_CLOCK_ID, PF_CLOCK_BOOTTIME);
	pb_uint(b, TP_SEQ_ID, PF_SEQ_ID);
	pb_uint(b, TP_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_uint(b, TP_FIRST_ON_SEQ, 1);
	int64_t t0us = t0 - t0 % 1000;  /* times are never negative */
	clock_snapshot(b, t0us);
	size_t d = pb_open(b, TP_DEFAULTS);
	pb_uint(b, 58, PF_CLOCK_INCR);  /* timestamp_clock_id */
	pb_close(b, d);
	pb_close(b, pkt);
	s->clock.ns = s->clock.us = t0us;
	s->clock.micro = 0;
	s->clock.score = 0;
	s->packets++;
	pf_seq_attributes(s, meta, nmeta);
}

void
pf_seq_attributes(struct pf_seq *s, const char *const *kv, size_t n)
{
	struct pbuf *b = &s->pkt;
	if (!n)
		return;
	size_t pkt = pb_open(b, 1);
	pb_uint(b, TP_SEQ_ID, PF_SEQ_ID);
	size_t at = pb_open(b, TP_ATTRIBUTES);
	for (size_t i = 0; i < n; i++) {
		size_t a = pb_open(b, 1);
		pb_str(b, 1, kv[2 * i]);
		pb_str(b, 3, kv[2 * i + 1]);
		pb_close(b, a);
	}
	pb_close(b, at);
	pb_close(b, pkt);
	s->packets++;
}

void
pf_seq_event(struct pf_seq *s, int64_t ts, const struct pbuf *te)
{
	struct pbuf *b = &s->pkt;
	size_t pkt = pb_open(b, 1);
	struct pf_clocks *c = &s->clock;
	int whole = ts % 1000 == 0;
	if (whole)
		c->score += c->score < SCORE_MAX;
	else if ((c->score -= SCORE_MISS) < -SCORE_MAX)
		c->score = -SCORE_MAX;
	int micro = c->micro ? c->score > 0 : c->score >= SCORE_MAX;
	if (micro != c->micro) {
		size_t d = pb_open(b, TP_DEFAULTS);
		pb_uint(b, 58, micro ? PF_CLOCK_INCR_US : PF_CLOCK_INCR);
		pb_close(b, d);
		c->micro = micro;
	}
	if (c->micro && whole && ts >= c->us) {
		pb_uint(b, TP_TIMESTAMP, (uint64_t)(ts - c->us) / 1000);
		c->us = ts;
	} else if (ts >= c->ns) {
		pb_uint(b, TP_TIMESTAMP, (uint64_t)(ts - c->ns));
		if (c->micro)
			pb_uint(b, TP_CLOCK_ID, PF_CLOCK_INCR);
		c->ns = ts;
	} else {
		pb_uint(b, TP_TIMESTAMP, (uint64_t)ts);
		pb_uint(b, TP_CLOCK_ID, PF_CLOCK_BOOTTIME);
		s->absolute++;
	}
	pb_uint(b, TP_SEQ_ID, PF_SEQ_ID);
	if (s->in->pending.len) {
		pb_msg(b, TP_INTERNED, &s->in->pending);
		s->in->pending.len = 0;
	}
	pb_msg(b, TP_TRACK_EVENT, te);
	pb_close(b, pkt);
	s->packets++;
}

void
pf_seq_flush(struct pf_seq *s)
{
	pf_out_write(s->out, s->pkt.p, s->pkt.len);
	s->pkt.len = 0;
}
