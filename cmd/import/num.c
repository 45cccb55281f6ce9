/* SPDX-License-Identifier: MIT */
/*
 * Numbers from their decimal text.  Chrome timestamps are microseconds,
 * often epoch-scale with fractional digits (1712195496004644.183); a
 * double keeps only a quarter of a microsecond there, so they are read
 * digit by digit into integer nanoseconds instead.
 */
#include <limits.h>
#include <string.h>

#include "import.h"

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int
imp_us_to_ns(const char *s, size_t len, int64_t *ns)
{
	const char *p = s, *e = s + len;
	int neg = 0;
	if (p < e && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	/* the significant digits, integer and fraction parts together */
	char dig[40];
	int nd = 0, lost_nonzero = 0;
	long k = 0;              /* value = digits * 10^k microseconds */
	int any = 0;
	for (; p < e && is_digit(*p); p++) {
		any = 1;
		if (nd == 0 && *p == '0')
			continue;
		if (nd < (int)sizeof(dig))
			dig[nd++] = *p;
		else
			k++, lost_nonzero |= *p != '0';
	}
	if (p < e && *p == '.') {
		p++;
		for (; p < e && is_digit(*p); p++) {
			any = 1;
			if (nd == 0 && *p == '0') {
				k--;
				continue;
			}
			if (nd < (int)sizeof(dig)) {
				dig[nd++] = *p;
				k--;
			} else {
				lost_nonzero |= *p != '0';
			}
		}
	}
	if (!any)
		return -1;
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		int eneg = 0;
		if (p < e && (*p == '-' || *p == '+'))
			eneg = *p++ == '-';
		if (p == e || !is_digit(*p))
			return -1;
		long x = 0;
		for (; p < e && is_digit(*p); p++)
			if (x < 100000)
				x = x * 10 + (*p - '0');
		k += eneg ? -x : x;
	}
	if (p != e)
		return -1;
	if (nd == 0) {
		*ns = 0;
		return 0;
	}
	k += 3;                  /* microseconds to nanoseconds */
	/* the integer part has nd + k digits; the next one rounds */
	long nint = nd + k;
	if (nint > 19)
		return -1;
	uint64_t v = 0;
	for (long i = 0; i < nint; i++) {
		int d = i < nd ? dig[i] - '0' : 0;
		if (v > (UINT64_MAX - (uint64_t)d) / 10)
			return -1;
		v = v * 10 + (uint64_t)d;
	}
	if (nint >= 0 && nint < nd && dig[nint] >= '5')
		v++;                 /* half away from zero */
	(void)lost_nonzero;      /* beyond 40 digits: below a nanosecond */
	/* INT64_MIN is out too: tracekit readers refuse it as a time */
	if (v > (uint64_t)INT64_MAX)
		return -1;
	*ns = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

int
imp_parse_u64(const char *s, size_t len, uint64_t *v)
{
	const char *p = s, *e = s + len;
	uint64_t x = 0;
	if (p == e)
		return -1;
	if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		p += 2;
		for (; p < e; p++) {
			int d;
			if (is_digit(*p))
				d = *p - '0';
			else if (*p >= 'a' && *p <= 'f')
				d = *p - 'a' + 10;
			else if (*p >= 'A' && *p <= 'F')
				d = *p - 'A' + 10;
			else
				return -1;
			if (x >> 60)
				return -1;
			x = x << 4 | (uint64_t)d;
		}
		*v = x;
		return 0;
	}
	for (; p < e; p++) {
		if (!is_digit(*p))
			return -1;
		uint64_t d = (uint64_t)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

int
imp_parse_i64(const char *s, size_t len, int64_t *v)
{
	int neg = len > 0 && s[0] == '-';
	uint64_t x;
	if (len > 0 && (s[0] == '-' || s[0] == '+')) {
		s++;
		len--;
	}
	if (len == 0 || !is_digit(s[0]) || imp_parse_u64(s, len, &x) < 0)
		return -1;
	if (len > 1 && (s[1] == 'x' || s[1] == 'X'))
		return -1;   /* hex only as unsigned ids */
	if (neg ? x > (uint64_t)INT64_MAX + 1 : x > (uint64_t)INT64_MAX)
		return -1;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}
