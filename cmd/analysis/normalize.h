/* SPDX-License-Identifier: MIT */
/*
 * trace-diff --normalize: names with the parts that change between
 * builds taken out, so that renamed instantiations of the same
 * operation still match.  Three rules, applied left to right in one
 * pass (trace-diff(1), NORMALIZED NAMES, says the same):
 *
 *  1. Template arguments: a '<' right after a letter, digit or '_'
 *     (not the "operator<" family) and everything to its matching '>'
 *     become "<...>".  "ncclKernel<float, 4>" -> "ncclKernel<...>".  A
 *     '<' without a match, or after a space ("<module>"), stays.
 *  2. Addresses: "0x" and hexadecimal digits, not right after a letter
 *     or digit, become "0x...".
 *  3. Numeric suffixes: digits at the end of a word (followed by
 *     anything but a letter, digit or '_'), right after one of "_.#-",
 *     become "N": "triton_poi_fused_add_0" -> "triton_poi_fused_add_N",
 *     "ProfilerStep#12" -> "ProfilerStep#N", "layers.3.mlp" ->
 *     "layers.N.mlp", "{lambda()#2}" -> "{lambda()#N}".  So do hex
 *     hashes there: 8 or more hexadecimal digits with a decimal digit
 *     among them.  Digits inside a word ("bf16", "128x128", "sm90")
 *     stay: they name different kernels.
 */
#ifndef TK_CMD_DIFF_NORMALIZE_H
#define TK_CMD_DIFF_NORMALIZE_H

/* The normalized name (malloc'd), or NULL when out of memory. */
char *diff_normalize(const char *name);

#endif
