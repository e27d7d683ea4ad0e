/*
 * json_check.h -- a tiny strict JSON validator for tests of tools that
 * print JSON (RFC 8259 grammar; strings must be valid UTF-8 without raw
 * control bytes). json_valid(text) is true iff text is one JSON value
 * with only whitespace around it. No python needed at test time.
 */
#ifndef CXLP_TEST_JSON_CHECK_H
#define CXLP_TEST_JSON_CHECK_H

#include <stdbool.h>
#include <string.h>

static bool jc_value(const char **s, int depth);

static void
jc_ws(const char **s)
{
	while (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r') {
		(*s)++;
	}
}

static bool
jc_lit(const char **s, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*s, lit, n) != 0) {
		return false;
	}
	*s += n;
	return true;
}

static bool
jc_utf8(const char **s)
{
	const unsigned char *p = (const unsigned char *)*s;
	int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 3 : p[0] >= 0xe0 ? 2 :
	    p[0] >= 0xc2 ? 1 : -1;

	if (n < 0 || p[0] > 0xf4) {
		return false;
	}
	for (int i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			return false;
		}
	}
	*s += n + 1;
	return true;
}

static bool
jc_string(const char **s)
{
	if (**s != '"') {
		return false;
	}
	for ((*s)++; **s != '"'; ) {
		unsigned char c = (unsigned char)**s;

		if (c < 0x20) {
			return false;
		} else if (c == '\\') {
			(*s)++;
			if (**s == 'u') {
				for (int i = 1; i <= 4; i++) {
					if (!strchr("0123456789abcdefABCDEF",
					    (*s)[i]) || (*s)[i] == '\0') {
						return false;
					}
				}
				*s += 5;
			} else if (**s != '\0' && strchr("\"\\/bfnrt", **s)) {
				(*s)++;
			} else {
				return false;
			}
		} else if (c >= 0x80) {
			if (!jc_utf8(s)) {
				return false;
			}
		} else {
			(*s)++;
		}
	}
	(*s)++;
	return true;
}

static bool
jc_number(const char **s)
{
	const char *p = *s;

	if (*p == '-') {
		p++;
	}
	if (*p == '0') {
		p++;
	} else if (*p >= '1' && *p <= '9') {
		while (*p >= '0' && *p <= '9') {
			p++;
		}
	} else {
		return false;
	}
	if (*p == '.') {
		if (*++p < '0' || *p > '9') {
			return false;
		}
		while (*p >= '0' && *p <= '9') {
			p++;
		}
	}
	if (*p == 'e' || *p == 'E') {
		p += p[1] == '+' || p[1] == '-' ? 2 : 1;
		if (*p < '0' || *p > '9') {
			return false;
		}
		while (*p >= '0' && *p <= '9') {
			p++;
		}
	}
	*s = p;
	return true;
}

/* '{' members '}' or '[' values ']' */
static bool
jc_container(const char **s, int depth, char close)
{
	(*s)++;
	jc_ws(s);
	if (**s == close) {
		(*s)++;
		return true;
	}
	for (;;) {
		jc_ws(s);
		if (close == '}') {
			if (!jc_string(s)) {
				return false;
			}
			jc_ws(s);
			if (*(*s)++ != ':') {
				return false;
			}
		}
		if (!jc_value(s, depth + 1)) {
			return false;
		}
		jc_ws(s);
		if (**s == ',') {
			(*s)++;
		} else {
			return *(*s)++ == close;
		}
	}
}

static bool
jc_value(const char **s, int depth)
{
	if (depth > 64) {
		return false;
	}
	jc_ws(s);
	switch (**s) {
	case '{':
		return jc_container(s, depth, '}');
	case '[':
		return jc_container(s, depth, ']');
	case '"':
		return jc_string(s);
	case 't':
		return jc_lit(s, "true");
	case 'f':
		return jc_lit(s, "false");
	case 'n':
		return jc_lit(s, "null");
	default:
		return jc_number(s);
	}
}

/* json_valid -- text is exactly one JSON value (whitespace around). */
static inline bool
json_valid(const char *text)
{
	const char *s = text;

	if (!jc_value(&s, 0)) {
		return false;
	}
	jc_ws(&s);
	return *s == '\0';
}

#endif /* CXLP_TEST_JSON_CHECK_H */
