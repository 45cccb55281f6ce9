/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parquet.h"
#include "tracekit.h"
#include "support.h"

/* Parquet's enumerations (parquet.thrift), the values this writer uses. */
enum { T_INT32 = 1, T_INT64 = 2, T_DOUBLE = 5, T_BYTE_ARRAY = 6 };
enum { E_PLAIN = 0, E_RLE = 3, E_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { CODEC_NONE = 0, CODEC_GZIP = 2 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1 };
enum { CONVERTED_UTF8 = 0 };

/* One column chunk as the footer describes it. */
struct chunk_meta {
	int64_t data_offset, dict_offset;  /* dict_offset -1: none */
	int64_t raw, packed;               /* bytes with the page headers */
	int dict;
};

/* A column's values of the row group being filled. */
struct pcol {
	const struct pq_column *def;
	uint8_t *present;        /* optional: 1 per row, 0 for null */
	size_t cap_present;
	struct bytebuf vals;     /* non-null values, PLAIN encoded */
	size_t *off;             /* strings: where value i begins in vals */
	size_t cap_off, nvals;
	struct chunk_meta *meta; /* one per row group written */
	size_t nmeta, cap_meta;
};

struct pq_writer {
	FILE *f;
	char *path;
	int64_t pos;             /* bytes written */
	struct pcol *cols;
	size_t ncols, cur;       /* the column the next value goes to */
	size_t rows;             /* rows of the current row group */
	uint64_t total_rows;
	int64_t *group_rows;     /* rows of each row group written */
	size_t ngroups, cap_groups;
	struct pq_options o;
	struct libdeflate_compressor *z;
	struct bytebuf body, packed, head; /* scratch for one page */
	uint32_t *ids;           /* scratch: dictionary indices */
	size_t cap_ids;
	uint32_t *lev;           /* scratch: one page's definition levels */
	size_t cap_lev;
	int failed;
	char err[256];
};

static int
fail(struct pq_writer *w, const char *what)
{
	if (!w->failed)
		snprintf(w->err, sizeof(w->err), "%s: %s", w->path, what);
	w->failed = 1;
	return -1;
}

int
pq_bit_width(uint32_t max)
{
	int bw = 0;
	while (max) {
		bw++;
		max >>= 1;
	}
	return bw;
}

/* Length of the run of equal values at v[i], counting no further than
 * `enough` (the caller only wants to know whether a run is long). */
static size_t
run_at(const uint32_t *v, size_t n, size_t i, size_t enough)
{
	size_t j = i + 1;
	while (j < n && v[j] == v[i] && j - i < enough)
		j++;
	return j - i;
}

static void
bit_pack(struct bytebuf *b, const uint32_t *v, size_t n, size_t from,
         size_t groups, int bw)
{
	uint64_t acc = 0;
	int bits = 0;
	for (size_t i = from; i < from + groups * 8; i++) {
		acc |= (uint64_t)(i < n ? v[i] : 0) << bits;
		bits += bw;
		while (bits >= 8) {
			bytebuf_byte(b, (uint8_t)acc);
			acc >>= 8;
			bits -= 8;
		}
	}
	/* 8 values of bw bits are bw whole bytes: nothing is left over */
}

void
pq_rle_hybrid(struct bytebuf *b, const uint32_t *v, size_t n, int bw)
{
	size_t width = (size_t)(bw + 7) / 8, i = 0;
	while (i < n) {
		size_t r = run_at(v, n, i, SIZE_MAX);
		if (r >= 8) {
			bytebuf_uvarint(b, (uint64_t)r << 1);
			for (size_t k = 0; k < width; k++)
				bytebuf_byte(b, (uint8_t)(v[i] >> (8 * k)));
			i += r;
			continue;
		}
		/* groups of 8 literals until a long run starts on a
		 * group's boundary */
		size_t j = i;
		do
			j += 8;
		while (j < n && run_at(v, n, j, 8) < 8);
		size_t groups = (j - i) / 8;
		bytebuf_uvarint(b, (uint64_t)groups << 1 | 1);
		bit_pack(b, v, n, i, groups, bw);
		i = j;
	}
}

struct pq_writer *
pq_open(const char *path, const struct pq_column *cols, size_t ncols,
        const struct pq_options *o)
{
	static const struct pq_options defaults = PQ_OPTIONS_INIT;
	struct pq_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->o = o ? *o : defaults;
	if (!w->o.group_rows)
		w->o.group_rows = defaults.group_rows;
	if (!w->o.page_rows)
		w->o.page_rows = defaults.page_rows;
	w->path = strdup(path);
	w->cols = calloc(ncols ? ncols : 1, sizeof(*w->cols));
	w->ncols = ncols;
	if (w->o.level > 0)
		w->z = libdeflate_alloc_compressor(w->o.level);
	if (!w->path || !w->cols || (w->o.level > 0 && !w->z)) {
		pq_free(w);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t c = 0; c < ncols; c++)
		w->cols[c].def = &cols[c];
	w->f = fopen(path, "wb");
	if (!w->f) {
		int e = errno;
		pq_free(w);
		errno = e;
		return NULL;
	}
	if (fwrite("PAR1", 1, 4, w->f) != 4) {
		int e = errno;
		pq_free(w);
		errno = e;
		return NULL;
	}
	w->pos = 4;
	return w;
}

/* The next column; its presence recorded. */
static struct pcol *
next_col(struct pq_writer *w, int present)
{
	if (w->failed)
		return NULL;
	if (w->cur >= w->ncols) {
		fail(w, "a row with too many values");
		return NULL;
	}
	struct pcol *c = &w->cols[w->cur++];
	if (c->def->optional) {
		uint8_t *p = tkp_grow(c->present, &c->cap_present, w->rows + 1, 1);
		if (!p) {
			fail(w, "out of memory");
			return NULL;
		}
		c->present = p;
		p[w->rows] = (uint8_t)present;
	} else if (!present) {
		fail(w, "a null in a required column");
		return NULL;
	}
	return c;
}

void
pq_i64(struct pq_writer *w, int64_t v)
{
	struct pcol *c = next_col(w, 1);
	if (!c)
		return;
	if (c->def->type == PQ_INT32)
		bytebuf_le32(&c->vals, (uint32_t)v);
	else if (c->def->type == PQ_DOUBLE) {
		double d = (double)v;
		uint64_t u;
		memcpy(&u, &d, 8);
		bytebuf_le64(&c->vals, u);
	} else if (c->def->type == PQ_INT64)
		bytebuf_le64(&c->vals, (uint64_t)v);
	else
		fail(w, "a number in a string column");
	c->nvals++;
}

void
pq_f64(struct pq_writer *w, double v)
{
	struct pcol *c = next_col(w, 1);
	if (!c)
		return;
	if (c->def->type != PQ_DOUBLE) {
		fail(w, "a double in a column of another type");
		return;
	}
	uint64_t u;
	memcpy(&u, &v, 8);
	bytebuf_le64(&c->vals, u);
	c->nvals++;
}

void
pq_str(struct pq_writer *w, const char *s, size_t n)
{
	struct pcol *c = next_col(w, 1);
	if (!c)
		return;
	if (c->def->type != PQ_STRING || n > UINT32_MAX) {
		fail(w, "a string in a column of another type");
		return;
	}
	size_t *off = tkp_grow(c->off, &c->cap_off, c->nvals + 1, sizeof(*off));
	if (!off) {
		fail(w, "out of memory");
		return;
	}
	c->off = off;
	off[c->nvals++] = c->vals.n;
	bytebuf_le32(&c->vals, (uint32_t)n);
	bytebuf_put(&c->vals, s, n);
}

void
pq_null(struct pq_writer *w)
{
	next_col(w, 0);
}

static int
put_file(struct pq_writer *w, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, w->f) != n)
		return fail(w, strerror(errno ? errno : EIO));
	w->pos += (int64_t)n;
	return 0;
}

