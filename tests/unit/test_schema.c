/* SPDX-License-Identifier: MIT */
/* The schema as the library publishes it (tk_kind_field() and friends),
 * checked against the column table the reader and writer use, and
 * against events filled by hand. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tk_private.h"

static size_t
type_size(unsigned type)
{
	switch (type) {
	case TK_FIELD_U32: case TK_FIELD_I32: return 4;
	case TK_FIELD_U64: case TK_FIELD_I64: case TK_FIELD_F64: return 8;
	case TK_FIELD_STRING: return sizeof(const char *);
	case TK_FIELD_PAYLOAD: return sizeof(union tk_value);
	}
	return 0;
}

static unsigned
public_type(unsigned ftype)
{
	switch (ftype) {
	case TKP_U32: return TK_FIELD_U32;
	case TKP_I32: return TK_FIELD_I32;
	case TKP_U64: return TK_FIELD_U64;
	case TKP_I64: return TK_FIELD_I64;
	case TKP_F64: return TK_FIELD_F64;
	}
	return 0;
}

static const struct tk_field *
field_at(unsigned kind, size_t offset)
{
	const struct tk_field *f;
	for (size_t i = 0; (f = tk_kind_field(kind, i)); i++)
		if (f->offset == offset)
			return f;
	return NULL;
}

TEST(every_kind_has_fields_inside_its_member)
{
	CHECK(tk_kind_field(0, 0) == NULL);
	CHECK(tk_kind_field(TK_KIND_MAX + 1, 0) == NULL);
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		const struct tkp_kind_schema *s = &tkp_schema[k];
		const struct tk_field *f;
		size_t i, corr = 0;
		for (i = 0; (f = tk_kind_field(k, i)); i++) {
			CHECK(f->name && *f->name);
			CHECK(type_size(f->type) > 0);
			CHECK(f->count >= 1);
			CHECK(f->offset >= TKP_UNION_OFF);
			CHECK(f->offset + type_size(f->type) * f->count <=
			      TKP_UNION_OFF + s->size);
			CHECK(tk_kind_field_named(k, f->name) == f);
			if (f->flags & TK_FIELD_CORRELATION) {
				CHECK(f->type == TK_FIELD_U64);
				corr++;
			}
			if (f->value_name)
				CHECK(f->value_name(12345) != NULL);
		}
		CHECK(i > 0);
		CHECK(corr <= 1);
		CHECK(tk_kind_field(k, i) == NULL);
		CHECK(tk_kind_field_named(k, "no such field") == NULL);
	}
}

TEST(every_column_lands_in_a_field)
{
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		const struct tkp_kind_schema *s = &tkp_schema[k];
		for (unsigned a = 0; a < s->n; a++) {
			const struct tkp_attr *at = &s->attrs[a];
			const struct tk_field *f;
			switch (at->enc) {
			case TKP_ENC_STR:
				f = field_at(k, at->str_off);
				CHECK(f && f->type == TK_FIELD_STRING);
				break;
			case TKP_ENC_CONFIG:
				/* grid, block, cluster, smem, registers */
				f = field_at(k, at->off);
				CHECK(f && strcmp(f->name, "grid") == 0);
				break;
			default:
				f = field_at(k, at->off);
				CHECK(f != NULL);
				if (f && f->type != TK_FIELD_PAYLOAD)
					CHECK_EQ_INT(f->type, public_type(at->ftype));
				break;
			}
		}
	}
}

