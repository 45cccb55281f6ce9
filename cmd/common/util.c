/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heap.h"
#include "support.h"
#include "util.h"

/* The command's name, for messages: set once by cmd_init(), before any
 * thread starts. */
static const char *program_name = "tracekit";

const char *
cmd_name(void)
{
	return program_name;
}

void
cmd_init(const char *name)
{
	program_name = name;
	cmd_heap_init();
	opterr = 0; /* cmd_bad_option() words the message */
	signal(SIGPIPE, SIG_IGN);
}

/* Where this thread's warnings go; NULL: stderr (cmd_warn_to). */
static _Thread_local FILE *warn_to;

void
cmd_warn_to(FILE *f)
{
	warn_to = f;
}

static void vwarn(FILE *out, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void
vwarn(FILE *out, const char *fmt, va_list ap)
{
	if (out == stderr)
		fflush(stdout);
	fprintf(out, "%s: ", program_name);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
}

void
cmd_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(warn_to ? warn_to : stderr, fmt, ap);
	va_end(ap);
}

void
cmd_die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* the process ends: this goes out now, whoever says it */
	vwarn(stderr, fmt, ap);
	va_end(ap);
	exit(status);
}

void
cmd_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", program_name);
	exit(EXIT_USAGE);
}

void
cmd_bad_option(int c, char **argv)
{
	if (c == ':')
		cmd_usage_error("option '%s' needs a value", argv[optind - 1]);
	if (optopt)
		cmd_usage_error("unknown option '-%c'", optopt);
	cmd_usage_error("unknown option '%s'", argv[optind - 1]);
}

void
cmd_version(void)
{
	printf("%s (tracekit) %s\n", program_name, tk_version());
	exit(cmd_finish(0));
}

/* Why writing to f failed, once ferror(f) is set.  stdio keeps no errno,
 * and it drops its buffer when a write fails: flushing again tells why
 * only if something was buffered since.  When nothing was (the last
 * write was the one that failed), ask the descriptor: a pipe whose
 * reader is gone polls POLLERR, and a write of nothing reports a closed
 * descriptor or a full device. */
static int
output_errno(FILE *f)
{
	errno = 0;
	if (fflush(f) != 0 && errno)
		return errno;
	int fd = fileno(f);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		return EBADF;
	if (S_ISFIFO(st.st_mode)) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
			return EPIPE;
	}
	if (write(fd, "", 0) < 0)
		return errno;
	return EIO;
}

int
cmd_output_error(FILE *f)
{
	return ferror(f) ? output_errno(f) : 0;
}

void
cmd_output_failed(int e)
{
	if (e == EPIPE)
		exit(0);
	fprintf(stderr, "%s: write error: %s\n", program_name, strerror(e));
	exit(EXIT_USAGE);
}

void
cmd_check_output(FILE *f)
{
	int e = cmd_output_error(f);
	if (e)
		cmd_output_failed(e);
}

int
cmd_finish(int status)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = errno ? errno : output_errno(stdout);
		if (e == EPIPE)
			return status;
		fprintf(stderr, "%s: write error: %s\n", program_name, strerror(e));
		return EXIT_USAGE;
	}
	return status;
}

/* ---- option values ---------------------------------------------------------- */

/* strtod() limited to plain decimal text: digits, a point, an exponent.
 * strtod() alone also takes leading spaces and signs, hexadecimal,
 * "inf" and "nan".  Returns 0 with *v and *end set, or -1. */
static int
parse_decimal(const char *s, double *v, char **end)
{
	if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
		return -1;
	errno = 0;
	double x = strtod(s, end);
	if (*end == s || errno || !isfinite(x))
		return -1;
	for (const char *p = s; p < *end; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' ||
		      *p == 'E' || *p == '+' || *p == '-'))
			return -1;
	*v = x;
	return 0;
}

int
cmd_parse_duration(const char *s, int64_t *ns)
{
	static const struct { const char *suffix; double scale; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "µs", 1e3 }, { "ms", 1e6 },
		{ "s", 1e9 }, { "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 },
		{ "", 1e9 },
	};
	char *end;
	double v;
	if (parse_decimal(s, &v, &end) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		double t = v * units[i].scale;
		if (t >= 9.2e18)
			return -1;
		*ns = (int64_t)llround(t);
		return 0;
	}
	return -1;
}

int
cmd_parse_offset(const char *s, int64_t *ns)
{
	if (!s)
		return -1;
	int neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (cmd_parse_duration(s, ns) < 0)
		return -1;
	if (neg)
		*ns = -*ns;
	return 0;
}

int
cmd_parse_uint(const char *s, uint64_t *v)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

int
cmd_parse_size(const char *s, size_t *bytes)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	}
	if (shift && *++end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (errno || *end || v > (CMD_SIZE_MAX >> shift))
		return -1;
	*bytes = (size_t)(v << shift);
	return 0;
}

/* A finite number >= 0 (> 0 when `positive`), optionally followed by
 * one `suffix` character; 0, or -1 when malformed. */
