/*
 * devscan.c -- the parts of DAX discovery that need no library: picking
 * a device by path (devscan_find, devscan_match) and finding where an
 * fsdax namespace is mounted (devscan_mountinfo, a parser over the text
 * of /proc/self/mountinfo). They are kept apart from devscan_daxctl.c so
 * that tests exercise them on machines with no DAX hardware, which is
 * where the libraries find nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cxlpool.h"
#include "devscan.h"
#include "err.h"

#define MOUNTINFO_LINE 4096 /* longer lines are skipped */
#define MOUNTINFO_MAX (1u << 20) /* bytes of mountinfo read */

/* devscan_kind_name -- see devscan.h */
const char *
devscan_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		[DEVSCAN_DEVDAX] = "devdax",
		[DEVSCAN_FSDAX] = "fsdax",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] :
	    "unknown";
}

/* devscan_match -- see devscan.h */
long
devscan_match(const struct devscan_dev *devs, size_t n, const char *path,
    uint64_t devno)
{
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(devs[i].path, '/');

		base = base != NULL ? base + 1 : devs[i].path;
		if (strcmp(devs[i].path, path) == 0 ||
		    strcmp(base, path) == 0 ||
		    (devno != 0 && devs[i].devno == devno)) {
			return (long)i;
		}
	}
	return -1;
}

/* undo mountinfo's octal escapes (\040 for a space) into out[0..n) */
static void
unescape(const char *s, char *out, size_t n)
{
	size_t j = 0;

	while (*s != '\0' && j + 1 < n) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			out[j++] = (char)((s[1] - '0') << 6 |
			    (s[2] - '0') << 3 | (s[3] - '0'));
			s += 4;
		} else {
			out[j++] = *s++;
		}
	}
	out[j] = '\0';
}

/* a comma-separated option list names dax (or dax=always) */
static bool
opts_dax(const char *opts)
{
	size_t len;

	while (*opts != '\0') {
		len = strcspn(opts, ",");
		if ((len == 3 && strncmp(opts, "dax", 3) == 0) ||
		    (len == 10 && strncmp(opts, "dax=always", 10) == 0)) {
			return true;
		}
		opts += len + (opts[len] == ',');
	}
	return false;
}

/* one line: 1 if it mounts devno; fields are ID, parent, maj:min, root,
 * mount point, options, optional fields up to "-", fstype, source,
 * superblock options */
static int
parse_line(char *line, uint64_t devno, char *mnt, size_t n, bool *dax)
{
	char *tok[64], *save = NULL, *t;
	unsigned maj, min;
	int nt = 0, dash = -1;

	for (t = strtok_r(line, " ", &save); t != NULL && nt < 64;
	    t = strtok_r(NULL, " ", &save)) {
		if (dash < 0 && nt >= 6 && strcmp(t, "-") == 0) {
			dash = nt;
		}
		tok[nt++] = t;
	}
	if (nt < 6 || sscanf(tok[2], "%u:%u", &maj, &min) != 2 ||
	    makedev(maj, min) != devno) {
		return 0;
	}
	unescape(tok[4], mnt, n);
	*dax = opts_dax(tok[5]) ||
	    (dash > 0 && dash + 3 < nt && opts_dax(tok[dash + 3]));
	return 1;
}

/* devscan_mountinfo -- see devscan.h */
int
devscan_mountinfo(const char *text, uint64_t devno, char *mnt, size_t n,
    bool *dax)
{
	char line[MOUNTINFO_LINE];
	size_t len;

	*dax = false;
	if (n > 0) {
		mnt[0] = '\0';
	}
	while (devno != 0 && *text != '\0') {
		len = strcspn(text, "\n");
		if (len < sizeof(line)) {
			memcpy(line, text, len);
			line[len] = '\0';
			if (parse_line(line, devno, mnt, n, dax)) {
				return 1;
			}
		}
		text += len + (text[len] == '\n');
	}
	return 0;
}

/* devscan_mount_lookup -- see devscan.h */
void
devscan_mount_lookup(struct devscan_dev *d)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *text;
	size_t len;

	d->mount[0] = '\0';
	d->mount_dax = false;
	if (f == NULL) {
		return;
	}
	if ((text = malloc(MOUNTINFO_MAX)) != NULL) {
		len = fread(text, 1, MOUNTINFO_MAX - 1, f);
		text[len] = '\0';
		devscan_mountinfo(text, d->devno, d->mount, sizeof(d->mount),
		    &d->mount_dax);
		free(text);
	}
	fclose(f);
}

/* the device number path stands for: a device's own, or for a file the
 * device it lives on (0 if path does not exist) */
static uint64_t
path_devno(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		return 0;
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		return st.st_rdev;
	}
	return st.st_dev;
}

/* devscan_find -- see devscan.h */
int
devscan_find(const char *path, struct devscan_dev *out)
{
	struct devscan_dev *devs;
	char names[200] = "";
	size_t n = 0, len = 0;
	long i;
	int rc;

	if ((devs = calloc(DEVSCAN_MAX, sizeof(*devs))) == NULL) {
		return cxlp_fail(-ENOMEM, "devscan: no memory");
	}
	if ((rc = devscan_list(devs, DEVSCAN_MAX, &n)) != 0) {
		goto out;
	}
	n = n < DEVSCAN_MAX ? n : DEVSCAN_MAX;
	if ((i = devscan_match(devs, n, path, path_devno(path))) >= 0) {
		*out = devs[i];
		goto out;
	}
	for (size_t j = 0; j < n && len < sizeof(names); j++) {
		len += (size_t)snprintf(names + len, sizeof(names) - len,
		    "%s%s", j ? ", " : "", devs[j].path);
	}
	rc = cxlp_fail(CXLP_E_NOTFOUND, "%s: not a DAX device or fsdax file "
	    "(found %zu: %s)", path, n, n ? names : "none");
out:
	free(devs);
	return rc;
}
