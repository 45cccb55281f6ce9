/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: trace-import on arbitrary bytes (JSON or not, gzip
 * or not), the whole way: splitter, parser and its repairs, phases and
 * GPU kinds, sorting with a memory limit small enough that inputs of a
 * few hundred events go through temporary runs, and the writer.  The
 * trace written must then read back without error: a converter that
 * writes a bad trace is a bug even when its input was garbage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "import/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		imp_alloc_init();
		ready = 1;
	}
	struct imp_input in;
	if (imp_input_open_mem(&in, data, size, "fuzz") < 0) {
		imp_input_close(&in);
		return 0;
	}
	FILE *f = tmpfile();
	struct tk_writer *w = tk_writer_new();
	if (!f || !w || tk_writer_open_fd(w, fileno(f), "fuzz", NULL) != TK_OK)
		abort();
	struct imp_options o = { .memory = 16u << 10, .quiet = 1 };
	int status = imp_run(&in, w, &o);
	imp_input_close(&in);
	if (status == 2) {
		/* only a temporary file can fail here */
		tk_writer_free(w);
		fclose(f);
		return 0;
	}
	if (tk_writer_close(w) != TK_OK)
		abort();
	tk_writer_free(w);

	/* read it all back */
	struct tk_reader *r = tk_reader_new();
	if (!r || lseek(fileno(f), 0, SEEK_SET) < 0 ||
	    tk_reader_open_fd(r, fileno(f), "fuzz") != TK_OK)
		abort();
	struct tk_record rec;
	int rc;
	while ((rc = tk_reader_next(r, &rec)) == TK_OK)
		;
	if (rc != TK_EOF) {
		fprintf(stderr, "written trace does not read back: %s\n",
		        tk_reader_error(r));
		abort();
	}
	tk_reader_free(r);
	fclose(f);
	return 0;
}
