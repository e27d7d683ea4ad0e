/*
 * c_reader.c -- a plain C handler that the Python binding's tests use as
 * the "other side": it retrieves one key and writes its bytes to stdout.
 *
 * The Python tests write a chunk through a page's memoryview and store it;
 * if this separate C process, which shares nothing with Python but the
 * pool, reads back exactly those bytes, then the bytes went straight into
 * the shared page (the store call carries no data, only a page handle).
 *
 * Usage: c_reader URL KEY
 * Exit status: 0 bytes written, 2 key not found, 1 any other error
 * (message on stderr).
 */
#include <stdio.h>
#include <string.h>

#include "cxlpool.h"

static int
read_key(struct cxlp_handler *h, const char *key)
{
	const void *data = NULL;
	size_t len = 0;
	int rc;

	rc = cxlp_retrieve(h, key, strlen(key), 0, &data, &len);
	if (rc == CXLP_E_NOTFOUND) {
		return 2;
	}
	if (rc != 0) {
		fprintf(stderr, "c_reader: retrieve: %s: %s\n",
		    cxlp_strerror(rc), cxlp_errormsg());
		return 1;
	}
	if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
		perror("c_reader: write");
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: c_reader URL KEY\n");
		return 1;
	}
	if (cxlp_config_new(&cfg) != 0 ||
	    cxlp_config_set_server(cfg, argv[1]) != 0) {
		fprintf(stderr, "c_reader: config: %s\n", cxlp_errormsg());
		cxlp_config_delete(&cfg);
		return 1;
	}
	rc = cxlp_connect(&h, cfg);
	cxlp_config_delete(&cfg);
	if (rc != 0) {
		fprintf(stderr, "c_reader: connect: %s: %s\n",
		    cxlp_strerror(rc), cxlp_errormsg());
		return 1;
	}
	rc = read_key(h, argv[2]);
	cxlp_close(&h);
	return rc;
}
