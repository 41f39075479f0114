/* The ranks' records brought to rank 0 at the end (reduce.c, docs/scale.md): a file several
 * ranks opened is reduced across them with a custom MPI operation, so that rank 0 receives one
 * record per shared file whatever the number of ranks; a file one rank alone opened is gathered,
 * at most IOT_GATHER_MAX records in all, the rest summed into one summary and counted. */
#ifndef IOTUNE_REDUCE_H
#define IOTUNE_REDUCE_H

#include <stdint.h>

#include "capture/capture.h"

#define IOT_LISTED_RANKS 64 /* a file's per-rank values are listed up to this many ranks */
#define IOT_SKETCH 1024     /* distinct files of the job looked at to find the shared ones */
#define IOT_GATHER_MAX 4096 /* records of files one rank opened that rank 0 receives, at most */

#define IOT_PER_RANK_ONE(field, layer, key) +1
enum { IOT_NPR = 0 IOT_COUNTERS_PER_RANK(IOT_PER_RANK_ONE) };
#define IOT_NPR_SLOTS (IOT_NPR > 0 ? IOT_NPR : 1)

typedef struct {
    double max, min, sum;
    int slowest, ranks;
} iot_file_stats; /* per file, of the ranks' times in outermost calls */

/* The counters counters.tsv marks per_rank, per rank that has the file (rank order), while at
 * most IOT_LISTED_RANKS do (listed -1 beyond: only the minimum and maximum remain). */
typedef struct {
    int listed;
    int rank[IOT_LISTED_RANKS];
    uint64_t val[IOT_LISTED_RANKS][IOT_NPR_SLOTS];
    uint64_t min[IOT_NPR_SLOTS], max[IOT_NPR_SLOTS];
} iot_rank_values;

/* One file across the ranks that have it: what the reduction carries and the profile writes. */
typedef struct {
    iot_file_rec rec; /* merged; at rank 0, rec.rank is the file's index in the profile */
    iot_file_stats st;
    iot_rank_values pr;
    int present; /* 0: this rank does not have the file (the reduction's identity) */
    int pad;
    uint64_t files; /* records merged into a summary (files beyond IOT_GATHER_MAX) */
    uint64_t outer_written, outer_read; /* bytes at each record's outermost layer, summed */
} iot_reduced;

/* What rank 0 holds after the reduction, and what it cost. */
typedef struct {
    iot_reduced *files; /* one per file, unordered (profile_build.c sorts them) */
    int nfiles;
    iot_reduced summary; /* files beyond IOT_GATHER_MAX: summary.files of them, counters summed */
    double io_time;      /* the slowest rank's time in outermost calls */
    int shared;          /* files reduced (several ranks) */
    int gathered;        /* records gathered (files of one rank, or beyond the sketch) */
    uint64_t bytes_in;   /* payload rank 0 received: results of the collectives, gathered bytes */
    uint64_t tree_bytes; /* the same with the reductions' binomial tree counted (log2 P stages) */
} iot_job_files;

/* Collective over comm: fills *out on rank 0 (other ranks: zeros). MPI_COMM_NULL: this process's
 * records alone. Returns 0, or -1 on every rank when rank 0 ran out of memory. */
int iot_reduce_files(MPI_Comm comm, iot_job_files *out);
void iot_job_files_free(iot_job_files *j);

/* into merged with r (r of a later rank, or another file): counters combined, the first
 * non-empty names and hints kept. */
void iot_rec_merge(iot_file_rec *into, const iot_file_rec *r);
/* Adds a record's bytes at its outermost layer (stdio and POSIX side by side). */
void iot_rec_outer_bytes(const iot_file_rec *f, uint64_t *written, uint64_t *read);

/* lo's ranks before hi's: hi becomes lo and hi merged (the reduction's operation). */
void iot_reduced_combine(const iot_reduced *lo, iot_reduced *hi);
/* One rank's record as a reduced file. */
void iot_reduced_from(iot_reduced *x, const iot_file_rec *r);

#endif
