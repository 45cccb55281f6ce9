/* SPDX-License-Identifier: MIT */
/* The option parsers and unit formatters every command shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "common/short_name.h"
#include "common/table.h"
#include "common/util.h"

TEST(durations)
{
	static const struct { const char *s; int64_t ns; } ok[] = {
		{ "10ms", 10000000 }, { "1.5s", 1500000000 }, { "250us", 250000 },
		{ "100ns", 100 }, { "2m", 120000000000ll }, { "1h", 3600000000000ll },
		{ "3", 3000000000ll }, { "0", 0 }, { "0.5", 500000000 },
		{ "1e-3s", 1000000 }, { "1min", 60000000000ll },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int64_t v = -1;
		CHECK(cmd_parse_duration(ok[i].s, &v) == 0);
		CHECK_EQ_INT(v, ok[i].ns);
	}
	static const char *bad[] = { "", "ms", "-1s", "10 ms", "10xs", "nan",
	                             "inf", "1e30s", "10msx", NULL,
	                             /* strtod() takes these, a duration not */
	                             " 5s", "+5s", "0x10s", "0x1p3", "infinity",
	                             "1e-400s" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t v;
		CHECK(cmd_parse_duration(bad[i], &v) < 0);
	}
}

TEST(offsets)
{
	int64_t v;
	CHECK(cmd_parse_offset("-1.5ms", &v) == 0 && v == -1500000);
	CHECK(cmd_parse_offset("+2s", &v) == 0 && v == 2000000000);
	CHECK(cmd_parse_offset("250us", &v) == 0 && v == 250000);
	CHECK(cmd_parse_offset("-0", &v) == 0 && v == 0);
	CHECK(cmd_parse_offset("--1s", &v) < 0);
	CHECK(cmd_parse_offset("-+1s", &v) < 0);
	CHECK(cmd_parse_offset("- 1s", &v) < 0);
	CHECK(cmd_parse_offset("-", &v) < 0);
	CHECK(cmd_parse_offset("-9300000000s", &v) < 0);
}

TEST(sizes)
{
	static const struct { const char *s; uint64_t bytes; } ok[] = {
		{ "0", 0 }, { "1048576", 1048576 }, { "64k", 64 << 10 },
		{ "64K", 64 << 10 }, { "8M", 8 << 20 }, { "8MiB", 8 << 20 },
		{ "8MB", 8 << 20 }, { "8mb", 8 << 20 }, { "2G", 2ull << 30 },
		{ "1T", 1ull << 40 }, { "16T", 16ull << 40 }, { "100B", 100 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t v = 1;
		CHECK(cmd_parse_size(ok[i].s, &v) == 0);
		CHECK_EQ_INT(v, ok[i].bytes);
	}
	static const char *bad[] = { "", "M", "-1", "+1", " 1", "1.5M", "1 M",
	                             "8iB", "8Mi B", "8MBB", "8P", "17T",
	                             "17592186044417", "99999999999999999999k",
	                             "0x10", NULL };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t v;
		CHECK(cmd_parse_size(bad[i], &v) < 0);
	}
}

TEST(numbers)
{
	uint64_t u;
	CHECK(cmd_parse_uint("42", &u) == 0 && u == 42);
	CHECK(cmd_parse_uint("18446744073709551615", &u) == 0 && u == UINT64_MAX);
	CHECK(cmd_parse_uint("18446744073709551616", &u) < 0);
	CHECK(cmd_parse_uint("-1", &u) < 0);
	CHECK(cmd_parse_uint(" 1", &u) < 0);
	CHECK(cmd_parse_uint("1k", &u) < 0);
	double d;
	CHECK(cmd_parse_percent("5%", &d) == 0 && d == 0.05);
	CHECK(cmd_parse_percent("5", &d) == 0 && d == 0.05);
	CHECK(cmd_parse_percent("0.5%", &d) == 0 && d == 0.005);
	CHECK(cmd_parse_percent("5%%", &d) < 0);
	CHECK(cmd_parse_percent("-5%", &d) < 0);
	CHECK(cmd_parse_factor("3", &d) == 0 && d == 3);
	CHECK(cmd_parse_factor("1.5x", &d) == 0 && d == 1.5);
	CHECK(cmd_parse_factor("2X", &d) == 0 && d == 2);
	CHECK(cmd_parse_factor("0", &d) < 0);
	CHECK(cmd_parse_factor("x", &d) < 0);
	CHECK(cmd_parse_factor("+2", &d) < 0);
	CHECK(cmd_parse_factor("0x2", &d) < 0);
	CHECK(cmd_parse_percent(" 5%", &d) < 0);
	CHECK(cmd_parse_percent("inf%", &d) < 0);
}

