/*
 * procstat.h -- a process's state and start time from /proc/<pid>/stat,
 * parsed one way for the handler (its own start time, sent in HELLO) and
 * the metaserver (is a session's process still the one that said HELLO?).
 * The two must agree, or a live handler is taken for dead.
 */
#ifndef CXLP_PROCSTAT_H
#define CXLP_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>

/* procstat_parse -- the state (field 3) and start time (field 22, clock
 * ticks since boot) from the text of a /proc/<pid>/stat file. comm
 * (field 2) may hold spaces and parentheses: fields are counted from the
 * last ')'. Returns false (outputs untouched) if buf does not parse. */
bool procstat_parse(const char *buf, char *state, uint64_t *start_time);

/* procstat_read -- procstat_parse of /proc/<pid>/stat (pid 0: this
 * process, /proc/self/stat). Returns false if it cannot be read. */
bool procstat_read(uint64_t pid, char *state, uint64_t *start_time);

/* procstat_boot_hash -- a 64-bit hash (FNV-1a) of this boot's id
 * (/proc/sys/kernel/random/boot_id), never 0; 0 if it cannot be read.
 * Two processes with the same value run on one kernel, where st_dev and
 * st_ino name the same files. A simulated host (CXLP_SIM_HOST, other
 * than "0") has its name mixed in: it is another host. */
uint64_t procstat_boot_hash(void);

#endif /* CXLP_PROCSTAT_H */
