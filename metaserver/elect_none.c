/*
 * elect_none.c -- the election in a build without libcurl or libcjson
 * (meson found neither): every entry point refuses, with the reason and
 * the remedy, so that --elect fails at the command line, never later.
 */
#include <errno.h>
#include <stddef.h>

#include "elect.h"
#include "err.h"

#define ELECT_NONE_WHY "this cxlpool-metaserver was built without the " \
	"election (--elect needs libcurl and libcjson at build time: " \
	"apt-get install libcurl4-openssl-dev libcjson-dev, then rebuild)"

/* elect_available -- see elect.h. */
bool
elect_available(void)
{
	return false;
}

/* elect_check_spec -- see elect.h. */
int
elect_check_spec(const char *spec)
{
	return cxlp_fail(-ENOTSUP, "--elect %s: %s", spec, ELECT_NONE_WHY);
}

/* elect_start -- see elect.h. */
int
elect_start(struct elect **out, const struct elect_cfg *cfg,
    const struct elect_cbs *cbs)
{
	*out = NULL;
	return cxlp_fail(-ENOTSUP, "%s", ELECT_NONE_WHY);
}

/* elect_stop -- see elect.h. */
void
elect_stop(struct elect **e)
{
	*e = NULL;
}

/* elect_may_write -- see elect.h: never leader. */
bool
elect_may_write(const struct elect *e)
{
	return false;
}

/* elect_status -- see elect.h. */
void
elect_status(const struct elect *e, struct elect_status *st)
{
	*st = (struct elect_status){ 0 };
}

/* elect_standbys -- see elect.h: none. */
unsigned
elect_standbys(const struct elect *e, struct elect_standby *out,
    unsigned max)
{
	return 0;
}

/* elect_test_hold -- see elect.h. */
void
elect_test_hold(struct elect *e, bool hold)
{
}