/* Compress w->body and write it as one page after its header; adds its
 * sizes to *m.  `type`: PAGE_DATA or PAGE_DICTIONARY. */
static int
write_page(struct pq_writer *w, struct chunk_meta *m, int type,
           size_t nvalues, int encoding)
{
	if (w->body.oom || w->body.n > INT32_MAX)
		return fail(w, "out of memory");
	const uint8_t *data = w->body.p;
	size_t len = w->body.n;
	if (w->z) {
		size_t bound = libdeflate_gzip_compress_bound(w->z, w->body.n);
		w->packed.n = 0;
		if (w->packed.cap < bound) {
			uint8_t *q = tkp_grow(w->packed.p, &w->packed.cap, bound, 1);
			if (!q)
				return fail(w, "out of memory");
			w->packed.p = q;
		}
		len = libdeflate_gzip_compress(w->z, w->body.p, w->body.n,
		                               w->packed.p, w->packed.cap);
		if (!len)
			return fail(w, "compression failed");
		data = w->packed.p;
	}
	struct thrift t;
	w->head.n = 0;
	thrift_init(&t, &w->head);
	thrift_i32(&t, 1, type);
	thrift_i32(&t, 2, (int32_t)w->body.n);
	thrift_i32(&t, 3, (int32_t)len);
	thrift_struct_begin(&t, type == PAGE_DATA ? 5 : 7);
	thrift_i32(&t, 1, (int32_t)nvalues);
	thrift_i32(&t, 2, encoding);
	if (type == PAGE_DATA) {
		thrift_i32(&t, 3, E_RLE);
		thrift_i32(&t, 4, E_RLE);
	}
	thrift_struct_end(&t);
	thrift_struct_end(&t);
	if (w->head.oom)
		return fail(w, "out of memory");
	m->raw += (int64_t)(w->head.n + w->body.n);
	m->packed += (int64_t)(w->head.n + len);
	if (put_file(w, w->head.p, w->head.n) < 0 || put_file(w, data, len) < 0)
		return -1;
	return 0;
}

