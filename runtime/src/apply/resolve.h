/* The settings that apply to one file, resolved once when it is opened: its name is matched
 * against every rule of the control file once, and what applies to the file and to each of
 * its datasets is then taken from that set. */
#ifndef IOTUNE_RESOLVE_H
#define IOTUNE_RESOLVE_H

#include "config/settings.h"

typedef struct {
    iot_settings set;                   /* copies of the entries whose FileName matches */
    const iot_entry *file[IOT_P_COUNT]; /* each parameter's winning file-wide entry, or NULL */
    const char *name;                   /* the file name matched (set.entries own a copy) */
} iot_file_settings;

/* The settings of s that apply to file, or NULL when none does (or out of memory). */
iot_file_settings *iot_resolve(const iot_settings *s, const char *file);
void iot_resolved_free(iot_file_settings *fs);

/* The entry of param for dataset (a full path) of the file: a dataset rule that matches it,
 * else the file-wide one, by the precedence of iot_settings_find. NULL-safe. */
const iot_entry *iot_resolved_for(const iot_file_settings *fs, int param, const char *dataset);

/* The file-wide entry of param, or NULL. NULL-safe. */
static inline const iot_entry *iot_resolved_file(const iot_file_settings *fs, int param)
{
    return fs ? fs->file[param] : NULL;
}

/* What the runtime knows of an open HDF5 file. */
typedef struct {
    int mpio;                 /* opened with the MPI-IO driver */
    int leader;               /* this rank reports for the file (rank 0 of its communicator) */
    iot_file_settings *rules; /* the settings that apply to it, or NULL */
    int tuned; /* its datasets get HDF5 settings: the MPI-IO driver, or sec2 with serial_files */
    /* 1: created in this run (H5Fcreate: empty) and no space freed in it since, so that the
     * space HDF5 allocates was never written; 0: opened, or not known; -1: space was freed in
     * it (an object or attribute deleted, a dataset shrunk), which HDF5 hands out again with
     * its old bytes (fill_time=never: fill_guard.c) */
    int fresh;
} iot_file_info;

/* Remembers and recalls the files opened (by name, as H5Fget_name reports it); forget once
 * per close. Remembering hands info->rules over to the table (freed at the last close). */
void iot_files_remember(const char *name, const iot_file_info *info);
void iot_files_forget(const char *name);
iot_file_info iot_files_lookup(const char *name);

/* Space may have been freed in a file: every file open now is marked (iot_file_info.fresh
 * -1). The name a deletion was made on does not tell which file's space it freed: it reaches
 * another file through a mount point or an external link, and a file opened twice (a second
 * name, a link to it) shares its space (an outside tester: 4086 elements of a deleted dataset
 * read back in a new one each way). */
void iot_files_space_freed(void);

#endif
