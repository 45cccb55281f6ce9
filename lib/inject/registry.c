/* SPDX-License-Identifier: MIT */
/*
 * Names the program gives through NVTX: domains, registered strings,
 * categories, threads and CUDA objects.  Rare calls, so one mutex; the
 * handles given to the program are pointers to entries that live as
 * long as the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "inject.h"
#include "support.h"
#include "tbuf.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static struct tki_domain default_domain = { 0, "", 0 };
static struct tki_domain **domains;      /* by id; [0] = default */
static uint32_t ndomains;
static size_t domains_cap;

static struct tki_string **strings;      /* by id; [0] unused */
static uint32_t nstrings;
static size_t strings_cap;

struct category {
	uint32_t domain;
	uint32_t category;
	char *name;
};
static struct category *categories;
static size_t ncategories;
static size_t categories_cap;

struct named {
	int kind;                /* 0 = OS thread, else enum tki_resource */
	uint64_t key;
	char *name;
};
static struct named *names;
static size_t nnames;
static size_t names_cap;

struct tki_domain *
tki_domain_default(void)
{
	return &default_domain;
}

struct tki_domain *
tki_domain_get(const char *name)
{
	if (!name || !*name)
		return &default_domain;
	pthread_mutex_lock(&reg_lock);
	struct tki_domain *d = NULL;
	for (uint32_t i = 1; i < ndomains; i++) {
		if (strcmp(domains[i]->name, name) == 0) {
			d = domains[i];
			goto out;
		}
	}
	struct tki_domain **ds = tkp_grow(domains, &domains_cap,
	                                  ndomains ? ndomains + 1 : 2, sizeof(*ds));
	if (!ds)
		goto out;
	domains = ds;
	if (ndomains == 0)
		domains[ndomains++] = &default_domain;
	/* record ids are 16 bits wide */
	if (ndomains > 0xffff || !(d = calloc(1, sizeof(*d))))
		goto out;
	if (!(d->name = strdup(name))) {
		free(d);
		d = NULL;
		goto out;
	}
	d->id = ndomains;
	d->capture = tki_cfg.capture && tki_cfg.capture_domain &&
	             (strcmp(tki_cfg.capture_domain, "*") == 0 ||
	              strcmp(tki_cfg.capture_domain, name) == 0);
	domains[ndomains++] = d;
	tki_buf_name(TKI_NAME_DOMAIN, d->id, 0, d->name, strlen(d->name));
out:
	pthread_mutex_unlock(&reg_lock);
	return d;
}

struct tki_domain *
tki_domain_by_id(uint32_t id)
{
	if (id == 0)
		return &default_domain;
	pthread_mutex_lock(&reg_lock);
	struct tki_domain *d = id < ndomains ? domains[id] : NULL;
	pthread_mutex_unlock(&reg_lock);
	return d;
}

struct tki_string *
tki_string_register(struct tki_domain *d, const char *s, size_t len)
{
	if (!d)
		d = &default_domain;
	pthread_mutex_lock(&reg_lock);
	struct tki_string *r = NULL;
	/* the same text in the same domain gets the same handle */
	for (uint32_t i = 1; i < nstrings; i++) {
		struct tki_string *x = strings[i];
		if (x->domain == d && x->len == len && memcmp(x->s, s, len) == 0) {
			r = x;
			goto out;
		}
	}
	struct tki_string **ss = tkp_grow(strings, &strings_cap,
	                                  nstrings ? nstrings + 1 : 2, sizeof(*ss));
	if (!ss)
		goto out;
	strings = ss;
	if (nstrings == 0)
		strings[nstrings++] = NULL;
	if (len > UINT32_MAX - 1 || !(r = malloc(sizeof(*r) + len + 1)))
		goto out;
	r->id = nstrings;
	r->len = (uint32_t)len;
	r->domain = d;
	memcpy(r->s, s, len);
	r->s[len] = 0;
	r->capture = tki_capture_matches(d, s, len);
	strings[nstrings++] = r;
	tki_buf_name(TKI_NAME_STRING, r->id, d->id, r->s, r->len);
out:
	pthread_mutex_unlock(&reg_lock);
	return r;
}

struct tki_string *
tki_string_by_id(uint32_t id)
{
	pthread_mutex_lock(&reg_lock);
	struct tki_string *r = id && id < nstrings ? strings[id] : NULL;
	pthread_mutex_unlock(&reg_lock);
	return r;
}

