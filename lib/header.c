/* SPDX-License-Identifier: MIT */
/*
 * The file header and the chunk header, field by field, in one place
 * (tracekit-format(5)): the writer and the sealer encode them, the
 * reader and the scan decode them.  Only the layout lives here; what a
 * reader does with a bad value (its message, the byte offset it names)
 * is the caller's, since each of them reports it its own way.
 *
 * Decoders take the bytes at hand: a caller that has read the first 16
 * bytes of a header learns its size from them before reading the rest.
 * Fields that lie beyond what was read are left zero.
 */
#include "tk_private.h"

/* Field offsets (tracekit-format(5), "File header" and "Chunks"). */
enum {
	FH_MAJOR = 8,
	FH_MINOR = 10,
	FH_SIZE = 12,
	FH_INCOMPAT = 16,
	FH_COMPAT = 24,
	FH_END = 32,             /* of the fields of version 1.0 */
};
enum {
	CH_SIZE = 4,
	CH_FLAGS = 8,
	CH_STORED = 12,
	CH_RAW = 16,
	CH_EVENTS = 20,
	CH_T_MIN = 24,
	CH_T_MAX = 32,
	CH_WATERMARK = 40,
	CH_RESERVED = 48,
	CH_END = 52,             /* of the fields of version 1.0 */
};
_Static_assert(FH_END + 4 == TKP_HEADER_SIZE, "file header: fields, CRC");
_Static_assert(CH_RESERVED == TKP_CHUNK_FIELDS, "chunk header fields");
_Static_assert(CH_END + 4 == TKP_CHUNK_HEADER_SIZE, "chunk header: fields, CRC");

void
tkp_file_header_decode(const uint8_t *p, size_t n, struct tkp_file_header *h)
{
	memset(h, 0, sizeof(*h));
	if (n < TKP_HEADER_PREFIX)
		return;
	h->major = tkp_get16(p + FH_MAJOR);
	h->minor = tkp_get16(p + FH_MINOR);
	h->size = tkp_get32(p + FH_SIZE);
	if (h->size < TKP_HEADER_SIZE || n < h->size)
		return;
	h->incompat = tkp_get64(p + FH_INCOMPAT);
	h->compat = tkp_get64(p + FH_COMPAT);
	h->crc = tkp_get32(p + h->size - 4);
}

size_t
tkp_file_header_encode(uint8_t p[TKP_HEADER_SIZE], const struct tkp_file_header *h)
{
	memset(p, 0, TKP_HEADER_SIZE);
	memcpy(p, TKP_MAGIC, 8);
	tkp_le16(p + FH_MAJOR, h->major);
	tkp_le16(p + FH_MINOR, h->minor);
	tkp_le32(p + FH_SIZE, TKP_HEADER_SIZE);
	tkp_le64(p + FH_INCOMPAT, h->incompat);
	tkp_le64(p + FH_COMPAT, h->compat);
	tkp_le32(p + FH_END, tkp_crc32(0, p, FH_END));
	return TKP_HEADER_SIZE;
}

void
tkp_chunk_header_decode(const uint8_t *p, size_t n, struct tkp_chunk_header *h)
{
	memset(h, 0, sizeof(*h));
	if (n >= CH_FLAGS)
		h->size = tkp_get32(p + CH_SIZE);
	if (n >= CH_RAW) {
		h->flags = tkp_get32(p + CH_FLAGS);
		h->stored = tkp_get32(p + CH_STORED);
	}
	if (n >= CH_T_MIN) {
		h->raw = tkp_get32(p + CH_RAW);
		h->events = tkp_get32(p + CH_EVENTS);
	}
	if (n >= CH_RESERVED) {
		h->t_min = (int64_t)tkp_get64(p + CH_T_MIN);
		h->t_max = (int64_t)tkp_get64(p + CH_T_MAX);
		h->watermark = (int64_t)tkp_get64(p + CH_WATERMARK);
	}
	if (h->size >= TKP_CHUNK_HEADER_SIZE && n >= h->size)
		h->crc = tkp_get32(p + h->size - 4);
}

void
tkp_chunk_header_encode(uint8_t p[TKP_CHUNK_HEADER_SIZE],
                        const struct tkp_chunk_header *h, const void *body)
{
	memset(p, 0, TKP_CHUNK_HEADER_SIZE);
	memcpy(p, TKP_CHUNK_MAGIC, 4);
	tkp_le32(p + CH_SIZE, TKP_CHUNK_HEADER_SIZE);
	tkp_le32(p + CH_FLAGS, h->flags);
	tkp_le32(p + CH_STORED, h->stored);
	tkp_le32(p + CH_RAW, h->raw);
	tkp_le32(p + CH_EVENTS, h->events);
	tkp_le64(p + CH_T_MIN, (uint64_t)h->t_min);
	tkp_le64(p + CH_T_MAX, (uint64_t)h->t_max);
	tkp_le64(p + CH_WATERMARK, (uint64_t)h->watermark);
	/* CH_RESERVED: zero */
	uint32_t crc = tkp_crc32(0, p, CH_END);
	tkp_le32(p + CH_END, tkp_crc32(crc, body, h->stored));
}

int
tkp_chunk_header_sizes_ok(const struct tkp_chunk_header *h)
{
	return h->stored <= TKP_CHUNK_STORED_MAX && h->raw <= TKP_CHUNK_RAW_MAX &&
	       h->events <= h->raw &&
	       ((h->flags & TK_CHUNK_DEFLATE) || h->stored == h->raw);
}