/* Where non-null value i of a column begins in its PLAIN bytes. */
static size_t
value_at(const struct pcol *c, size_t i)
{
	if (c->def->type == PQ_STRING)
		return i < c->nvals ? c->off[i] : c->vals.n;
	return i * (c->def->type == PQ_INT32 ? 4 : 8);
}

static int
grow_ids(struct pq_writer *w, size_t n)
{
	uint32_t *ids = tkp_grow(w->ids, &w->cap_ids, n, sizeof(*ids));
	if (!ids)
		return fail(w, "out of memory");
	w->ids = ids;
	return 0;
}

/* The strings of a row group as a dictionary, when they repeat enough
 * for it to pay: w->ids[i] the index of value i, the dictionary page
 * written.  Returns the dictionary's size, 0 for PLAIN pages instead,
 * -1 on failure. */
static long
write_dictionary(struct pq_writer *w, struct pcol *c, struct chunk_meta *m)
{
	size_t n = c->nvals, slots = 16;
	while (slots < 2 * n)
		slots *= 2;
	uint32_t *table = calloc(slots, sizeof(*table)); /* first value + 1 */
	if (!table || grow_ids(w, n) < 0) {
		free(table);
		return fail(w, "out of memory");
	}
	size_t ndict = 0;
	w->body.n = 0;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = c->vals.p + c->off[i];
		size_t len = value_at(c, i + 1) - c->off[i];
		size_t h = tkp_hash(p, len, 0) & (slots - 1);
		for (;; h = (h + 1) & (slots - 1)) {
			if (!table[h]) {
				/* a new string: its dictionary index follows the
				 * first value's */
				table[h] = (uint32_t)i + 1;
				w->ids[i] = (uint32_t)ndict++;
				bytebuf_put(&w->body, p, len);
				break;
			}
			size_t j = table[h] - 1;
			size_t jlen = value_at(c, j + 1) - c->off[j];
			if (jlen == len && !memcmp(c->vals.p + c->off[j], p, len)) {
				w->ids[i] = w->ids[j];
				break;
			}
		}
		if (ndict > 16 && ndict * 2 > n) {
			free(table);
			return 0; /* mostly distinct: PLAIN is smaller */
		}
	}
	free(table);
	m->dict_offset = w->pos;
	m->dict = 1;
	if (write_page(w, m, PAGE_DICTIONARY, ndict, E_PLAIN) < 0)
		return -1;
	return (long)ndict;
}

/* The definition levels of rows [r0, r1), with their 4-byte length: in
 * one piece, as only the hybrid's last group may be padded. */
static int
put_levels(struct pq_writer *w, const struct pcol *c, size_t r0, size_t r1,
           size_t *present)
{
	uint32_t *lev = tkp_grow(w->lev, &w->cap_lev, r1 - r0, sizeof(*lev));
	if (!lev)
		return fail(w, "out of memory");
	w->lev = lev;
	*present = 0;
	for (size_t r = r0; r < r1; r++) {
		lev[r - r0] = c->present[r];
		*present += c->present[r];
	}
	size_t at = w->body.n;
	bytebuf_le32(&w->body, 0);
	pq_rle_hybrid(&w->body, lev, r1 - r0, 1);
	if (w->body.oom)
		return fail(w, "out of memory");
	uint32_t len = (uint32_t)(w->body.n - at - 4);
	for (int i = 0; i < 4; i++)
		w->body.p[at + (size_t)i] = (uint8_t)(len >> (8 * i));
	return 0;
}

