/* SPDX-License-Identifier: MIT */
/*
 * readwrite: the reference of the merge benchmark.  It reads each input
 * to its end, one after the other, and writes every event to one
 * writer, with the definitions copied and ids mapped through plain
 * arrays: the least work that turns several traces into one, with no
 * ordering, no deduplication and no reorder buffer.
 *
 *   readwrite [-t] [-o OUT] FILE...
 *
 * -t writes through a threaded writer (tk_writer_options.threads), as
 * trace-merge does with a second core.
 */
#include <getopt.h>

#include "copydefs.h"

int
main(int argc, char **argv)
{
	cmd_init("readwrite");
	const char *out = "-";
	struct tk_writer_options wo = TK_WRITER_OPTIONS_INIT;
	int c;
	while ((c = getopt(argc, argv, "o:t")) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == 't')
			wo.threads = 1;
		else
			cmd_die(2, "usage: readwrite [-t] [-o OUT] FILE...");
	}
	struct tk_writer *w = tk_writer_new();
	if (!w || tk_writer_open_path(w, out, &wo))
		cmd_die(2, "%s: %s", out, tk_writer_error(w));
	struct copymaps maps = { 0 };
	int status = 0;
	for (int i = optind; i < argc; i++) {
		struct tk_reader *r = cmd_open_reader(argv[i]);
		if (!r) {
			status = 1;
			continue;
		}
		struct tk_record rec;
		struct tk_event ev;
		int rc;
		copymaps_clear(&maps);
		while ((rc = tk_reader_next(r, &rec)) == TK_OK) {
			if (rec.type != TK_REC_EVENT) {
				copy_definition(w, &maps, &rec);
				continue;
			}
			copy_event(w, &maps, rec.u.event, &ev);
			if (tk_writer_event(w, &ev))
				cmd_die(2, "%s", tk_writer_error(w));
		}
		if (rc != TK_EOF) {
			cmd_reader_error(argv[i], r);
			status = 1;
		}
		tk_reader_free(r);
	}
	if (tk_writer_close(w))
		cmd_die(2, "%s: %s", out, tk_writer_error(w));
	tk_writer_free(w);
	copymaps_free(&maps);
	return status;
}
