/* SPDX-License-Identifier: MIT */
/*
 * Helpers every command shares: messages, exit statuses, option values,
 * human-readable units, output handling.  Never installed.
 *
 * Exit statuses of the reading commands (documented in each man page):
 *   0  success
 *   1  an input could not be read completely (missing, not a trace,
 *      truncated, corrupt); whatever could be read was still processed
 *   2  usage error, or output could not be written
 */
#ifndef TK_CMD_UTIL_H
#define TK_CMD_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "tracekit.h"

#define EXIT_BADINPUT 1
#define EXIT_USAGE 2

/* Name used in messages ("trace-dump"). */
const char *cmd_name(void);

/* Set the program name and ignore SIGPIPE: a closed output pipe is
 * noticed as EPIPE and ends the command quietly (cmd_check_output). */
void cmd_init(const char *name);

/* "trace-dump: message" on stderr. */
void cmd_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The calling thread's cmd_warn() messages go to f until it is reset
 * with NULL: work done in another thread can then hand its messages
 * over to be printed in order.  cmd_die() always writes to stderr. */
void cmd_warn_to(FILE *f);
_Noreturn void cmd_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Message plus "Try 'trace-dump --help'.", exit 2. */
_Noreturn void cmd_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* For getopt_long() returning '?' or ':' (optstring starting with ':'):
 * name the bad option, exit 2. */
_Noreturn void cmd_bad_option(int c, char **argv);
/* "trace-dump (tracekit) 0.1.0" on stdout, exit 0. */
_Noreturn void cmd_version(void);

/* If writing to `f` has failed: exit 0 quietly on EPIPE (the reader went
 * away, as with `| head`), else report and exit 2. */
void cmd_check_output(FILE *f);
/* The same in two steps, for a command that must first stop its
 * threads: the errno of a failed write to `f`, or 0; then the exit. */
int cmd_output_error(FILE *f);
_Noreturn void cmd_output_failed(int e);
/* Flush and close stdout at the end, with the same rules; returns
 * `status` when all went well. */
int cmd_finish(int status);

/* Option values.  Each returns 0, or -1 for a malformed value. */
/* Numbers are plain decimal text: no spaces, signs (but the offset's),
 * hexadecimal, "inf" or "nan". */
/* Duration: "10ms", "1.5s", "250us", "100ns", "2m", "1h", or a plain
 * number of seconds.  Negative values are refused. */
int cmd_parse_duration(const char *s, int64_t *ns);
/* A signed duration, for shifting times: "-1.5ms", "+2s", "250us". */
int cmd_parse_offset(const char *s, int64_t *ns);
/* Non-negative integer that fits in uint64_t. */
int cmd_parse_uint(const char *s, uint64_t *v);
/* Bytes: "1048576", or a number with a binary multiple k, M, G or T in
 * either case, optionally followed by "iB" or "B" ("64M", "64MiB",
 * "512k"); at most CMD_SIZE_MAX. */
#define CMD_SIZE_MAX (1ull << 44)
int cmd_parse_size(const char *s, size_t *bytes);
/* An event kind by name (tk_kind_from_name()), also spelt as the
 * trace-stats reports are, in the plural ("kernels", "processes",
 * "memops" is no kind); 0 if unknown. */
unsigned cmd_kind_from_name(const char *name);
/* A reading command given no FILE: when standard input is a terminal, a
 * first try rather than a pipe, print the synopsis and a usage error
 * (exit 2) instead of waiting for binary input that looks like a hang. */
void cmd_no_input_tty(int noperands, const char *synopsis);
/* "5%" or "5" (percent) → 0.05. */
int cmd_parse_percent(const char *s, double *fraction);
/* Positive finite decimal number ("3", "1.5", "2x"). */
int cmd_parse_factor(const char *s, double *v);

/* Memory or exit (status 2, "out of memory"): realloc of n bytes (0 is
 * 1), and a copy of s (NULL is ""). */
void *cmd_xrealloc(void *p, size_t n);
char *cmd_xstrdup(const char *s);

/* A nanosecond figure as an integer for the outputs: rounded, NaN as 0,
 * clamped to the int64 range. */
long long cmd_ns_int(double ns);

/* Human-readable units into buf (at least 32 bytes). */
char *cmd_fmt_duration(char *buf, size_t n, int64_t ns);
char *cmd_fmt_bytes(char *buf, size_t n, double bytes);
char *cmd_fmt_rate(char *buf, size_t n, double bytes_per_s);

/* Open `path` ("-" = stdin) for reading, reporting failures as
 * "cmd: path: message".  Returns NULL after reporting. */
struct tk_reader *cmd_open_reader(const char *path);
/* What a command asks of its readers (cmd_new_reader()). */
#define CMD_READ_NO_ARGS 0x1u /* never looks at tk_event.args: the reader
                                 skips decoding them */
/* A new reader with `flags` (CMD_READ_*); exits on out of memory.  The
 * threads are the library's default (TK_THREADS, else the cores). */
struct tk_reader *cmd_new_reader(unsigned flags);
/* The threads that compress a command's output (tk_writer_options.
 * threads), from the environment variable `env` where set: 0 none (the
 * command's thread compresses), N that many; unset, one for each two
 * processors, at least 2 and at most 4 (a machine of one processor:
 * none).  A value that is not a number is a usage error. */
int cmd_writer_threads(const char *env);
/* cmd_open_reader() with `flags`. */
struct tk_reader *cmd_open_reader_flags(const char *path, unsigned flags);
/* Report a reader error for `path` (one line). */
void cmd_reader_error(const char *path, const struct tk_reader *r);
/* Path for messages: "-" is shown as "(stdin)". */
const char *cmd_display_path(const char *path);

/* Describe a track for people: "pid 12/tid 14 (main)", "GPU 0 stream 7". */
char *cmd_track_desc(char *buf, size_t n, const struct tk_reader *r,
                     const struct tk_track *t);

/* A JSON-safe copy of arbitrary bytes: invalid UTF-8 sequences become
 * U+FFFD, so jansson accepts the string.  Returns s itself when it is
 * valid already, else a pointer into a buffer of the calling thread,
 * valid until its next call (threads may call it at once). */
const char *cmd_utf8(const char *s, size_t len, size_t *out_len);

#endif
