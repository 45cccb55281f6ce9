/* SPDX-License-Identifier: MIT */
/*
 * Appendable byte buffers and the number formats of trace-to-chrome.
 * Integers and microseconds are written by hand: they are most of the
 * bytes of a Chrome trace and printf would be the slowest part.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "chrome.h"
#include "common/util.h"
#include "support.h"

void
sb_grow(struct sbuf *b, size_t n)
{
	size_t want = b->len + n;
	if (want < b->len)
		cmd_die(EXIT_USAGE, "out of memory");
	char *p = tkp_grow(b->p, &b->cap, want < 256 ? 256 : want, 1);
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	b->p = p;
}

void *
chrome_grow(void *items, size_t *cap, size_t need, size_t size)
{
	void *p = tkp_grow_zeroed(items, cap, need, size);
	if (!p)
		cmd_die(EXIT_USAGE, "out of memory");
	return p;
}

void
sb_free(struct sbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

void
sb_u64(struct sbuf *b, uint64_t v)
{
	/* two digits per division: integers are most of the output */
	char tmp[24];
	int i = sizeof(tmp);
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;
		v /= 100;
		tmp[--i] = digit_pairs[d + 1];
		tmp[--i] = digit_pairs[d];
	}
	if (v >= 10) {
		tmp[--i] = digit_pairs[v * 2 + 1];
		tmp[--i] = digit_pairs[v * 2];
	} else {
		tmp[--i] = (char)('0' + v);
	}
	sb_mem(b, tmp + i, sizeof(tmp) - (size_t)i);
}

void
sb_i64(struct sbuf *b, int64_t v)
{
	if (v < 0) {
		sb_ch(b, '-');
		sb_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		sb_u64(b, (uint64_t)v);
	}
}

void
sb_us(struct sbuf *b, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	if (ns < 0)
		sb_ch(b, '-');
	sb_u64(b, a / 1000);
	unsigned frac = (unsigned)(a % 1000);
	if (!frac)
		return;
	char d[4] = { '.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
	              (char)('0' + frac % 10) };
	size_t n = 4;
	while (d[n - 1] == '0')
		n--;
	sb_mem(b, d, n);
}

void
sb_dbl(struct sbuf *b, double v)
{
	char tmp[32];
	if (!isfinite(v)) {
		sb_lit(b, "null");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		sb_i64(b, (int64_t)v);
		return;
	}
	int n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	sb_mem(b, tmp, (size_t)n);
}

/* p significant digits r, the first at decimal exponent x, as %.{p}g
 * writes them in fixed notation (trailing zeros and a bare point
 * dropped), into out: its length, or 0 where %g would write an exponent
 * instead. */
static size_t
put_fixed(const char *r, int p, int x, int neg, char out[40])
{
	if (x < -4 || x >= p)
		return 0;
	int k = p; /* the digits left once trailing zeros go */
	while (k > 1 && r[k - 1] == '0')
		k--;
	size_t n = 0;
	if (neg)
		out[n++] = '-';
	if (x >= 0) {
		memcpy(out + n, r, (size_t)x + 1);
		n += (size_t)x + 1;
		if (k > x + 1) {
			out[n++] = '.';
			memcpy(out + n, r + x + 1, (size_t)(k - x - 1));
			n += (size_t)(k - x - 1);
		}
	} else {
		out[n++] = '0';
		out[n++] = '.';
		for (int z = 0; z < -x - 1; z++)
			out[n++] = '0';
		memcpy(out + n, r, (size_t)k);
		n += (size_t)k;
	}
	out[n] = 0;
	return n;
}

/* The 17 digits dig (the first at exponent x) of a value rounded to p
 * digits and written as %.{p}g would (put_fixed), or 0 where only
 * printf can tell: the digits dropped are exactly half a unit (the
 * value's own further digits decide), or %g would write an exponent. */
static size_t
round_digits(const char dig[17], int x, int p, int neg, char out[40])
{
	int cmp = 0; /* the dropped digits against 5000... */
	for (int i = p; i < 17 && !cmp; i++)
		cmp = dig[i] - (i == p ? '5' : '0');
	if (cmp == 0)
		return 0;
	char r[17];
	memcpy(r, dig, (size_t)p);
	if (cmp > 0) {
		int i = p - 1;
		while (i >= 0 && r[i] == '9')
			r[i--] = '0';
		if (i < 0) {
			r[0] = '1';
			x++;
		} else {
			r[i]++;
		}
	}
	return put_fixed(r, p, x, neg, out);
}

void
sb_dbl_exact(struct sbuf *b, double v)
{
	if (!isfinite(v) || v == 0) {
		sb_dbl(b, v);
		return;
	}
	/* one printf of 17 digits instead of one per precision tried: the
	 * 15- and 16-digit texts are those digits rounded (unless that
	 * rounding is a tie, which only the value's further digits decide) */
	char e[40], num[40];
	int neg = v < 0;
	snprintf(e, sizeof(e), "%.16e", v); /* [-]d.dddddddddddddddde[+-]xx */
	const char *m = e + neg;
	char dig[17];
	dig[0] = m[0];
	memcpy(dig + 1, m + 2, 16);
	int x = atoi(m + 19);
	for (int p = 15; p <= 17; p++) {
		size_t n = p < 17 ? round_digits(dig, x, p, neg, num)
		                  : put_fixed(dig, 17, x, neg, num);
		if (!n)
			n = (size_t)snprintf(num, sizeof(num), "%.*g", p, v);
		if (p == 17 || strtod(num, NULL) == v) {
			sb_mem(b, num, n);
			return;
		}
	}
}

void
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sb_grow(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}
