/*
 * main.c -- cxlpool-metaserver: parse the command line, then serve.
 *
 * Everything else lives in the library (config.c parses, server.c
 * serves), so tests link the same code this binary runs.
 */
#include "ms_int.h"

int
main(int argc, char **argv)
{
	struct ms_config cfg;
	int rc = ms_config_parse(&cfg, argc, argv);

	if (rc != 0) {
		return rc == 1 ? 0 : 2;
	}
	return ms_serve(&cfg);
}