static int
parse_number(const char *s, char suffix, int positive, double *v)
{
	char *end;
	double x;
	if (parse_decimal(s, &x, &end) < 0 || x < 0 || (positive && x == 0))
		return -1;
	if (*end == suffix || (suffix == 'x' && *end == 'X'))
		end++;
	if (*end)
		return -1;
	*v = x;
	return 0;
}

int
cmd_parse_percent(const char *s, double *fraction)
{
	double v;
	if (parse_number(s, '%', 0, &v) < 0)
		return -1;
	*fraction = v / 100.0;
	return 0;
}

int
cmd_parse_factor(const char *s, double *v)
{
	return parse_number(s, 'x', 1, v);
}

/* ---- units ----------------------------------------------------------------------- */

void *
cmd_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		cmd_die(EXIT_USAGE, "out of memory");
	return q;
}

char *
cmd_xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d)
		cmd_die(EXIT_USAGE, "out of memory");
	return d;
}

long long
cmd_ns_int(double ns)
{
	if (!(ns == ns))
		return 0;
	if (ns >= 9.2e18)
		return INT64_MAX;
	if (ns <= -9.2e18)
		return INT64_MIN;
	return llround(ns);
}

char *
cmd_fmt_duration(char *buf, size_t n, int64_t ns)
{
	double a = fabs((double)ns);
	if (a < 1e3)
		snprintf(buf, n, "%" PRId64 " ns", ns);
	else if (a < 1e6)
		snprintf(buf, n, "%.3f us", (double)ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", (double)ns / 1e9);
	return buf;
}

char *
cmd_fmt_bytes(char *buf, size_t n, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned u = 0;
	double a = fabs(bytes);
	while (a >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		a /= 1024;
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%.0f B", bytes);
	else
		snprintf(buf, n, "%.2f %s", bytes, units[u]);
	return buf;
}

char *
cmd_fmt_rate(char *buf, size_t n, double bytes_per_s)
{
	/* bandwidth is quoted in decimal GB/s by GPU vendors */
	double a = fabs(bytes_per_s);
	if (a >= 1e9)
		snprintf(buf, n, "%.2f GB/s", bytes_per_s / 1e9);
	else if (a >= 1e6)
		snprintf(buf, n, "%.2f MB/s", bytes_per_s / 1e6);
	else if (a >= 1e3)
		snprintf(buf, n, "%.2f kB/s", bytes_per_s / 1e3);
	else
		snprintf(buf, n, "%.0f B/s", bytes_per_s);
	return buf;
}

/* ---- readers ------------------------------------------------------------------------ */

const char *
cmd_display_path(const char *path)
{
	return strcmp(path, "-") == 0 ? "(stdin)" : path;
}

void
cmd_reader_error(const char *path, const struct tk_reader *r)
{
	cmd_warn("%s: %s", cmd_display_path(path), tk_reader_error(r));
}

struct tk_reader *
cmd_new_reader(unsigned flags)
{
	struct tk_reader *r = tk_reader_new();
	if (!r)
		cmd_die(EXIT_USAGE, "out of memory");
	/* Args are JSON text, decoded (templates expanded) per event: a
	 * good part of reading an imported trace, wasted on a command that
	 * only sums times. */
	struct tk_reader_options o = TK_READER_OPTIONS_INIT;
	o.no_args = (flags & CMD_READ_NO_ARGS) != 0;
	tk_reader_set_options(r, &o);
	return r;
}

int
cmd_writer_threads(const char *env)
{
	const char *v = getenv(env);
	if (v && *v) {
		uint64_t n;
		if (cmd_parse_uint(v, &n) < 0)
			cmd_die(EXIT_USAGE, "invalid %s '%s'", env, v);
		return n > INT_MAX ? INT_MAX : (int)n; /* the writer caps it */
	}
	/* Deflating a chunk takes about twice as long as making it: two
	 * compressing threads keep up with the writer's, a third and a
	 * fourth with a merge of many inputs, whose reading threads want
	 * cores too.  Two even on two cores: a second chunk in flight
	 * spares the writer's thread a wait (trace-merge 3 % faster). */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores <= 1)
		return 0;
	return cores / 2 > 4 ? 4 : cores / 2 < 2 ? 2 : (int)(cores / 2);
}

struct tk_reader *
cmd_open_reader(const char *path)
{
	return cmd_open_reader_flags(path, 0);
}

struct tk_reader *
cmd_open_reader_flags(const char *path, unsigned flags)
{
	struct tk_reader *r = cmd_new_reader(flags);
	if (tk_reader_open_path(r, path) != TK_OK) {
		cmd_reader_error(path, r);
		tk_reader_free(r);
		return NULL;
	}
	return r;
}

char *
cmd_track_desc(char *buf, size_t n, const struct tk_reader *r,
               const struct tk_track *t)
{
	const struct tk_track *p;
	const struct tk_device *d;
	switch (t->type) {
	case TK_TRACK_PROCESS:
		snprintf(buf, n, "pid %" PRId64, t->u.process.pid);
		break;
	case TK_TRACK_THREAD:
		p = tk_reader_track(r, t->u.thread.process);
		if (p && p->type == TK_TRACK_PROCESS)
			snprintf(buf, n, "pid %" PRId64 "/tid %" PRId64 "%s%s%s",
			         p->u.process.pid, t->u.thread.tid,
			         *t->u.thread.name ? " (" : "", t->u.thread.name,
			         *t->u.thread.name ? ")" : "");
		else
			snprintf(buf, n, "tid %" PRId64, t->u.thread.tid);
		break;
	case TK_TRACK_STREAM:
		d = tk_reader_device(r, t->u.stream.device);
		if (d)
			snprintf(buf, n, "GPU %u stream %" PRIu64 "%s%s%s", d->index,
			         t->u.stream.stream, *t->u.stream.name ? " (" : "",
			         t->u.stream.name, *t->u.stream.name ? ")" : "");
		else
			snprintf(buf, n, "stream %" PRIu64 "%s%s%s", t->u.stream.stream,
			         *t->u.stream.name ? " (" : "", t->u.stream.name,
			         *t->u.stream.name ? ")" : "");
		break;
	case TK_TRACK_COUNTER:
		snprintf(buf, n, "counter %s", t->u.counter.name);
		break;
	default:
		snprintf(buf, n, "track %u", t->id);
		break;
	}
	return buf;
}

/* ---- UTF-8 ------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (RFC 3629), 0 if invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t left)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t n;
	uint32_t min, cp;
	if ((c & 0xe0) == 0xc0) { n = 2; min = 0x80; cp = c & 0x1f; }
	else if ((c & 0xf0) == 0xe0) { n = 3; min = 0x800; cp = c & 0x0f; }
	else if ((c & 0xf8) == 0xf0) { n = 4; min = 0x10000; cp = c & 0x07; }
	else return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* cmd_utf8()'s buffer: one per thread, as trace-diff imports its two
 * inputs on two threads at once (a shared static buffer let one thread
 * overwrite the string the other was about to copy).  A pthread key
 * rather than _Thread_local so that a thread's buffer is freed when the
 * thread ends (LeakSanitizer reports what a dead thread's TLS held). */
struct utf8_buf {
	char *p;
	size_t cap;
};

static pthread_once_t utf8_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t utf8_key;
static int utf8_key_ok;

static void
utf8_buf_free(void *v)
{
	struct utf8_buf *b = v;
	free(b->p);
	free(b);
}

static void
utf8_key_make(void)
{
	utf8_key_ok = pthread_key_create(&utf8_key, utf8_buf_free) == 0;
}

static struct utf8_buf *
utf8_buf(void)
{
	pthread_once(&utf8_key_once, utf8_key_make);
	if (!utf8_key_ok)
		cmd_die(EXIT_USAGE, "cannot make a thread-local buffer");
	struct utf8_buf *b = pthread_getspecific(utf8_key);
	if (!b) {
		if (!(b = calloc(1, sizeof(*b))) || pthread_setspecific(utf8_key, b) != 0)
			cmd_die(EXIT_USAGE, "out of memory");
	}
	return b;
}

const char *
cmd_utf8(const char *s, size_t len, size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		size_t k = utf8_seq(u + i, len - i);
		if (!k || (u[i] == 0))
			break;
		i += k;
	}
	if (i == len) {
		*out_len = len;
		return s;
	}
	/* worst case: every byte becomes the 3-byte U+FFFD */
	struct utf8_buf *tb = utf8_buf();
	char *buf = tkp_grow(tb->p, &tb->cap, len * 3 + 1, 1);
	if (!buf)
		cmd_die(EXIT_USAGE, "out of memory");
	tb->p = buf;
	memcpy(buf, s, i);
	size_t o = i;
	while (i < len) {
		size_t k = utf8_seq(u + i, len - i);
		if (k && u[i] != 0) {
			memcpy(buf + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	buf[o] = 0;
	*out_len = o;
	return buf;
}

unsigned
cmd_kind_from_name(const char *name)
{
	unsigned k = tk_kind_from_name(name);
	size_t n = strlen(name);
	char one[64];
	if (k || n < 2 || n >= sizeof(one))
		return k;
	/* "processes", then "kernels" */
	for (size_t cut = 2; cut >= 1; cut--) {
		if (n > cut && strcmp(name + n - cut, cut == 2 ? "es" : "s") == 0) {
			memcpy(one, name, n - cut);
			one[n - cut] = 0;
			if ((k = tk_kind_from_name(one)))
				return k;
		}
	}
	return 0;
}

void
cmd_no_input_tty(int noperands, const char *synopsis)
{
	if (noperands > 0 || !isatty(0))
		return;
	fprintf(stderr, "Usage: %s %s\n", program_name, synopsis);
	cmd_usage_error("no input: give a FILE, or pipe a trace into standard input");
}
