/* SPDX-License-Identifier: MIT */
/*
 * Step ranges: matching a --per name as a series, and finding the steps
 * for --steps (steps.h).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "normalize.h"
#include "steps.h"
#include "tracekit.h"

int
step_match_init(struct step_match *m, const char *name)
{
	m->name = strdup(name);
	m->norm = diff_normalize(name);
	if (!m->name || !m->norm) {
		step_match_free(m);
		return -1;
	}
	return 0;
}

void
step_match_free(struct step_match *m)
{
	free(m->name);
	free(m->norm);
	m->name = m->norm = NULL;
}

/* Is norm `base` followed by a numeric suffix ("#N", "_N", ".N", "-N")? */
static int
numbered(const char *norm, const char *base)
{
	size_t n = strlen(base);
	return strncmp(norm, base, n) == 0 && norm[n] && strchr("#_.-", norm[n]) &&
	       strcmp(norm + n + 1, "N") == 0;
}

int
step_match(const struct step_match *m, const char *name)
{
	if (strcmp(name, m->name) == 0)
		return 1;
	char *norm = diff_normalize(name);
	if (!norm)
		return -1;
	int yes = strcmp(norm, m->norm) == 0 || numbered(norm, m->name);
	free(norm);
	return yes;
}

int
step_is_capture(const char *domain)
{
	return strcmp(domain, "Trace") == 0;
}

int
step_kind(const char *domain, const char *name)
{
	static const char *const loops[] = {
		"step", "iteration", "iter", "train_step", "training_step",
	};
	if (step_is_capture(domain))
		return 3;
	char *norm = diff_normalize(name);
	if (!norm)
		return -1;
	int kind = 0;
	if (strcmp(norm, "ProfilerStep#N") == 0)
		kind = 1;
	for (size_t i = 0; !kind && i < sizeof(loops) / sizeof(loops[0]); i++) {
		size_t n = strlen(loops[i]);
		/* in any case; normalize() writes the suffix as "N" */
		if (strncasecmp(norm, loops[i], n) == 0 &&
		    (!norm[n] || (strchr("#_.-", norm[n]) && strcmp(norm + n + 1, "N") == 0)))
			kind = 2;
	}
	free(norm);
	return kind;
}

char *
steps_find(int fd, const char *path)
{
	struct tk_reader *r = cmd_new_reader(CMD_READ_NO_ARGS);
	char *best = NULL;
	int best_kind = 4;
	const struct tk_event *e;
	int rc = tk_reader_open_fd(r, fd, path);
	while (rc == TK_OK && best_kind > 1 &&
	       (rc = tk_reader_next_event(r, &e)) == TK_OK) {
		if (e->kind != TK_RANGE || e->trk->type != TK_TRACK_THREAD)
			continue;
		int k = step_kind(e->u.range.domain, e->name);
		if (k < 0)
			cmd_die(EXIT_USAGE, "out of memory");
		if (k > 0 && k < best_kind) {
			free(best);
			best = cmd_xstrdup(e->name);
			best_kind = k;
		}
	}
	tk_reader_free(r);
	return best;
}
