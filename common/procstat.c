/*
 * procstat.c -- the one parser of /proc/<pid>/stat (procstat.h).
 *
 * The handler sends its own start time in HELLO and the metaserver
 * compares it with what /proc says of the pid later, to tell a recycled
 * pid from the handler: had the two sides parsed the file differently
 * (they once did: the handler read field 21, itrealvalue, always 0), a
 * live handler would be taken for dead, or a dead one never found out.
 * So both call this file. Fields are counted from the last ')', since
 * comm, in parentheses, may hold spaces and parentheses itself, and each
 * field is stepped over as a word, whatever its type. The boot's id is
 * here too: with a pid, what names a process or a file on one host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procstat.h"

#define STARTTIME_FIELD 22

/* procstat_parse -- see procstat.h */
bool
procstat_parse(const char *buf, char *state, uint64_t *start_time)
{
	unsigned long long v;
	const char *p = strrchr(buf, ')');
	char st;

	/* after ") " come field 3 (state) .. field 22 (starttime) */
	if (p == NULL || sscanf(p + 1, " %c", &st) != 1) {
		return false;
	}
	for (int field = 2; field < STARTTIME_FIELD && p != NULL; field++) {
		p = strchr(p + 1, ' ');
	}
	if (p == NULL || sscanf(p + 1, "%llu", &v) != 1) {
		return false;
	}
	*state = st;
	*start_time = v;
	return true;
}

/* procstat_read -- see procstat.h */
bool
procstat_read(uint64_t pid, char *state, uint64_t *start_time)
{
	char path[64], buf[1024];
	size_t n;
	FILE *f;

	if (pid == 0) {
		snprintf(path, sizeof(path), "/proc/self/stat");
	} else {
		snprintf(path, sizeof(path), "/proc/%llu/stat",
		    (unsigned long long)pid);
	}
	if ((f = fopen(path, "r")) == NULL) {
		return false;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return procstat_parse(buf, state, start_time);
}

/* A simulated host (CXLP_SIM_HOST other than "0": pool/sim.h) is a
 * host of its own, with a boot of its own: its name is mixed in, so
 * that every check that tells hosts apart by their boot tells these
 * apart too. */
static uint64_t
sim_host_mix(uint64_t h)
{
	const char *sim = getenv("CXLP_SIM_HOST");

	if (sim == NULL || sim[0] == '\0' || strcmp(sim, "0") == 0) {
		return h;
	}
	h = (h ^ '/') * 0x100000001b3ull;
	for (const char *c = sim; *c != '\0'; c++) {
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	}
	return h;
}

/* procstat_boot_hash -- see procstat.h */
uint64_t
procstat_boot_hash(void)
{
	char buf[64];
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f == NULL) {
		return 0;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n == 0) {
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		h = (h ^ (uint8_t)buf[i]) * 0x100000001b3ull;
	}
	h = sim_host_mix(h);
	return h != 0 ? h : 1;
}
