/* SPDX-License-Identifier: MIT */
/* The SVG primitives of the reports (svg.h). */
#include <string.h>

#include "svg.h"

void
svg_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			/* control characters are not allowed in XML 1.0 */
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				putc('?', f);
			else
				putc(*s, f);
		}
	}
}

void
svg_attr(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=\"", name);
	svg_escape(f, value);
	putc('"', f);
}

static void
class_attr(FILE *f, const char *cls)
{
	if (cls)
		fprintf(f, " class=\"%s\"", cls);
}

void
svg_begin(FILE *f, double w, double h, const char *cls, const char *label)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
	        "width=\"%.0f\" height=\"%.0f\" role=\"img\"", w, h, w, h);
	class_attr(f, cls);
	fputs(" aria-label=\"", f);
	svg_escape(f, label);
	fputs("\">\n", f);
}

void
svg_end(FILE *f)
{
	fputs("</svg>\n", f);
}

void
svg_group(FILE *f, const char *cls, const char *attrs)
{
	fputs("<g", f);
	class_attr(f, cls);
	if (attrs)
		fputs(attrs, f);
	fputs(">\n", f);
}

void
svg_group_end(FILE *f)
{
	fputs("</g>\n", f);
}

void
svg_rect(FILE *f, double x, double y, double w, double h, const char *cls,
         const char *attrs, const char *title)
{
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"",
	        x, y, w < 0 ? 0 : w, h < 0 ? 0 : h);
	class_attr(f, cls);
	if (attrs)
		fputs(attrs, f);
	if (!title) {
		fputs("/>\n", f);
		return;
	}
	fputs("><title>", f);
	svg_escape(f, title);
	fputs("</title></rect>\n", f);
}

void
svg_line(FILE *f, double x1, double y1, double x2, double y2, const char *cls)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"",
	        x1, y1, x2, y2);
	class_attr(f, cls);
	fputs("/>\n", f);
}

void
svg_text(FILE *f, double x, double y, const char *anchor, const char *cls,
         const char *text)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
	if (anchor && strcmp(anchor, "start") != 0)
		fprintf(f, " text-anchor=\"%s\"", anchor);
	class_attr(f, cls);
	putc('>', f);
	svg_escape(f, text);
	fputs("</text>\n", f);
}

void
svg_path_begin(struct svg_path *p, FILE *f, const char *cls)
{
	p->f = f;
	p->n = 0;
	fputs("<path", f);
	class_attr(f, cls);
	fputs(" d=\"", f);
}

void
svg_path_point(struct svg_path *p, double x, double y)
{
	fprintf(p->f, "%s%.1f %.1f", p->n ? "L" : "M", x, y);
	p->n++;
}

void
svg_path_end(struct svg_path *p, int close)
{
	if (close && p->n)
		putc('Z', p->f);
	/* an empty path draws nothing but stays valid */
	if (!p->n)
		fputs("M0 0", p->f);
	fputs("\"/>\n", p->f);
}
