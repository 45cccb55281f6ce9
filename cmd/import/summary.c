/* SPDX-License-Identifier: MIT */
/*
 * What trace-import did with each kind of input event, for -v: counts
 * by phase and category, and by what each became.  Nothing is dropped
 * without being counted here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "common/util.h"
#include "support.h"

/* Distinct (phase, category) rows kept; the rest share one row. */
#define MAX_ROWS 200

struct row {
	char *ph, *cat;
	uint64_t n[IMP_OUT_MAX];
};

struct note {
	char *what;
	uint64_t n;
};

struct imp_summary {
	struct row *rows;
	size_t nrows, caprows;
	size_t last;             /* the row found last time */
	struct note *notes;
	size_t nnotes, capnotes;
};

struct imp_summary *
imp_summary_new(void)
{
	struct imp_summary *s = calloc(1, sizeof(*s));
	if (!s)
		cmd_die(EXIT_USAGE, "out of memory");
	return s;
}

void
imp_summary_free(struct imp_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nrows; i++) {
		free(s->rows[i].ph);
		free(s->rows[i].cat);
	}
	for (size_t i = 0; i < s->nnotes; i++)
		free(s->notes[i].what);
	free(s->rows);
	free(s->notes);
	free(s);
}


/* Categories can be anything: print them printable and short. */
static void
print_short(FILE *f, const char *s, int width)
{
	size_t n;
	const char *u = cmd_utf8(s, strnlen(s, 60), &n);
	for (size_t i = 0; i < n; i++)
		fputc((unsigned char)u[i] < 0x20 ? '?' : u[i], f);
	if (strlen(s) > 60)
		fputs("...", f);
	if ((int)n < width)
		fprintf(f, "%*s", width - (int)n, "");
}

void
imp_summary_add(struct imp_summary *s, const char *ph, const char *cat,
                unsigned outcome)
{
	if (outcome >= IMP_OUT_MAX)
		return;
	struct row *r = NULL;
	if (s->last < s->nrows && strcmp(s->rows[s->last].cat, cat) == 0 &&
	    strcmp(s->rows[s->last].ph, ph) == 0)
		r = &s->rows[s->last];
	for (size_t i = s->nrows; !r && i-- > 0;) {
		if (strcmp(s->rows[i].ph, ph) == 0 && strcmp(s->rows[i].cat, cat) == 0) {
			r = &s->rows[i];
			s->last = i;
			break;
		}
	}
	if (!r && s->nrows >= MAX_ROWS) {
		ph = "*";
		cat = "(other categories)";
		for (size_t i = 0; i < s->nrows; i++)
			if (strcmp(s->rows[i].cat, cat) == 0)
				r = &s->rows[i];
	}
	if (!r) {
		struct row *rows = tkp_grow(s->rows, &s->caprows, s->nrows + 1,
		                            sizeof(*rows));
		if (!rows)
			cmd_die(EXIT_USAGE, "out of memory");
		s->rows = rows;
		r = &s->rows[s->nrows++];
		memset(r, 0, sizeof(*r));
		r->ph = cmd_xstrdup(ph);
		r->cat = cmd_xstrdup(cat);
	}
	r->n[outcome]++;
}

void
imp_summary_note(struct imp_summary *s, const char *what, uint64_t n)
{
	if (!n)
		return;
	for (size_t i = 0; i < s->nnotes; i++)
		if (strcmp(s->notes[i].what, what) == 0) {
			s->notes[i].n += n;
			return;
		}
	struct note *nt = tkp_grow(s->notes, &s->capnotes, s->nnotes + 1,
	                           sizeof(*nt));
	if (!nt)
		cmd_die(EXIT_USAGE, "out of memory");
	s->notes = nt;
	s->notes[s->nnotes].what = cmd_xstrdup(what);
	s->notes[s->nnotes++].n = n;
}

static const char *
outcome_name(unsigned o)
{
	switch (o) {
	case IMP_OUT_METADATA: return "metadata (names, labels)";
	case IMP_OUT_PAIRED: return "ends of the above";
	case IMP_OUT_CORRELATED: return "not stored: correlation ids link the ends";
	case IMP_OUT_UNMATCHED_END: return "dropped: end without a begin";
	case IMP_OUT_BAD: return "dropped: could not be read";
	case IMP_OUT_IGNORED: return "not stored (see notes)";
	}
	return o >= 1 && o <= TK_KIND_MAX ? tk_kind_name(o) : "?";
}

static int
cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->ph, y->ph);
	return c ? c : strcmp(x->cat, y->cat);
}

void
imp_summary_print(struct imp_summary *s, FILE *f, const char *name)
{
	fprintf(f, "%s: %s: what became of the events (phase, category: count -> kinds)\n",
	        cmd_name(), name);
	qsort(s->rows, s->nrows, sizeof(*s->rows), cmp_rows);
	for (size_t i = 0; i < s->nrows; i++) {
		const struct row *r = &s->rows[i];
		uint64_t total = 0;
		for (unsigned o = 0; o < IMP_OUT_MAX; o++)
			total += r->n[o];
		fputs("  ", f);
		print_short(f, r->ph, 2);
		fputc(' ', f);
		print_short(f, *r->cat ? r->cat : "(none)", 24);
		fprintf(f, " %9" PRIu64 " ->", total);
		int first = 1;
		for (unsigned o = 1; o < IMP_OUT_MAX; o++) {
			if (!r->n[o])
				continue;
			fprintf(f, "%s %s %" PRIu64, first ? "" : ",", outcome_name(o),
			        r->n[o]);
			first = 0;
		}
		fputc('\n', f);
	}
	if (s->nnotes)
		fprintf(f, "%s: %s: notes\n", cmd_name(), name);
	for (size_t i = 0; i < s->nnotes; i++)
		fprintf(f, "  %s: %" PRIu64 "\n", s->notes[i].what, s->notes[i].n);
}
