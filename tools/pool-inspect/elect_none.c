/*
 * elect_none.c -- inspect_elect_read in a build without the election
 * (meson found no libcurl or libcjson): --elect is refused with the
 * reason, the rest of pool-inspect works as ever.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

/* inspect_elect_read -- see inspect.h */
void
inspect_elect_read(const char *spec, const char *key,
    struct inspect_elect *e)
{
	memset(e, 0, sizeof(*e));
	e->spec = spec;
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->rc = -ENOTSUP;
	snprintf(e->why, sizeof(e->why), "this pool-inspect was built without "
	    "the election (libcurl and libcjson at build time)");
}
