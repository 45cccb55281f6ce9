/* SPDX-License-Identifier: MIT */
/*
 * A small SVG and HTML writer for the reports (trace-report, and
 * trace-diff --html): the few primitives charts of bars, strips and
 * histograms need, written straight to a stream, and the escaping of
 * text and attribute values.  Coordinates are printed with one decimal:
 * the pictures are summaries, and the file stays small.
 *
 * `cls` is a CSS class (NULL for none); `attrs` is raw attribute text
 * the caller knows to be safe, such as numbers (NULL for none).
 */
#ifndef TK_CMD_SVG_H
#define TK_CMD_SVG_H

#include <stddef.h>
#include <stdio.h>

/* The head of a report page, with the reports' style inline (classes:
 * .fig for a picture and its numbers, table.nums, .note, and the SVG
 * classes of bars, strips and categories c0-c6), and its end. */
void svg_html_begin(FILE *f, const char *title, const char *generator,
                    const char *version);
void svg_html_end(FILE *f);

/* s with & < > " ' escaped, for element text and attribute values. */
void svg_escape(FILE *f, const char *s);
/* ` name="value"`, the value escaped. */
void svg_attr(FILE *f, const char *name, const char *value);

/* <svg> of this size (viewBox the same, scaling to its box), with an
 * accessible label; svg_end() closes it. */
void svg_begin(FILE *f, double w, double h, const char *cls, const char *label);
void svg_end(FILE *f);
/* A group: svg_group() ... svg_group_end(). */
void svg_group(FILE *f, const char *cls, const char *attrs);
void svg_group_end(FILE *f);
/* A rectangle with an optional tooltip (title; NULL for none). */
void svg_rect(FILE *f, double x, double y, double w, double h,
              const char *cls, const char *attrs, const char *title);
void svg_line(FILE *f, double x1, double y1, double x2, double y2,
              const char *cls);
/* anchor: "start", "middle" or "end". */
void svg_text(FILE *f, double x, double y, const char *anchor,
              const char *cls, const char *text);

/* A path built a point at a time: svg_path_begin(), svg_path_point()
 * (the first moves, the others draw lines), svg_path_end(close). */
struct svg_path {
	FILE *f;
	size_t n;
};
void svg_path_begin(struct svg_path *p, FILE *f, const char *cls);
void svg_path_point(struct svg_path *p, double x, double y);
void svg_path_end(struct svg_path *p, int close);

#endif
