/*
 * err.c -- error names, the thread-local "why" message, and panics.
 *
 * Every failure is reported twice: as a code the caller can switch on and
 * as a sentence the operator can read. The sentence lives in a
 * _Thread_local buffer set at the failing line (PMDK's errormsg), so it
 * costs nothing on success and never races between threads.
 *
 * The buffer has an exported name (cxlp_errmsg_buf_, not part of the
 * API) rather than a static one. A program that loads libcxlpool.so and
 * also links this file itself (our test programs: the pool library and
 * the test support use the codec) holds two copies; with one exported
 * name the dynamic linker binds the library's copy to the program's
 * buffer, so the program's cxlp_errormsg() shows why a libcxlpool call
 * failed too. With a static buffer it read its own, empty one.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "err.h"

__attribute__((visibility("default"))) _Thread_local char
    cxlp_errmsg_buf_[256];

static const char *const names[] = {
	[-(CXLP_E_BADMAGIC) - 1000] = "CXLP_E_BADMAGIC: not a cxlpool pool",
	[-(CXLP_E_VERSION) - 1000] = "CXLP_E_VERSION: version mismatch",
	[-(CXLP_E_CHECKSUM) - 1000] = "CXLP_E_CHECKSUM: checksum mismatch",
	[-(CXLP_E_CORRUPT) - 1000] = "CXLP_E_CORRUPT: pool metadata corrupt",
	[-(CXLP_E_NOSPACE) - 1000] = "CXLP_E_NOSPACE: no space left",
	[-(CXLP_E_NOTFOUND) - 1000] = "CXLP_E_NOTFOUND: key not found",
	[-(CXLP_E_PINNED) - 1000] = "CXLP_E_PINNED: key is pinned",
	[-(CXLP_E_NOTPINNED) - 1000] = "CXLP_E_NOTPINNED: no pin held",
	[-(CXLP_E_PERM) - 1000] = "CXLP_E_PERM: not the owner",
	[-(CXLP_E_BOUNDS) - 1000] = "CXLP_E_BOUNDS: location out of bounds",
	[-(CXLP_E_PROTO) - 1000] = "CXLP_E_PROTO: malformed frame",
	[-(CXLP_E_BADOP) - 1000] = "CXLP_E_BADOP: unknown operation",
	[-(CXLP_E_KEYLEN) - 1000] = "CXLP_E_KEYLEN: bad key length",
	[-(CXLP_E_BATCH) - 1000] = "CXLP_E_BATCH: bad batch size",
	[-(CXLP_E_SESSION) - 1000] = "CXLP_E_SESSION: unknown session or token",
	[-(CXLP_E_TIMEOUT) - 1000] = "CXLP_E_TIMEOUT: no reply in time",
	[-(CXLP_E_CLOSED) - 1000] = "CXLP_E_CLOSED: handler closed",
	[-(CXLP_E_CONN) - 1000] = "CXLP_E_CONN: cannot reach the metaserver",
	[-(CXLP_E_BADPAGE) - 1000] = "CXLP_E_BADPAGE: page not allocated here",
	[-(CXLP_E_STALE) - 1000] = "CXLP_E_STALE: pool from an earlier boot, or "
	    "not the file the metaserver serves",
	[-(CXLP_E_BUSY) - 1000] = "CXLP_E_BUSY: page already registered",
	[-(CXLP_E_TOOBIG) - 1000] = "CXLP_E_TOOBIG: value larger than page",
	[-(CXLP_E_UNKNOWN) - 1000] = "CXLP_E_UNKNOWN: outcome unknown",
	[-(CXLP_E_CHANGED) - 1000] = "CXLP_E_CHANGED: key changed since "
	    "retrieve, copy may be bad",
	[-(CXLP_E_NOVERSION) - 1000] = "CXLP_E_NOVERSION: no version to "
	    "check, retrieve pinned",
	[-(CXLP_E_GROUP) - 1000] = "CXLP_E_GROUP: request group refused",
	[-(CXLP_E_CANCELED) - 1000] = "CXLP_E_CANCELED: request group "
	    "rolled back",
	[-(CXLP_E_HOST) - 1000] = "CXLP_E_HOST: the pool serves one host, "
	    "not this one",
};

const char *
cxlp_strerror(int err)
{
	if (err == 0) {
		return "success";
	}
	if (err <= -1000 && err >= CXLP_E_LAST) {
		return names[-err - 1000];
	}
	if (err < 0 && err > -1000) {
		return strerror(-err);
	}
	return "unknown error";
}

const char *
cxlp_errormsg(void)
{
	return cxlp_errmsg_buf_;
}

void
cxlp_errmsg_clear(void)
{
	cxlp_errmsg_buf_[0] = '\0';
}

/* Formatted into a copy first: a caller may pass cxlp_errormsg() as an
 * argument (the reason of the failure it wraps), and vsnprintf into the
 * buffer it reads from is undefined (seen: the metaserver's --elect
 * message came out with its own start repeated where the reason was). */
int
cxlp_fail(int err, const char *fmt, ...)
{
	char msg[sizeof(cxlp_errmsg_buf_)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(cxlp_errmsg_buf_, msg, sizeof(msg));
	return err;
}

void
cxlp_panic(const char *file, int line, const char *what)
{
	fprintf(stderr, "cxlpool: %s:%d: assertion failed: %s\n", file, line,
	    what);
	abort();
}

void
cxlp_panic_eq(const char *file, int line, const char *a, const char *b,
    unsigned long long va, unsigned long long vb)
{
	fprintf(stderr, "cxlpool: %s:%d: %s == %s failed: %llu != %llu\n",
	    file, line, a, b, va, vb);
	abort();
}
