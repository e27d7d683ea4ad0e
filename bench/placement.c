/*
 * placement.c -- which CPUs the bench's processes run on (--server-cpus,
 * --client-cpus).
 *
 * Why: on a small box the metaserver, nng's threads on both sides and the
 * handlers all share the same cores, and where the scheduler puts them
 * moves the server's CPU per request by a third (bench/README.md). A run
 * can pin the server side (the metaserver it starts, the echo server) to
 * one CPU list and itself with its handler processes to another, so both
 * placements can be measured by the same program. An affinity is set with
 * sched_setaffinity on a process before it starts threads, so every
 * thread it creates later (nng's included) inherits it; children inherit
 * it across fork and exec.
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* One item of a list: N or N-M; *p is left after it. 0 or -1. */
static int
cpus_item(const char **p, cpu_set_t *set)
{
	unsigned long lo, hi;
	char *end;

	if (!isdigit((unsigned char)**p)) {
		return -1;
	}
	lo = hi = strtoul(*p, &end, 10);
	if (*end == '-') {
		if (!isdigit((unsigned char)end[1])) {
			return -1;
		}
		hi = strtoul(end + 1, &end, 10);
	}
	if (lo > hi || hi >= CPU_SETSIZE) {
		return -1;
	}
	for (unsigned long c = lo; c <= hi; c++) {
		CPU_SET(c, set);
	}
	*p = end;
	return 0;
}

/* The CPUs of list in set; 0, or -1 with the reason in why. */
static int
cpus_syntax(const char *list, cpu_set_t *set, char *why, size_t n)
{
	const char *p = list;

	CPU_ZERO(set);
	for (;;) {
		if (cpus_item(&p, set) != 0) {
			snprintf(why, n, "CPU list \"%s\": expected N or N-M "
			    "items (N <= M < %d) separated by commas", list,
			    CPU_SETSIZE);
			return -1;
		}
		if (*p == '\0') {
			break;
		}
		if (*p++ != ',') {
			snprintf(why, n, "CPU list \"%s\": unexpected '%c'",
			    list, p[-1]);
			return -1;
		}
	}
	return 0;
}

/* cpus_parse -- see bench.h */
int
cpus_parse(const char *list, cpu_set_t *set, char *why, size_t n)
{
	cpu_set_t allowed;

	if (cpus_syntax(list, set, why, n) != 0) {
		return -1;
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
		snprintf(why, n, "sched_getaffinity: %s", strerror(errno));
		return -1;
	}
	CPU_AND(&allowed, &allowed, set);
	if (!CPU_EQUAL(&allowed, set)) {
		snprintf(why, n, "CPU list \"%s\": not every CPU in it is "
		    "online and allowed to this process", list);
		return -1;
	}
	return 0;
}

/* cpus_apply -- see bench.h */
int
cpus_apply(const char *list)
{
	cpu_set_t set;
	char why[160];

	if (cpus_syntax(list, &set, why, sizeof(why)) != 0) {
		fprintf(stderr, "cxlpool-bench: %s\n", why);
		return -1;
	}
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "cxlpool-bench: CPU list \"%s\": "
		    "sched_setaffinity: %s\n", list, strerror(errno));
		return -1;
	}
	return 0;
}

/* cpus_of -- see bench.h */
int
cpus_of(pid_t pid, char *buf, size_t n)
{
	static const char key[] = "Cpus_allowed_list:";
	char path[64], line[256];
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	while (rc != 0 && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, key, sizeof(key) - 1) == 0) {
			char *v = line + sizeof(key) - 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(buf, n, "%s", v);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}
