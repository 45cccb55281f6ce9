/* SPDX-License-Identifier: MIT */
/*
 * A tiny TAP producer for unit tests.  Each TEST() is one TAP test; it
 * fails if any CHECK() in it fails.  Failures print file:line and the
 * expression to stderr, so a failing test says what went wrong.
 *
 *   TEST(varint_roundtrip) { CHECK(x == 1); }
 *   int main(void) { RUN(varint_roundtrip); return tap_done(); }
 */
#ifndef TK_TAP_H
#define TK_TAP_H

#include <inttypes.h>
#include <stdio.h>

static int tap_count, tap_failed, tap_current_failed;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "# %s:%d: CHECK(%s) failed\n",       \
			        __FILE__, __LINE__, #cond);                  \
			tap_current_failed = 1;                              \
		}                                                            \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                   \
	do {                                                                 \
		long long va_ = (long long)(a), vb_ = (long long)(b);        \
		if (va_ != vb_) {                                            \
			fprintf(stderr, "# %s:%d: %s == %s failed: "         \
			        "%lld != %lld\n", __FILE__, __LINE__, #a,    \
			        #b, va_, vb_);                               \
			tap_current_failed = 1;                              \
		}                                                            \
	} while (0)

#define CHECK_STR(a, b)                                                      \
	do {                                                                 \
		const char *sa_ = (a), *sb_ = (b);                           \
		if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                 \
			fprintf(stderr, "# %s:%d: %s == %s failed: "         \
			        "\"%s\" != \"%s\"\n", __FILE__, __LINE__,    \
			        #a, #b, sa_ ? sa_ : "(null)",                \
			        sb_ ? sb_ : "(null)");                       \
			tap_current_failed = 1;                              \
		}                                                            \
	} while (0)

#define RUN(name)                                                            \
	do {                                                                 \
		tap_current_failed = 0;                                      \
		name();                                                      \
		tap_count++;                                                 \
		if (tap_current_failed)                                      \
			tap_failed++;                                        \
		printf("%sok %d - %s\n", tap_current_failed ? "not " : "",   \
		       tap_count, #name);                                    \
		fflush(stdout);                                              \
	} while (0)

static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
