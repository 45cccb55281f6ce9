/* SPDX-License-Identifier: MIT */
/*
 * Progress lines on a terminal's standard error; see progress.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "util.h"

static int64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void
cmd_progress_start(struct cmd_progress *p, const char *what, uint64_t total)
{
	p->on = isatty(STDERR_FILENO);
	p->shown = 0;
	p->what = what;
	p->total = total;
	p->start = now_ns();
	double after = 1;
	const char *env = getenv("TK_PROGRESS_AFTER");
	if (env && *env) {
		char *end;
		double v = strtod(env, &end);
		if (!*end && v >= 0 && v < 1e6)
			after = v;
	}
	p->next = p->start + (int64_t)(after * 1e9);
}

static void
fmt_bytes(char *b, size_t n, uint64_t v)
{
	if (v >= (uint64_t)1 << 30)
		snprintf(b, n, "%.1f GiB", (double)v / (double)(1u << 30));
	else
		snprintf(b, n, "%.1f MiB", (double)v / (double)(1u << 20));
}

void
cmd_progress(struct cmd_progress *p, uint64_t done)
{
	if (!p->on)
		return;
	int64_t t = now_ns();
	if (t < p->next)
		return;
	p->next = t + 250000000;
	char d[32], all[32];
	double secs = (double)(t - p->start) / 1e9;
	fmt_bytes(d, sizeof(d), done);
	if (p->total) {
		fmt_bytes(all, sizeof(all), p->total);
		fprintf(stderr, "\r%s: %s: %3.0f%% (%s of %s, %.0f s)\033[K", cmd_name(),
		        p->what, 100.0 * (double)done / (double)p->total, d, all, secs);
	} else {
		fprintf(stderr, "\r%s: %s: %s read (%.0f s)\033[K", cmd_name(), p->what,
		        d, secs);
	}
	fflush(stderr);
	p->shown = 1;
}

void
cmd_progress_end(struct cmd_progress *p)
{
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->shown = 0;
	p->on = 0;
}
