/*
 * cline_name.c -- the names of cline.h's methods, shared by every build.
 */
#include "cline.h"

/* cline_method_name -- see cline.h */
const char *
cline_method_name(enum cline_method m)
{
	static const char *const names[] = {
		[CLINE_NONE] = "none",
		[CLINE_CLFLUSH] = "clflush",
		[CLINE_CLFLUSHOPT] = "clflushopt",
		[CLINE_CLWB] = "clwb",
		[CLINE_DC] = "dc",
	};

	if ((unsigned)m >= sizeof(names) / sizeof(names[0])) {
		return "unknown";
	}
	return names[m];
}