static int
write_chunk(struct pq_writer *w, struct pcol *c, struct chunk_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->dict_offset = -1;
	long ndict = 0;
	if (c->def->type == PQ_STRING && c->nvals > 0)
		ndict = write_dictionary(w, c, m);
	if (ndict < 0)
		return -1;
	int bw = ndict > 1 ? pq_bit_width((uint32_t)(ndict - 1)) : 1;
	m->data_offset = w->pos;
	size_t v0 = 0;
	for (size_t r0 = 0; r0 < w->rows; r0 += w->o.page_rows) {
		size_t r1 = r0 + w->o.page_rows < w->rows ? r0 + w->o.page_rows
		                                          : w->rows;
		size_t nv = r1 - r0;
		w->body.n = 0;
		if (c->def->optional && put_levels(w, c, r0, r1, &nv) < 0)
			return -1;
		if (ndict) {
			bytebuf_byte(&w->body, (uint8_t)bw);
			pq_rle_hybrid(&w->body, w->ids + v0, nv, bw);
		} else {
			size_t a = value_at(c, v0), b = value_at(c, v0 + nv);
			bytebuf_put(&w->body, c->vals.p + a, b - a);
		}
		if (write_page(w, m, PAGE_DATA, r1 - r0,
		               ndict ? E_RLE_DICTIONARY : E_PLAIN) < 0)
			return -1;
		v0 += nv;
	}
	return 0;
}

static int
flush_group(struct pq_writer *w)
{
	if (w->rows == 0 || w->failed)
		return w->failed ? -1 : 0;
	int64_t *g = tkp_grow(w->group_rows, &w->cap_groups, w->ngroups + 1,
	                      sizeof(*g));
	if (!g)
		return fail(w, "out of memory");
	w->group_rows = g;
	for (size_t i = 0; i < w->ncols; i++) {
		struct pcol *c = &w->cols[i];
		struct chunk_meta *m = tkp_grow(c->meta, &c->cap_meta, c->nmeta + 1,
		                                sizeof(*m));
		if (!m)
			return fail(w, "out of memory");
		c->meta = m;
		if (c->vals.oom)
			return fail(w, "out of memory");
		if (write_chunk(w, c, &m[c->nmeta++]) < 0)
			return -1;
		c->vals.n = 0;
		c->nvals = 0;
	}
	g[w->ngroups++] = (int64_t)w->rows;
	w->rows = 0;
	return 0;
}

int
pq_end_row(struct pq_writer *w)
{
	if (w->failed)
		return -1;
	if (w->cur != w->ncols)
		return fail(w, "a row with too few values");
	w->cur = 0;
	w->rows++;
	w->total_rows++;
	if (w->rows >= w->o.group_rows)
		return flush_group(w);
	if (w->o.group_bytes && w->rows % 1024 == 0) {
		/* strings may be long: look at the bytes now and then */
		size_t bytes = 0;
		for (size_t i = 0; i < w->ncols; i++)
			bytes += w->cols[i].vals.n;
		if (bytes >= w->o.group_bytes)
			return flush_group(w);
	}
	return 0;
}

static void
footer_schema(struct thrift *t, const struct pq_writer *w)
{
	thrift_list_begin(t, 2, TC_STRUCT, w->ncols + 1);
	thrift_struct_begin(t, 0);
	thrift_string(t, 4, "schema");
	thrift_i32(t, 5, (int32_t)w->ncols);
	thrift_struct_end(t);
	for (size_t i = 0; i < w->ncols; i++) {
		const struct pq_column *d = w->cols[i].def;
		static const int types[] = { 0, T_INT64, T_INT32, T_DOUBLE,
		                             T_BYTE_ARRAY };
		thrift_struct_begin(t, 0);
		thrift_i32(t, 1, types[d->type]);
		thrift_i32(t, 3, d->optional ? REP_OPTIONAL : REP_REQUIRED);
		thrift_string(t, 4, d->name);
		if (d->type == PQ_STRING) {
			thrift_i32(t, 6, CONVERTED_UTF8);
			thrift_struct_begin(t, 10);   /* LogicalType */
			thrift_struct_begin(t, 1);    /* STRING: StringType {} */
			thrift_struct_end(t);
			thrift_struct_end(t);
		}
		thrift_struct_end(t);
	}
}

