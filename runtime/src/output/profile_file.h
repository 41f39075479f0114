/* The JSON of one file of the profile, and the counters of one layer (profile_file.c). */
#ifndef IOTUNE_PROFILE_FILE_H
#define IOTUNE_PROFILE_FILE_H

#include <stdio.h>

#include "output/profile_build.h"

/* The layers' names, as the profile's keys. */
extern const char *const layer_names[IOT_NLAYERS];

/* A layer's counters, with the keys counters.tsv gives them in that layer. */
void write_counters(FILE *f, iot_clayer l, const iot_counters *c);

/* One file of the job as a JSON object (first: no comma before it). */
void write_file(FILE *f, const iot_reduced *x, int first);

#endif
