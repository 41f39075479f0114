/* Interposed MPI calls: MPI_Init* loads the control file collectively; MPI_File_open merges
 * the control file's hints into the application's (also for HDF5's own opens). */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "fstype.h"

IOT_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        iot_load(MPI_COMM_WORLD);
    return rc;
}

IOT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        iot_load(MPI_COMM_WORLD);
    return rc;
}

#define IOT_MAX_HINTS 64

typedef struct {
    const iot_entry *hint[IOT_MAX_HINTS];
    int n;
} hint_list;

static void collect(void *ctx, const iot_entry *e)
{
    hint_list *l = ctx;
    if (l->n < IOT_MAX_HINTS)
        l->hint[l->n++] = e;
}

/* The application's info with the control file's hints on top (the control file wins). */
static MPI_Info merged_info(const hint_list *l, MPI_Info app, char *notes, size_t nlen)
{
    MPI_Info info;
    if (app == MPI_INFO_NULL ? MPI_Info_create(&info) : MPI_Info_dup(app, &info))
        return MPI_INFO_NULL;
    size_t used = 0;
    for (int i = 0; i < l->n; i++) {
        char old[MPI_MAX_INFO_VAL + 1];
        int had = 0;
        if (app != MPI_INFO_NULL)
            MPI_Info_get(app, l->hint[i]->name, MPI_MAX_INFO_VAL, old, &had);
        if (had && strcmp(old, l->hint[i]->value.text) != 0 && used < nlen)
            used += (size_t)snprintf(notes + used, nlen - used,
                                     "\n%s=%s overrides the application's %s", l->hint[i]->name,
                                     l->hint[i]->value.text, old);
        MPI_Info_set(info, l->hint[i]->name, l->hint[i]->value.text);
    }
    return info;
}

/* Verbose report: each requested hint and what ROMIO actually kept. */
static void report_hints(const char *filename, MPI_File fh, const hint_list *l, const char *notes)
{
    char fs[64], line[8192];
    iot_fstype(filename, fs, sizeof fs);
    MPI_Info got = MPI_INFO_NULL;
    PMPI_File_get_info(fh, &got);
    size_t used = 0;
    for (int i = 0; i < l->n && used < sizeof line; i++) {
        const iot_entry *e = l->hint[i];
        char val[MPI_MAX_INFO_VAL + 1], where[96];
        int flag = 0;
        if (got != MPI_INFO_NULL)
            MPI_Info_get(got, e->name, MPI_MAX_INFO_VAL, val, &flag);
        const char *verdict = !flag                             ? "NOT in effect: dropped by MPI-IO"
                              : strcmp(val, e->value.text) == 0 ? "in effect"
                                                                : "NOT in effect: MPI-IO uses ";
        if (flag && e->layer == IOT_LAYER_FS && !iot_fs_stripes(fs) &&
            strncmp(e->name, "striping", 8) == 0)
            verdict = "echoed by MPI-IO but without effect on this file system";
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s=%s (%s%s) [%s]",
                                 i ? "\n" : "", e->name, e->value.text, verdict,
                                 flag && strcmp(val, e->value.text) != 0 ? val : "",
                                 iot_origin(e, where, sizeof where));
    }
    if (got != MPI_INFO_NULL)
        MPI_Info_free(&got);
    char header[1200];
    snprintf(header, sizeof header, "MPI_File_open %s on %s: mpi-io hints%s", filename, fs,
             l->n ? ":" : ": nothing to apply");
    if (used < sizeof line)
        snprintf(line + used, sizeof line - used, "%s", notes);
    iot_log_block(header, line);
}

IOT_EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                             MPI_File *fh)
{
    const iot_settings *s = filename ? iot_active() : NULL;
    if (!s)
        return PMPI_File_open(comm, filename, amode, info, fh);
    hint_list l = {.n = 0};
    iot_settings_each_hint(s, filename, collect, &l);
    char notes[1024] = "";
    MPI_Info use = l.n ? merged_info(&l, info, notes, sizeof notes) : MPI_INFO_NULL;
    int rc = PMPI_File_open(comm, filename, amode, use != MPI_INFO_NULL ? use : info, fh);
    if (use != MPI_INFO_NULL)
        MPI_Info_free(&use);
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rc == MPI_SUCCESS && iot_g.verbose && rank == 0)
        report_hints(filename, *fh, &l, notes);
    return rc;
}
