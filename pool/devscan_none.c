/*
 * devscan_none.c -- DAX device discovery for builds without libdaxctl:
 * there are no devices to list. Kept as its own file so that no #ifdef
 * lands inside a function (PMDK's _none pattern).
 */
#include "devscan.h"

/* devscan_list -- finds nothing; always 0 */
int
devscan_list(struct devscan_dev *out, size_t max, size_t *found)
{
	(void)out;
	(void)max;
	*found = 0;
	return 0;
}
