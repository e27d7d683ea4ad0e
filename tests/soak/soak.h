/*
 * soak.h -- what the soak's parent (soak.c) and its worker processes
 * (soak_worker.c) share: sizes, key names and the event stream.
 */
#ifndef CXLP_SOAK_H
#define CXLP_SOAK_H

#include <stddef.h>
#include <stdint.h>

#define SOAK_WORKERS_MAX 16
#define SOAK_SHARED 1500          /* shared keys, stored by everyone */
#define SOAK_PRIVATE_MAX (1u << 20) /* private key numbers per worker id */
#define SOAK_PRIVATE_LIVE 400     /* a worker deletes within this window */
#define SOAK_RESTART_GAP 32       /* numbers skipped at each restart */
#define SOAK_PAGE (16u << 10)     /* bytes */
#define SOAK_REGION (2u << 20)    /* bytes */
#define SOAK_EVICT_REGIONS 2 /* --evict: regions per worker, 256 pages,
                              * a fraction of the ~1100 keys a worker
                              * keeps (its share of 1500 shared ones, and
                              * 400 private ones) */

/* The parent's belief about a key. */
enum { K_ABSENT = 0, K_PRESENT = 1, K_MAYBE = 2 };

/* Events a worker writes to its stdout, in the order things happened. */
enum soak_event_type {
	E_STORED_SHARED = 1, /* key acknowledged (stored true) */
	E_STORED_PRIV = 2,   /* private key acknowledged */
	E_DELETING_PRIV = 3, /* a delete of the private key is being sent */
	E_DELETED_PRIV = 4,  /* ... it is gone (deleted, or was not there) */
	E_KEPT_PRIV = 5,     /* ... it was refused: the key is still there */
	E_UNKNOWN_PRIV = 6,  /* store or delete outcome unknown */
	E_STATS = 7,         /* a struct soak_stats follows; worker is idle */
};

struct soak_event {
	uint8_t type; /* enum soak_event_type */
	uint8_t pad[3];
	uint32_t key; /* shared key index, or private key number */
};

/* A worker's page accounting when it stops (from cxlp_stats). */
struct soak_stats {
	uint64_t pages_total, pages_free, pages_allocated, pages_registered;
	uint64_t pages_unresolved, own_regions;
};

/* Key names and the key number each one's page pattern encodes. */
void soak_shared_key(char *out, size_t n, uint32_t i);
void soak_private_key(char *out, size_t n, unsigned worker, uint32_t i);
uint32_t soak_private_id(unsigned worker, uint32_t i);

/* The hostile prober and newcomers of `cxlp-soak --hostile` (hostile.c). */
const char *const *hostile_server_args(void);
int hostile_start(const char *ipc_url);
int hostile_stop(void);

/* soak_worker -- main of `cxlp-soak --worker URL ID SEED NEXT`. */
int soak_worker(int argc, char **argv);

#endif /* CXLP_SOAK_H */
