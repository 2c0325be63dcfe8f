/* Test helper: an independent well-formedness checker for the SVG the
 * plots write (balanced tags, one root, quoted attributes without '<',
 * valid entity references, no duplicate attributes, valid UTF-8), and a
 * reader of one element's attributes by id. Header-only so each test
 * program can include it (test-svg.c, test-roofline.c). */
#ifndef MOEPLAN_TESTS_SVG_CHECK_H
#define MOEPLAN_TESTS_SVG_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static inline bool svg_is_name_start(char c)
{
	return c == '_' || c == ':' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (unsigned char)c >= 0x80;
}

static inline bool svg_is_name_char(char c)
{
	return svg_is_name_start(c) || c == '-' || c == '.' || (c >= '0' && c <= '9');
}

static inline bool svg_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Length of a valid entity reference at s ('&...;'), or 0. */
static inline size_t svg_entity_len(const char *s)
{
	static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
	for (size_t i = 0; i < 5; i++) {
		if (strncmp(s, named[i], strlen(named[i])) == 0) {
			return strlen(named[i]);
		}
	}
	if (s[1] != '#') {
		return 0;
	}
	size_t i = 2;
	bool hex = s[2] == 'x';
	if (hex) {
		i++;
	}
	size_t start = i;
	while ((s[i] >= '0' && s[i] <= '9') ||
	       (hex && ((s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))) {
		i++;
	}
	return i > start && s[i] == ';' ? i + 1 : 0;
}

static inline bool svg_valid_utf8(const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	while (*s) {
		size_t len = *s < 0x80 ? 1 : (*s >> 5) == 0x6 ? 2 : (*s >> 4) == 0xE ? 3 : (*s >> 3) == 0x1E ? 4 : 0;
		if (len == 0 || (*s >= 0x80 && *s < 0xC2)) {
			return false;
		}
		for (size_t i = 1; i < len; i++) {
			if ((s[i] & 0xC0) != 0x80) {
				return false;
			}
		}
		if (*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r') {
			return false;
		}
		s += len;
	}
	return true;
}

static inline bool svg_well_formed(const char *s)
{
	char stack[64][64];
	size_t depth = 0;
	bool root_seen = false;
	if (!svg_valid_utf8(s)) {
		return false;
	}
	if (strncmp(s, "<?xml", 5) == 0) {
		const char *e = strstr(s, "?>");
		if (!e) {
			return false;
		}
		s = e + 2;
	}
	while (*s) {
		if (*s != '<') {
			if (*s == '&') {
				size_t n = svg_entity_len(s);
				if (n == 0) {
					return false;
				}
				s += n;
				continue;
			}
			if (depth == 0 && !svg_is_space(*s)) {
				return false;
			}
			s++;
			continue;
		}
		if (strncmp(s, "<!--", 4) == 0) {
			const char *e = strstr(s + 4, "-->");
			if (!e) {
				return false;
			}
			s = e + 3;
			continue;
		}
		if (s[1] == '!' || s[1] == '?') {
			return false;
		}
		bool closing = s[1] == '/';
		s += closing ? 2 : 1;
		if (!svg_is_name_start(*s)) {
			return false;
		}
		const char *name = s;
		while (svg_is_name_char(*s)) {
			s++;
		}
		size_t name_len = (size_t)(s - name);
		if (name_len >= 64) {
			return false;
		}
		if (closing) {
			while (svg_is_space(*s)) {
				s++;
			}
			if (*s != '>' || depth == 0 || strlen(stack[depth - 1]) != name_len ||
			    strncmp(stack[depth - 1], name, name_len) != 0) {
				return false;
			}
			depth--;
			s++;
			continue;
		}
		if (depth == 0 && root_seen) {
			return false;
		}
		root_seen = true;
		char attrs[32][64];
		size_t n_attrs = 0;
		for (;;) {
			bool space = false;
			while (svg_is_space(*s)) {
				s++;
				space = true;
			}
			if (*s == '>' || (s[0] == '/' && s[1] == '>')) {
				break;
			}
			if (!space || !svg_is_name_start(*s)) {
				return false;
			}
			const char *an = s;
			while (svg_is_name_char(*s)) {
				s++;
			}
			size_t an_len = (size_t)(s - an);
			if (an_len >= 64 || n_attrs >= 32) {
				return false;
			}
			for (size_t i = 0; i < n_attrs; i++) {
				if (strlen(attrs[i]) == an_len && strncmp(attrs[i], an, an_len) == 0) {
					return false;
				}
			}
			memcpy(attrs[n_attrs], an, an_len);
			attrs[n_attrs++][an_len] = '\0';
			while (svg_is_space(*s)) {
				s++;
			}
			if (*s++ != '=') {
				return false;
			}
			while (svg_is_space(*s)) {
				s++;
			}
			char q = *s++;
			if (q != '"' && q != '\'') {
				return false;
			}
			while (*s && *s != q) {
				if (*s == '<') {
					return false;
				}
				if (*s == '&') {
					size_t n = svg_entity_len(s);
					if (n == 0) {
						return false;
					}
					s += n;
					continue;
				}
				s++;
			}
			if (*s != q) {
				return false;
			}
			s++;
		}
		if (*s == '/') {
			s += 2;
			continue;
		}
		if (depth >= 64) {
			return false;
		}
		memcpy(stack[depth], name, name_len);
		stack[depth++][name_len] = '\0';
		s++;
	}
	return depth == 0 && root_seen;
}

/* The start tag of the element whose id is `id` ("<path ... id=..."), or
 * NULL. */
static inline const char *svg_element(const char *doc, const char *id)
{
	char key[128];
	snprintf(key, sizeof(key), " id=\"%s\"", id);
	const char *at = strstr(doc, key);
	if (!at) {
		return NULL;
	}
	while (at > doc && *at != '<') {
		at--;
	}
	return at;
}

/* The value of attribute `name` of the element whose id is `id` into buf;
 * false when there is no such element or attribute. */
static inline bool svg_attr(const char *doc, const char *id, const char *name, char *buf,
			    size_t size)
{
	const char *el = svg_element(doc, id);
	if (!el) {
		return false;
	}
	char key[64];
	snprintf(key, sizeof(key), " %s=\"", name);
	const char *end = strchr(el, '>');
	const char *at = strstr(el, key);
	if (!at || !end || at > end) {
		return false;
	}
	at += strlen(key);
	size_t n = strcspn(at, "\"");
	if (n >= size) {
		return false;
	}
	memcpy(buf, at, n);
	buf[n] = '\0';
	return true;
}

#endif