TEST(values)
{
	struct tk_event e;
	memset(&e, 0, sizeof(e));
	e.kind = TK_KERNEL;
	e.u.kernel.correlation = 77;
	e.u.kernel.grid[0] = 4;
	e.u.kernel.grid[2] = 9;
	e.u.kernel.mangled = "_Z1kv";
	const struct tk_field *grid = tk_kind_field_named(TK_KERNEL, "grid");
	CHECK(grid && grid->count == 3);
	CHECK_EQ_INT(tk_field_value(&e, grid, 0).u, 4);
	CHECK_EQ_INT(tk_field_value(&e, grid, 2).u, 9);
	CHECK_EQ_INT(tk_field_value(&e, grid, 3).u, 0);  /* past the end */
	CHECK_STR(tk_field_string(&e, tk_kind_field_named(TK_KERNEL, "mangled")),
	          "_Z1kv");
	CHECK_STR(tk_field_string(&e, grid), "");
	CHECK_EQ_INT(tk_event_correlation(&e), 77);

	memset(&e, 0, sizeof(e));
	e.kind = TK_API;
	e.u.api.domain = TK_API_DRIVER;
	e.u.api.result = -3;
	e.u.api.correlation = 5;
	const struct tk_field *d = tk_kind_field_named(TK_API, "domain");
	CHECK(d && d->value_name);
	if (d && d->value_name)
		CHECK_STR(d->value_name((unsigned)tk_field_value(&e, d, 0).u), "driver");
	CHECK_EQ_INT(tk_field_value(&e, tk_kind_field_named(TK_API, "result"), 0).i, -3);
	CHECK_EQ_INT(tk_event_correlation(&e), 5);

	memset(&e, 0, sizeof(e));
	e.kind = TK_MEMCPY;
	e.u.memcpy.copy_kind = TK_COPY_DTOH;
	e.u.memcpy.bytes = UINT64_C(1) << 40;
	const struct tk_field *ck = tk_kind_field_named(TK_MEMCPY, "copy_kind");
	CHECK(ck && ck->value_name == tk_copy_kind_name);
	CHECK_EQ_INT(tk_field_value(&e, ck, 0).u, TK_COPY_DTOH);
	CHECK(tk_field_value(&e, tk_kind_field_named(TK_MEMCPY, "bytes"), 0).u ==
	      UINT64_C(1) << 40);
	CHECK_EQ_INT(tk_event_correlation(&e), 0);

	memset(&e, 0, sizeof(e));
	e.kind = TK_COUNTER;
	e.u.counter.value = 2.5;
	CHECK(tk_field_value(&e, tk_kind_field(TK_COUNTER, 0), 0).d == 2.5);

	memset(&e, 0, sizeof(e));
	e.kind = TK_MARK;
	e.u.range.payload_type = TK_PAYLOAD_INT;
	e.u.range.payload.i = -42;
	const struct tk_field *pl = tk_kind_field_named(TK_MARK, "payload");
	CHECK(pl && pl->type == TK_FIELD_PAYLOAD);
	CHECK_EQ_INT(tk_field_value(&e, pl, 0).i, -42);
	CHECK_STR(tk_field_string(&e, tk_kind_field_named(TK_MARK, "domain")), "");

	memset(&e, 0, sizeof(e));
	e.kind = TK_PROCESS;
	e.u.process.utime = -1;
	CHECK_EQ_INT(tk_field_value(&e, tk_kind_field_named(TK_PROCESS, "utime"), 0).i, -1);
	CHECK_EQ_INT(tk_event_correlation(&e), 0);
	e.kind = 99;
	CHECK_EQ_INT(tk_event_correlation(&e), 0);
	CHECK_EQ_INT(tk_field_value(NULL, pl, 0).u, 0);
	CHECK_EQ_INT(tk_field_value(&e, NULL, 0).u, 0);
}

TEST(correlation_is_the_flagged_field)
{
	for (unsigned k = 1; k <= TK_KIND_MAX; k++) {
		struct tk_event e;
		memset(&e, 0, sizeof(e));
		e.kind = k;
		const struct tk_field *f, *corr = NULL;
		for (size_t i = 0; (f = tk_kind_field(k, i)); i++)
			if (f->flags & TK_FIELD_CORRELATION)
				corr = f;
		if (corr)
			memcpy((char *)&e + corr->offset, &(uint64_t){ 1234 }, 8);
		CHECK_EQ_INT(tk_event_correlation(&e), corr ? 1234 : 0);
	}
	CHECK(tk_kind_field_named(TK_SYNC, "correlation") != NULL);
	CHECK(tk_kind_field_named(TK_MEMORY, "correlation") != NULL);
	CHECK(tk_kind_field_named(TK_RANGE, "correlation") == NULL);
}

TEST(api_domain_names)
{
	CHECK_STR(tk_api_domain_name(TK_API_RUNTIME), "runtime");
	CHECK_STR(tk_api_domain_name(TK_API_DRIVER), "driver");
	CHECK_STR(tk_api_domain_name(TK_API_OTHER), "other");
	CHECK_STR(tk_api_domain_name(0), "other");
	CHECK_STR(tk_api_domain_name(1000), "other");
}

int
main(void)
{
	RUN(every_kind_has_fields_inside_its_member);
	RUN(every_column_lands_in_a_field);
	RUN(values);
	RUN(correlation_is_the_flagged_field);
	RUN(api_domain_names);
	return tap_done();
}