TEST(units)
{
	char b[32];
	CHECK_STR(cmd_fmt_duration(b, sizeof(b), 999), "999 ns");
	CHECK_STR(cmd_fmt_duration(b, sizeof(b), 1500), "1.500 us");
	CHECK_STR(cmd_fmt_duration(b, sizeof(b), 2500000), "2.500 ms");
	CHECK_STR(cmd_fmt_duration(b, sizeof(b), 61000000000ll), "61.000 s");
	CHECK_STR(cmd_fmt_duration(b, sizeof(b), -1500), "-1.500 us");
	CHECK_STR(cmd_fmt_bytes(b, sizeof(b), 512), "512 B");
	CHECK_STR(cmd_fmt_bytes(b, sizeof(b), 1536), "1.50 KiB");
	CHECK_STR(cmd_fmt_bytes(b, sizeof(b), 3.0 * (1 << 30)), "3.00 GiB");
	CHECK_STR(cmd_fmt_rate(b, sizeof(b), 22e9), "22.00 GB/s");
	CHECK_STR(cmd_fmt_rate(b, sizeof(b), 1.5e6), "1.50 MB/s");
}

TEST(utf8)
{
	size_t n;
	const char *ok = "plain \xe2\x9c\x93 \xf0\x9f\x98\x80";
	CHECK(cmd_utf8(ok, strlen(ok), &n) == ok && n == strlen(ok));
	const char *bad = "a\xff" "b\xc3";       /* stray byte, cut sequence */
	const char *fixed = cmd_utf8(bad, 4, &n);
	CHECK(n == 8 && memcmp(fixed, "a\xef\xbf\xbd" "b\xef\xbf\xbd", 8) == 0);
	const char *surrogate = "\xed\xa0\x80";  /* U+D800: not valid UTF-8 */
	fixed = cmd_utf8(surrogate, 3, &n);
	CHECK(n == 9);
	const char *overlong = "\xc0\xaf";       /* overlong '/' */
	fixed = cmd_utf8(overlong, 2, &n);
	CHECK(n == 6 && strncmp(fixed, "\xef\xbf\xbd\xef\xbf\xbd", 6) == 0);
	fixed = cmd_utf8("a\0b", 3, &n);          /* NUL is replaced too */
	CHECK(n == 5);
}

/* Kernel names for tables: short ones lose only a template's return
 * type and parameters; long ones their namespaces, then their innermost
 * template arguments, until they fit or nothing more can go. */