void
tki_category_set(uint32_t domain, uint32_t category, const char *name)
{
	if (!name)
		return;
	pthread_mutex_lock(&reg_lock);
	struct category *cs = tkp_grow(categories, &categories_cap,
	                               ncategories + 1, sizeof(*cs));
	if (cs) {
		categories = cs;
		struct category *c = &categories[ncategories];
		if ((c->name = strdup(name))) {
			c->domain = domain;
			c->category = category;
			ncategories++;
			tki_buf_name(TKI_NAME_CATEGORY, domain, category, name,
			             strlen(name));
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

void
tki_category_each(size_t *cursor,
                  void (*fn)(void *arg, const char *domain, uint32_t category,
                             const char *name),
                  void *arg)
{
	pthread_mutex_lock(&reg_lock);
	for (; *cursor < ncategories; (*cursor)++) {
		const struct category *c = &categories[*cursor];
		const struct tki_domain *d = c->domain < ndomains ? domains[c->domain]
		                                                   : &default_domain;
		fn(arg, d->name, c->category, c->name);
	}
	pthread_mutex_unlock(&reg_lock);
}

static void
name_set(int kind, uint64_t key, const char *name)
{
	if (!name)
		return;
	pthread_mutex_lock(&reg_lock);
	struct named *n = NULL;
	for (size_t i = 0; i < nnames; i++)
		if (names[i].kind == kind && names[i].key == key)
			n = &names[i];
	char *copy = strdup(name);
	if (copy && !n) {
		struct named *ns = tkp_grow(names, &names_cap, nnames + 1,
		                            sizeof(*ns));
		if (ns) {
			names = ns;
			n = &names[nnames++];
			n->kind = kind;
			n->key = key;
			n->name = NULL;
		}
	}
	if (n && copy) {
		free(n->name);
		n->name = copy;
		if (kind == 0)
			tki_buf_name(TKI_NAME_THREAD, key, 0, copy, strlen(copy));
	} else {
		free(copy);
	}
	pthread_mutex_unlock(&reg_lock);
}

static int
name_get(int kind, uint64_t key, char *buf, size_t n)
{
	int found = 0;
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < nnames; i++) {
		if (names[i].kind == kind && names[i].key == key) {
			snprintf(buf, n, "%s", names[i].name);
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return found;
}

void
tki_thread_name_set(int64_t tid, const char *name)
{
	name_set(0, (uint64_t)tid, name);
}

int
tki_thread_name_get(int64_t tid, char *buf, size_t n)
{
	return name_get(0, (uint64_t)tid, buf, n);
}

void
tki_resource_name_set(enum tki_resource kind, uint64_t handle, const char *name)
{
	name_set((int)kind, handle, name);
}

int
tki_resource_name_get(enum tki_resource kind, uint64_t handle, char *buf,
                      size_t n)
{
	return name_get((int)kind, handle, buf, n);
}

void
tki_registry_log_all(void)
{
	pthread_mutex_lock(&reg_lock);
	for (uint32_t i = 1; i < ndomains; i++)
		tki_buf_name(TKI_NAME_DOMAIN, i, 0, domains[i]->name,
		             strlen(domains[i]->name));
	for (uint32_t i = 1; i < nstrings; i++)
		tki_buf_name(TKI_NAME_STRING, i, strings[i]->domain->id,
		             strings[i]->s, strings[i]->len);
	for (size_t i = 0; i < ncategories; i++)
		tki_buf_name(TKI_NAME_CATEGORY, categories[i].domain,
		             categories[i].category, categories[i].name,
		             strlen(categories[i].name));
	for (size_t i = 0; i < nnames; i++)
		if (names[i].kind == 0)
			tki_buf_name(TKI_NAME_THREAD, names[i].key, 0, names[i].name,
			             strlen(names[i].name));
	pthread_mutex_unlock(&reg_lock);
}

void
tki_registry_after_fork(void)
{
	pthread_mutex_init(&reg_lock, NULL);
	/* thread ids name threads of the parent */
	size_t k = 0;
	for (size_t i = 0; i < nnames; i++) {
		if (names[i].kind == 0)
			free(names[i].name);
		else
			names[k++] = names[i];
	}
	nnames = k;
}

void
tki_registry_lock(void)
{
	pthread_mutex_lock(&reg_lock);
}

void
tki_registry_unlock(void)
{
	pthread_mutex_unlock(&reg_lock);
}

char *
tki_wide_to_utf8(const wchar_t *w, size_t *len)
{
	if (!w)
		w = L"";
	size_t n = wcslen(w);
	char *s = malloc(n * 4 + 1);
	if (!s)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = (uint32_t)w[i];
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		if (c < 0x80) {
			s[o++] = (char)c;
		} else if (c < 0x800) {
			s[o++] = (char)(0xc0 | c >> 6);
			s[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			s[o++] = (char)(0xe0 | c >> 12);
			s[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			s[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			s[o++] = (char)(0xf0 | c >> 18);
			s[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
			s[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			s[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	s[o] = 0;
	*len = o;
	return s;
}
