#include "apply_mpiio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "fstype.h"

/* Keeps a hint unless this MPI's info objects cannot hold its key or value (the registry's
 * limits fit MPICH's; another MPI may have smaller ones): then it is dropped, with one
 * warning per process. */
static void collect(void *ctx, const iot_entry *e)
{
    iot_mpiio_hints *l = ctx;
    if (strlen(e->name) > MPI_MAX_INFO_KEY || strlen(e->value.text) > MPI_MAX_INFO_VAL) {
        char where[96];
        if (iot_world_rank() == 0)
            iot_warn_once("info-limits",
                          "hint %s [%s] NOT applied: longer than this MPI's info keys (%d) or "
                          "values (%d) may be; later ones like it are dropped without a word",
                          e->name, iot_origin(e, where, sizeof where), MPI_MAX_INFO_KEY,
                          MPI_MAX_INFO_VAL);
        return;
    }
    l->hint[l->n++] = e;
}

/* The application's info with the control file's hints on top (the control file wins). */
static MPI_Info merged_info(iot_mpiio_hints *l, MPI_Info app)
{
    MPI_Info info;
    if (app == MPI_INFO_NULL ? MPI_Info_create(&info) : MPI_Info_dup(app, &info))
        return MPI_INFO_NULL;
    size_t used = 0, nlen = sizeof l->notes;
    for (int i = 0; i < l->n; i++) {
        char old[MPI_MAX_INFO_VAL + 1];
        int had = 0;
        if (app != MPI_INFO_NULL)
            MPI_Info_get(app, l->hint[i]->name, MPI_MAX_INFO_VAL, old, &had);
        if (had && strcmp(old, l->hint[i]->value.text) != 0 && used < nlen)
            used += (size_t)snprintf(l->notes + used, nlen - used,
                                     "\n%s=%s overrides the application's %s", l->hint[i]->name,
                                     l->hint[i]->value.text, old);
        MPI_Info_set(info, l->hint[i]->name, l->hint[i]->value.text);
    }
    return info;
}

MPI_Info iot_mpiio_merge(const iot_settings *s, const char *filename, MPI_Info app,
                         iot_mpiio_hints *h)
{
    h->hint = NULL;
    h->n = 0;
    h->notes[0] = '\0';
    if (s && (h->hint = malloc((size_t)s->count * sizeof *h->hint)))
        iot_settings_each_hint(s, filename, collect, h);
    return h->n ? merged_info(h, app) : MPI_INFO_NULL;
}

void iot_mpiio_done(iot_mpiio_hints *h, MPI_Info *merged)
{
    if (*merged != MPI_INFO_NULL)
        MPI_Info_free(merged);
    free(h->hint);
    h->hint = NULL;
}

void iot_mpiio_report(const char *filename, MPI_File fh, const iot_mpiio_hints *l)
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
        snprintf(line + used, sizeof line - used, "%s", l->notes);
    iot_log_block(header, line);
}

void iot_mpiio_read_hints(MPI_File fh, char *hints, size_t size)
{
    MPI_Info info;
    int nkeys = 0;
    if (PMPI_File_get_info(fh, &info) != MPI_SUCCESS)
        return;
    MPI_Info_get_nkeys(info, &nkeys);
    size_t used = 0;
    for (int i = 0; i < nkeys && used < size; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
        if (flag && !strchr(val, '\n'))
            used += (size_t)snprintf(hints + used, size - used, "%s=%s\n", key, val);
    }
    char *last = used >= size ? strrchr(hints, '\n') : NULL;
    if (used >= size) /* never keep half a line */
        *(last ? last : hints) = '\0';
    MPI_Info_free(&info);
}
