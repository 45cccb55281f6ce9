/* SPDX-License-Identifier: MIT */
/*
 * trace-merge's inputs.  Files are scanned (chunk headers only) so that
 * concatenated traces are read as separate inputs and the merge knows
 * how far each chunk still to come goes back.  Streams are read as they
 * come, or copied to a temporary file first when they must be read
 * twice (alignment).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source.h"
#include "common/util.h"
#include "import/autoread.h"

#define COPY_BLOCK (1u << 20)

/* Copy the stream to an unlinked temporary file, which replaces it. */
static int
spool(struct merge_source *s, const char *tmpdir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/trace-merge-XXXXXX", tmpdir);
	int tmp = mkstemp(path);
	if (tmp < 0) {
		cmd_warn("cannot create a temporary file in %s: %s", tmpdir,
		         strerror(errno));
		return EXIT_USAGE;
	}
	unlink(path);
	char *buf = malloc(COPY_BLOCK);
	if (!buf)
		cmd_die(EXIT_USAGE, "out of memory");
	uint64_t copied = 0;
	int status = 0;
	for (;;) {
		ssize_t k = read(s->fd, buf, COPY_BLOCK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			cmd_warn("%s: read error at byte %llu: %s", s->name,
			         (unsigned long long)copied, strerror(errno));
			status = EXIT_BADINPUT;
			break;
		}
		if (k == 0)
			break;
		for (ssize_t done = 0; done < k;) {
			ssize_t w = write(tmp, buf + done, (size_t)(k - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				cmd_warn("temporary file in %s: %s", tmpdir,
				         strerror(errno));
				free(buf);
				close(tmp);
				return EXIT_USAGE;
			}
			done += w;
		}
		copied += (uint64_t)k;
	}
	free(buf);
	if (s->own_fd)
		close(s->fd);
	s->fd = tmp;
	s->own_fd = 1;
	s->path = NULL; /* cannot be opened again by name */
	if (fstat(tmp, &s->st) < 0)
		cmd_die(EXIT_USAGE, "temporary file: %s", strerror(errno));
	return status;
}

int
merge_source_open(struct merge_source *s, int need_file, const char *tmpdir)
{
	struct autoread in;
	int status = autoread_open(&in, s->path, tmpdir);
	if (status) {
		s->fd = -1;
		return status;
	}
	s->fd = in.fd;
	s->own_fd = in.own_fd;
	if (in.imported) {
		s->path = NULL;  /* its import cannot be opened again by name */
		s->partial = in.partial;
	}
	if (fstat(s->fd, &s->st) < 0) {
		cmd_warn("%s: %s", s->name, strerror(errno));
		return EXIT_BADINPUT;
	}
	if (!S_ISREG(s->st.st_mode)) {
		if (!need_file) {
			s->stream = 1;
			return 0;
		}
		int rc = spool(s, tmpdir);
		if (rc)
			return rc;
	}
	int rc = tk_scan_fd(s->fd, &s->scan);
	if (rc == TK_ENOMEM)
		cmd_die(EXIT_USAGE, "out of memory");
	if (rc) {
		cmd_warn("%s: read error: %s", s->name, strerror(errno));
		return EXIT_BADINPUT;
	}
	return 0;
}

void
merge_source_park(struct merge_source *s)
{
	/* a stream (a named pipe) cannot be opened again: what its writer
	 * wrote in between would be lost, or the open would wait forever */
	if (s->own_fd && s->path && !s->stream && s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
}

int
merge_source_unpark(struct merge_source *s)
{
	if (s->fd >= 0)
		return 0;
	struct stat st;
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		cmd_warn("%s: %s", s->name, strerror(errno));
		return EXIT_BADINPUT;
	}
	if (fstat(s->fd, &st) < 0 || st.st_dev != s->st.st_dev ||
	    st.st_ino != s->st.st_ino || st.st_size != s->st.st_size ||
	    st.st_mtim.tv_sec != s->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != s->st.st_mtim.tv_nsec) {
		cmd_warn("%s: changed while being merged", s->name);
		return EXIT_BADINPUT;
	}
	return 0;
}

void
merge_source_free(struct merge_source *s)
{
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	tk_scan_free(s->scan);
	s->scan = NULL;
	free(s->label);
	s->label = NULL;
	free(s->align_error);
	s->align_error = NULL;
}

size_t
merge_source_traces(const struct merge_source *s)
{
	return s->scan && s->scan->ntraces ? s->scan->ntraces : 1;
}

int
merge_source_reader(const struct merge_source *s, size_t i,
                    struct tk_reader **out)
{
	struct tk_reader *r = tk_reader_new();
	if (!r)
		cmd_die(EXIT_USAGE, "out of memory");
	*out = r;
	if (s->stream)
		return tk_reader_open_fd(r, s->fd, s->name);
	if (!s->scan->ntraces)
		return tk_reader_open_range(r, s->fd, 0, s->scan->size, s->name);
	const struct tk_scan_trace *t = &s->scan->traces[i];
	return tk_reader_open_range(r, s->fd, t->offset, t->length, s->name);
}

/* Why the reader of trace `k` stops before its end (into msg), or NULL
 * when it reads to the end. */
static const char *
damage(const struct merge_source *s, size_t k, char *msg, size_t size)
{
	struct tk_reader *r;
	struct tk_columns c;
	int rc = merge_source_reader(s, k, &r);
	while (rc == TK_OK)
		rc = tk_reader_next_columns(r, &c);
	const char *why = NULL;
	if (rc < 0) {
		snprintf(msg, size, "%s", tk_reader_error(r));
		why = msg;
	}
	tk_reader_free(r);
	return why;
}

int
merge_source_start(const struct merge_source *s, int64_t *t,
                   const char **why)
{
	static char msg[512];
	int found = 0;
	*why = NULL;
	for (size_t i = 0; s->scan && i < s->scan->nchunks; i++) {
		const struct tk_scan_chunk *c = &s->scan->chunks[i];
		if (c->events && (!found || c->t_min < *t)) {
			*t = c->t_min;
			found = 1;
		}
	}
	if (found || !s->scan)
		return found ? 0 : -1;
	/* no events: an empty trace, or one broken before its first event,
	 * which the reader can say more about (the scan stopped short) */
	for (size_t k = 0; k < merge_source_traces(s) && !*why; k++)
		*why = damage(s, k, msg, sizeof(msg));
	return *why ? 1 : -1;
}

static int
is_range_kind(unsigned kind)
{
	return kind == TK_RANGE || kind == TK_ASYNC_RANGE || kind == TK_MARK;
}

/* Earliest begin of range `name` in trace `k` (below *best, which it
 * lowers).  Chunk by chunk, it stops as soon as no chunk still to come
 * begins before the best found.  Returns 0, or 1 with *why set. */
static int
first_range_in(const struct merge_source *s, size_t k, const char *name,
               int64_t *best, int *found, const char **why)
{
	static char msg[512];
	const struct tk_scan_trace *tr = &s->scan->traces[k];
	const struct tk_scan_chunk *ch = s->scan->chunks + tr->first;
	size_t n = tr->nchunks;
	/* from[j]: the earliest begin in chunks j, j+1, ... */
	int64_t *from = malloc((n + 1) * sizeof(*from));
	if (!from)
		cmd_die(EXIT_USAGE, "out of memory");
	from[n] = INT64_MAX;
	for (size_t j = n; j-- > 0;)
		from[j] = ch[j].events && ch[j].t_min < from[j + 1] ? ch[j].t_min
		                                                  : from[j + 1];
	struct tk_reader *r;
	int rc = merge_source_reader(s, k, &r);
	/* by columns: only kind, name and begin are needed */
	struct tk_columns c;
	size_t j = 0;
	while (rc == TK_OK && (rc = tk_reader_next_columns(r, &c)) == TK_OK) {
		uint64_t chunk = tk_reader_chunk(r)->offset;
		while (j < n && ch[j].offset < chunk)
			j++;
		if (*found && j < n && ch[j].offset == chunk && *best <= from[j])
			break;
		for (size_t i = 0; i < c.n; i++)
			if (is_range_kind(c.kind[i]) && (!*found || c.ts[i] < *best) &&
			    strcmp(tk_reader_string(r, c.name_id[i]), name) == 0) {
				*best = c.ts[i];
				*found = 1;
			}
	}
	int status = 0;
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "%s", tk_reader_error(r));
		*why = msg;
		status = 1;
	}
	tk_reader_free(r);
	free(from);
	return status;
}

int
merge_source_first_range(const struct merge_source *s, const char *name,
                         int64_t *t, const char **why)
{
	int found = 0, broken = 0;
	*why = NULL;
	if (!s->scan)
		return -1;
	for (size_t k = 0; k < s->scan->ntraces && !broken; k++)
		broken = first_range_in(s, k, name, t, &found, why);
	if (!s->scan->ntraces) {
		struct tk_reader *r;
		static char msg[512];
		if (merge_source_reader(s, 0, &r)) {
			snprintf(msg, sizeof(msg), "%s", tk_reader_error(r));
			*why = msg;
			broken = 1;
		}
		tk_reader_free(r);
	}
	if (found)
		return 0;
	return broken ? 1 : -1;
}
