/* SPDX-License-Identifier: MIT */
/*
 * The capture schedule (--capture-range=nvtx:NAME with --skip,
 * --warmup, --active, --repeat-cycles): the PyTorch profiler's
 * wait/warmup/active/repeat schedule, counted over the occurrences of
 * one NVTX range in this process.  A cycle is `skip` occurrences not
 * recorded, `warmup` occurrences not recorded either, then `active`
 * occurrences recorded; `cycles` cycles (0 = no end), then nothing.
 *
 * An occurrence's phase holds from its begin to the next occurrence's
 * begin, except that recording stops at the end of a cycle's last
 * active occurrence.  Warmup occurrences are counted and not recorded:
 * what they are for is the recorder's own start-up cost (for GPU
 * recording, enabling activity collection), which the phase hooks let
 * a source pay there.
 *
 * Each process counts its own occurrences; a child forked by a process
 * starts counting afresh.
 */
#include <string.h>

#include "inject.h"

atomic_int tki_phase = TKI_PHASE_ACTIVE;

static atomic_ullong occurrences;
static size_t capture_len;
static atomic_int phase_changed;

#define MAX_HOOKS 8
static struct {
	void (*fn)(void *arg, enum tki_phase phase);
	void *arg;
} hooks[MAX_HOOKS];
static atomic_int nhooks;

void
tki_capture_init(void)
{
	atomic_store(&occurrences, 0);
	if (tki_cfg.capture) {
		capture_len = strlen(tki_cfg.capture);
		atomic_store(&tki_phase, TKI_PHASE_OFF);
	} else {
		atomic_store(&tki_phase, TKI_PHASE_ACTIVE);
	}
}

int
tki_capture_matches(const struct tki_domain *d, const char *s, size_t len)
{
	if (!tki_cfg.capture || !d || len != capture_len ||
	    memcmp(s, tki_cfg.capture, len) != 0)
		return 0;
	if (d->id != 0)
		return d->capture;
	return !tki_cfg.capture_domain || strcmp(tki_cfg.capture_domain, "*") == 0;
}

/* Phase of occurrence n (from 1), and whether it ends its cycle. */
static enum tki_phase
phase_of(uint64_t n, int *last_active)
{
	*last_active = 0;
	uint64_t len = tki_cfg.skip + tki_cfg.warmup + tki_cfg.active;
	uint64_t m = n - 1;
	if (len == 0 || (tki_cfg.cycles && m / len >= tki_cfg.cycles))
		return TKI_PHASE_OFF;
	uint64_t k = m % len;
	if (k < tki_cfg.skip)
		return TKI_PHASE_OFF;
	if (k < tki_cfg.skip + tki_cfg.warmup)
		return TKI_PHASE_WARMUP;
	*last_active = k == len - 1;
	return TKI_PHASE_ACTIVE;
}

static void
set_phase(enum tki_phase p)
{
	if (atomic_exchange(&tki_phase, (int)p) != (int)p) {
		atomic_store(&phase_changed, 1);
		tki_capture_notify();
	}
}

void
tki_capture_begin(void)
{
	int last;
	uint64_t n = atomic_fetch_add(&occurrences, 1) + 1;
	set_phase(phase_of(n, &last));
}

void
tki_capture_end(void)
{
	int last;
	uint64_t n = atomic_load(&occurrences);
	if (phase_of(n, &last) == TKI_PHASE_ACTIVE && last)
		set_phase(TKI_PHASE_OFF);
}

void
tki_on_phase(void (*fn)(void *arg, enum tki_phase phase), void *arg)
{
	int i = atomic_fetch_add(&nhooks, 1);
	if (i >= MAX_HOOKS) {
		atomic_fetch_sub(&nhooks, 1);
		return;
	}
	hooks[i].arg = arg;
	hooks[i].fn = fn;
}

/* Phase changes are rare (once per occurrence at most), and a source
 * that enables collection for the warmup must know at once: the hooks
 * run on the thread that changed the phase. */
void
tki_capture_notify(void)
{
	if (!atomic_exchange(&phase_changed, 0))
		return;
	enum tki_phase p = (enum tki_phase)atomic_load(&tki_phase);
	int n = atomic_load(&nhooks);
	for (int i = 0; i < n && i < MAX_HOOKS; i++)
		if (hooks[i].fn)
			hooks[i].fn(hooks[i].arg, p);
}