static void
footer_column(struct thrift *t, const struct pq_writer *w, size_t col,
              size_t g)
{
	const struct pcol *c = &w->cols[col];
	const struct chunk_meta *m = &c->meta[g];
	static const int types[] = { 0, T_INT64, T_INT32, T_DOUBLE, T_BYTE_ARRAY };
	thrift_struct_begin(t, 0);                       /* ColumnChunk */
	thrift_i64(t, 2, m->dict ? m->dict_offset : m->data_offset);
	thrift_struct_begin(t, 3);                       /* ColumnMetaData */
	thrift_i32(t, 1, types[c->def->type]);
	thrift_list_begin(t, 2, TC_I32, m->dict ? 3 : 2);
	thrift_elem_i32(t, E_PLAIN);
	thrift_elem_i32(t, E_RLE);
	if (m->dict)
		thrift_elem_i32(t, E_RLE_DICTIONARY);
	thrift_list_begin(t, 3, TC_BINARY, 1);
	thrift_elem_string(t, c->def->name);
	thrift_i32(t, 4, w->z ? CODEC_GZIP : CODEC_NONE);
	thrift_i64(t, 5, w->group_rows[g]);
	thrift_i64(t, 6, m->raw);
	thrift_i64(t, 7, m->packed);
	thrift_i64(t, 9, m->data_offset);
	if (m->dict)
		thrift_i64(t, 11, m->dict_offset);
	thrift_struct_end(t);
	thrift_struct_end(t);
}

static int
write_footer(struct pq_writer *w)
{
	struct bytebuf b = { 0 };
	struct thrift t;
	thrift_init(&t, &b);
	thrift_i32(&t, 1, 1);                            /* version */
	footer_schema(&t, w);
	thrift_i64(&t, 3, (int64_t)w->total_rows);
	thrift_list_begin(&t, 4, TC_STRUCT, w->ngroups);
	for (size_t g = 0; g < w->ngroups; g++) {
		int64_t raw = 0, packed = 0;
		thrift_struct_begin(&t, 0);                  /* RowGroup */
		thrift_list_begin(&t, 1, TC_STRUCT, w->ncols);
		for (size_t i = 0; i < w->ncols; i++) {
			footer_column(&t, w, i, g);
			raw += w->cols[i].meta[g].raw;
			packed += w->cols[i].meta[g].packed;
		}
		thrift_i64(&t, 2, raw);
		thrift_i64(&t, 3, w->group_rows[g]);
		thrift_i64(&t, 6, packed);
		thrift_struct_end(&t);
	}
	thrift_string(&t, 6, "tracekit version " TK_VERSION);
	thrift_struct_end(&t);
	bytebuf_le32(&b, (uint32_t)b.n);
	bytebuf_put(&b, "PAR1", 4);
	int rc = b.oom ? fail(w, "out of memory") : put_file(w, b.p, b.n);
	bytebuf_free(&b);
	return rc;
}

int
pq_close(struct pq_writer *w)
{
	if (!w->failed && w->cur != 0)
		fail(w, "closed inside a row");
	if (flush_group(w) < 0 || write_footer(w) < 0)
		return -1;
	FILE *f = w->f;
	w->f = NULL;
	if (fclose(f) != 0)
		return fail(w, strerror(errno));
	return 0;
}

const char *
pq_error(const struct pq_writer *w)
{
	return w->err;
}

uint64_t
pq_rows(const struct pq_writer *w)
{
	return w->total_rows;
}

void
pq_free(struct pq_writer *w)
{
	if (!w)
		return;
	if (w->f)
		fclose(w->f);
	for (size_t i = 0; w->cols && i < w->ncols; i++) {
		free(w->cols[i].present);
		bytebuf_free(&w->cols[i].vals);
		free(w->cols[i].off);
		free(w->cols[i].meta);
	}
	free(w->cols);
	free(w->group_rows);
	if (w->z)
		libdeflate_free_compressor(w->z);
	bytebuf_free(&w->body);
	bytebuf_free(&w->packed);
	bytebuf_free(&w->head);
	free(w->ids);
	free(w->lev);
	free(w->path);
	free(w);
}
