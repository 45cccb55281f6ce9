/* SPDX-License-Identifier: MIT */
/* The SVG primitives of the reports (svg.h). */
#include <string.h>

#include "svg.h"

/* Colours: categories c0-c6 (kernel, memcpy, memset, runtime, data
 * loading, CPU, other), chosen apart for colour-blind readers. */
static const char page_style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1280px;"
	"padding:16px 24px;color:#222;background:#fff}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;"
	"border-bottom:1px solid #ccc}h3{font-size:14px;margin:12px 0 4px}\n"
	".fig{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}\n"
	".fig svg{flex:none;max-width:100%;height:auto}\n"
	"table.nums{border-collapse:collapse;font-size:12px}\n"
	"table.nums td,table.nums th{padding:2px 6px;text-align:right;"
	"border-bottom:1px solid #eee;white-space:nowrap}\n"
	"table.nums td.l,table.nums th.l{text-align:left;max-width:360px;"
	"overflow:hidden;text-overflow:ellipsis}\n"
	"tr.lag td{background:#fde0dc}\n"
	"dl.meta{display:grid;grid-template-columns:max-content auto;gap:0 12px;"
	"font-size:12px}dl.meta dt{color:#666}dl.meta dd{margin:0;"
	"overflow-wrap:anywhere}\n"
	".note{color:#666;font-size:12px}\n"
	"svg text{font:11px system-ui,sans-serif;fill:#333}\n"
	"svg .axis{stroke:#999;stroke-width:1}svg .grid{stroke:#eee;stroke-width:1}\n"
	"svg .bg{fill:#f3f3f3}svg .busy{fill:#2b6cb0}svg .lag .busy{fill:#c53030}\n"
	"svg .mem{fill:none;stroke:#6b46c1;stroke-width:1.5}\n"
	"svg .bar{fill:#2b6cb0}svg .hbar{fill:#4a90c2}\n"
	"svg .pct{stroke:#c05621;stroke-width:1.5;stroke-dasharray:3 2}\n"
	"svg .c0{fill:#2b6cb0}svg .c1{fill:#dd8452}svg .c2{fill:#e7b27a}"
	"svg .c3{fill:#55a868}svg .c4{fill:#c44e52}svg .c5{fill:#8172b3}"
	"svg .c6{fill:#cfcfcf}\n"
	".key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}\n"
	".k0{background:#2b6cb0}.k1{background:#dd8452}.k2{background:#e7b27a}"
	".k3{background:#55a868}.k4{background:#c44e52}.k5{background:#8172b3}"
	".k6{background:#cfcfcf}\n"
	"ul.findings li{margin:2px 0}ul.findings li.warning,p.straggler{color:#9b2c2c}\n"
	"svg .before{fill:#9aa5b1}svg .after{fill:#2b6cb0}svg .faster{fill:#38a169}"
	"svg .slower{fill:#c53030}svg .total{fill:#718096}\n"
	"tr.faster td.v{color:#276749}tr.slower td.v{color:#9b2c2c}\n";

void
svg_html_begin(FILE *f, const char *title, const char *generator,
               const char *version)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n"
	      "<meta name=\"generator\" content=\"", f);
	svg_escape(f, generator);
	putc(' ', f);
	svg_escape(f, version);
	fputs("\">\n<title>", f);
	svg_escape(f, title);
	fprintf(f, "</title>\n<style>\n%s</style></head><body>\n", page_style);
}

void
svg_html_end(FILE *f)
{
	fputs("</body></html>\n", f);
}

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
