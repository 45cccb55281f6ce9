/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the option values every command parses (cmd/common/util.c:
 * durations, offsets, counts, sizes, percentages, factors), the units
 * they are printed in, and cmd_utf8(), on arbitrary bytes.  Not only
 * crashes: each parser is checked against an independent reading of
 * its grammar (cmd/common/util.h), and what it accepts against the limits it
 * promises, so that a value is never taken wrong silently.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                       \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: %s fails on \"%s\"\n",     \
			        __FILE__, __LINE__, #cond, s);              \
			abort();                                            \
		}                                                           \
	} while (0)

static int
digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Leading digits of s as a number; -1 if none or too many for uint64. */
static int
digits(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	if (!digit(*s))
		return -1;
	for (; digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*p = s;
	*v = x;
	return 0;
}

static void
check_uint(const char *s)
{
	uint64_t got = 0, want = 0;
	const char *p = s;
	int ok = digits(&p, &want) == 0 && *p == 0;
	int rc = cmd_parse_uint(s, &got);
	REQUIRE((rc == 0) == ok);
	REQUIRE(!ok || got == want);
}

static void
check_size(const char *s)
{
	uint64_t v = 0;
	const char *p = s;
	unsigned shift = 0;
	int ok = digits(&p, &v) == 0;
	if (ok && *p && strchr("kKmMgGtT", *p)) {
		shift = *p == 'k' || *p == 'K' ? 10 : *p == 'm' || *p == 'M' ? 20
		      : *p == 'g' || *p == 'G' ? 30 : 40;
		p++;
		if (*p == 'i')
			p++;
	}
	if (ok && (*p == 'B' || *p == 'b'))
		p++;
	ok = ok && *p == 0 && v <= (CMD_SIZE_MAX >> shift);
	size_t got = 0;
	int rc = cmd_parse_size(s, &got);
	REQUIRE((rc == 0) == ok);
	REQUIRE(!ok || (got == (size_t)(v << shift) && got <= CMD_SIZE_MAX));
}

/* Does s hold only plain decimal text before its unit? */
static int
plain_decimal(const char *s, const char *end)
{
	if (s == end || !(digit(*s) || *s == '.'))
		return 0;
	for (; s < end; s++)
		if (!(digit(*s) || strchr(".eE+-", *s)))
			return 0;
	return 1;
}

static void
check_duration(const char *s)
{
	int64_t ns = -1;
	if (cmd_parse_duration(s, &ns) < 0)
		return;
	REQUIRE(ns >= 0 && ns <= (int64_t)9.2e18);
	/* the number, then one of the units, or none */
	const char *u = s;
	while (*u && (digit(*u) || strchr(".eE+-", *u)))
		u++;
	REQUIRE(plain_decimal(s, u));
	/* printed in ns, it reads back the same */
	char again[32];
	int64_t ns2 = -1;
	snprintf(again, sizeof(again), "%" PRId64 "ns", ns);
	REQUIRE(cmd_parse_duration(again, &ns2) == 0 && ns2 == ns);
	/* a whole number of ns is exact */
	uint64_t v;
	const char *p = s;
	if (digits(&p, &v) == 0 && strcmp(p, "ns") == 0 && v < (1ull << 53))
		REQUIRE(ns == (int64_t)v);
}

static void
check_offset(const char *s)
{
	int64_t off = 0, d = 0;
	int rc = cmd_parse_offset(s, &off);
	const char *rest = *s == '-' || *s == '+' ? s + 1 : s;
	int drc = cmd_parse_duration(rest, &d);
	REQUIRE((rc == 0) == (drc == 0));
	REQUIRE(rc < 0 || off == (*s == '-' ? -d : d));
}

static void
check_numbers(const char *s)
{
	double v = -1;
	if (cmd_parse_percent(s, &v) == 0)
		REQUIRE(isfinite(v) && v >= 0);
	v = -1;
	if (cmd_parse_factor(s, &v) == 0)
		REQUIRE(isfinite(v) && v > 0);
}

static void
check_units(const uint8_t *data, size_t size)
{
	int64_t i = 0;
	double d = 0;
	memcpy(&i, data, size < sizeof(i) ? size : sizeof(i));
	memcpy(&d, data, size < sizeof(d) ? size : sizeof(d));
	char b[32];
	const char *s = "(units)";
	REQUIRE(strlen(cmd_fmt_duration(b, sizeof(b), i)) > 0);
	REQUIRE(strlen(cmd_fmt_bytes(b, sizeof(b), d)) > 0);
	REQUIRE(strlen(cmd_fmt_rate(b, sizeof(b), d)) > 0);
}

/* cmd_utf8() gives what jansson takes, and valid input back as it is. */
static void
check_utf8(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *s = "(utf8)";
	size_t n;
	const char *out = cmd_utf8(in, size, &n);
	REQUIRE(memchr(out, 0, n) == NULL);
	json_t *j = json_stringn(out, n);
	REQUIRE(j != NULL);
	json_decref(j);
	j = json_stringn(in, size);
	if (j && !memchr(in, 0, size))
		REQUIRE(out == in && n == size);
	json_decref(j);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;  /* up to the first NUL, as argv gives it */
	check_uint(s);
	check_size(s);
	check_duration(s);
	check_offset(s);
	check_numbers(s);
	check_units(data, size);
	check_utf8(data, size);
	free(s);
	return 0;
}
