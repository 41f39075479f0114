/* Resource bounds: what a setting costs (src/iotune/data/costs.tsv, one definition with the
 * Python side's iotune.costs) and whether that fits the machine. Pure: the budget comes from
 * the caller (budget.c in the runtime, the shared vectors in iotune-parse). */
#ifndef IOTUNE_BOUNDS_H
#define IOTUNE_BOUNDS_H

#include <stddef.h>

#include "config/values.h"
#include "params_gen.h"

typedef enum { IOT_RES_NONE = 0, IOT_RES_MEMORY, IOT_RES_DISK } iot_resource;

/* One row of the cost table. */
typedef struct {
    iot_resource resource;
    const char *per; /* "dataset", "file", "object": what pays the cost once */
    int item;        /* the number of the value that costs; -1: the product of all */
    double factor;   /* bytes per unit */
    double share;    /* the setting may take at most 1/share of the budget */
    const char *why; /* what is paid, in words */
} iot_cost_def;

/* What the machine allows. A negative amount is unknown: nothing is judged against it. */
typedef struct {
    double memory;         /* bytes of memory this process may count on */
    char memory_what[200]; /* where that comes from, e.g. "cgroup memory.max 2 GiB / 2 ranks" */
    double disk;           /* free bytes on the file system of the file */
    char disk_what[200];   /* e.g. "free on the file system of /scratch" */
} iot_budget;

/* The cost row of param, or NULL when it costs nothing the bounds know. */
const iot_cost_def *iot_cost_of(int param);

/* The bytes a value of param costs (elem: bytes per element, for chunk dimensions; 1 when not
 * known), 0 when it costs nothing. */
double iot_cost(int param, const iot_value *v, double elem);

/* 1 when cost bytes of param exceed its share of the budget, with one message in why
 * ("NAME=VALUE would cost ... : withdrawn"); 0 when it fits (or the budget is unknown). */
int iot_bounds_exceeds(int param, const char *name, const char *value, double cost,
                       const iot_budget *b, char *why, size_t len);

/* The message of iot_bounds_exceeds without the setting, the words on what is paid and the
 * verdict, for the profile's records: "would cost 8 GiB of memory per open dataset, more than
 * 1/16 of 4 GiB (RLIMIT_DATA 4 GiB)". */
const char *iot_bounds_brief(const char *why, char *buf, size_t len);

/* A byte count for people: "8 GiB", "1.5 GiB", "512 bytes". */
const char *iot_format_bytes(double n, char *buf, size_t len);

/* The buffers of one open file (HDF5 file access settings and MPI-IO hints, each under its own
 * limit) may cost together at most 1/IOT_FILE_TOTAL_SHARE of the memory budget. */
#define IOT_FILE_TOTAL_SHARE 4

/* Whether a file's buffers costing total bytes together exceed that; why then says that the
 * setting name=value (costing cost) is withdrawn. */
int iot_bounds_total_exceeds(const char *name, const char *value, double cost, double total,
                             const iot_budget *b, char *why, size_t len);

#endif