TEST(short_names)
{
	CHECK_STR(cmd_short_name("void saxpy_kernel<float>(float, float const*, float*, int)", 0),
	          "saxpy_kernel<float>");
	CHECK_STR(cmd_short_name("plain_c_kernel", 0), "plain_c_kernel");
	/* not a template: the parameters tell overloads apart */
	CHECK_STR(cmd_short_name("ns::scale(float*, float, int)", 0), "ns::scale(float*, float, int)");
	/* the anonymous namespace goes, whatever the length */
	CHECK_STR(cmd_short_name("(anonymous namespace)::k<int>(int)", 0), "k<int>");
	CHECK_STR(cmd_short_name("cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>"
	                         "(cutlass_80_simt_sgemm_256x128_8x4_nt_align1::Params)", 0),
	          "cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>");

	/* 113 bytes without namespaces: the longest inner list goes, then
	 * the next; "<1>" would not get shorter */
	CHECK_STR(cmd_short_name(
		"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
		"at::native::(anonymous namespace)::TensorListMetadata<1>, "
		"at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
		"std::multiplies<float>, float>(at::native::(anonymous namespace)::"
		"TensorListMetadata<1>, at::native::(anonymous namespace)::"
		"BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float)", 0),
		"multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<...>, "
		"multiplies<...>, float>");
	/* the deepest list first: the depth-3 one goes, and that is enough */
	CHECK_STR(cmd_short_name(
		"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
		"at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >"
		"(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
		"unsigned int, float, 4, 4>)", 0),
		"reduce_kernel<512, 1, ReduceOp<float, MeanOps<...>, unsigned int, float, 4, 4> >");

	/* qualifiers with template arguments or parameters before their
	 * "::", and "const::" before a lambda, stay */
	const char *gelu = cmd_short_name(
		"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("
		"at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
		"{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >"
		"(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
		"::{lambda()#2}::operator()() const::{lambda()#1}::operator()() const::"
		"{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)", 0);
	CHECK_STR(gelu, "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl(TensorIteratorBase&, "
	                "GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() "
	                "const::{lambda(BFloat16)#1}, Array<...> >");

	/* brackets that do not pair ("operator<"): namespaces stay */
	const char *cmp = "void ns::sort_kernel_with_a_rather_long_name_that_goes_on_and_on_"
	                  "and_on(ns::less_than_comparator, bool (*)(int, int) = ns::operator<)";
	CHECK_STR(cmd_short_name(cmp, 0), cmp + 5);

	/* "until it fits": 90 bytes fit, 91 do not.  "ns::" makes each
	 * name long enough to be shortened; without it, the first is
	 * exactly 90 bytes and stays whole; the second, 91, loses its
	 * inner list */
	for (int extra = 0; extra <= 1; extra++) {
		char as[80], full[160], want[100];
		memset(as, 'a', sizeof(as));
		as[72 + extra] = 0;     /* "kern<Inner<" 11 + 72 + ">, int>" 7 = 90 */
		snprintf(full, sizeof(full), "void ns::kern<Inner<%s>, int>(int)", as);
		if (extra)
			snprintf(want, sizeof(want), "kern<Inner<...>, int>");
		else
			snprintf(want, sizeof(want), "kern<Inner<%s>, int>", as);
		CHECK_EQ_INT(strlen(full + 9) - 5, 90 + (size_t)extra);
		CHECK_STR(cmd_short_name(full, 0), want);
	}

	/* a maximum cuts the end, never inside a UTF-8 sequence */
	CHECK_STR(cmd_short_name("abcdefghijklmnop", 10), "abcdefg...");
	CHECK_STR(cmd_short_name("abcdef\xc3\xa9ghij", 10), "abcdef...");
}

TEST(table_cut_to_width)
{
	/* 40 columns, indent 2, a number column 2 wide: 34 left for the
	 * names, so a 50-character name is cut to 31 and "..." (an "é" is
	 * one column, and never cut in two) */
	static const struct table_col cols[] = { { "n", 0 }, { "name", 1 } };
	char as[51], es[101];
	memset(as, 'a', 50);
	as[50] = 0;
	for (int i = 0; i < 50; i++)
		memcpy(es + 2 * i, "\xc3\xa9", 2);
	es[100] = 0;
	struct table t;
	table_init(&t, cols, 2);
	t.max_width = 40;
	table_row(&t);
	table_set(&t, 0, "1");
	table_set(&t, 1, "short");
	table_row(&t);
	table_set(&t, 0, "22");
	table_set(&t, 1, "%s", as);
	table_row(&t);
	table_set(&t, 0, "3");
	table_set(&t, 1, "%s", es);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	table_print(&t, f, "  ");
	fclose(f);
	char want[400];
	snprintf(want, sizeof(want), "   n  name\n   1  short\n  22  %.31s...\n   3  %.62s...\n",
	         as, es);
	CHECK_STR(out, want);
	free(out);
	table_free(&t);
}

int
main(void)
{
	RUN(durations);
	RUN(offsets);
	RUN(sizes);
	RUN(numbers);
	RUN(units);
	RUN(utf8);
	RUN(short_names);
	RUN(table_cut_to_width);
	return tap_done();
}
