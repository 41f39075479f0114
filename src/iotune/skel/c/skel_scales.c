/* Dimension scales (the descriptor's set_scale, attach_scale and detach_scale entries): made
 * with the high-level library's H5DS calls, as the application made them, so that HDF5 writes
 * the same CLASS, NAME, DIMENSION_LIST and REFERENCE_LIST attributes (object references) and
 * reads what it reads to make them. Built, and libhdf5_hl linked, only in a skeleton whose
 * descriptor has such entries (the Makefile). Other methods: none. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <hdf5_hl.h>
#include <string.h>

/* The open dataset of pattern in this step. */
static hid_t dataset_id(skel_file_t *f, const char *pattern, long long step)
{
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, f->s->rank);
    int k = f->ndsets - 1;
    while (k >= 0 && strcmp(f->dsets[k].name, name) != 0)
        k--;
    if (k < 0 || f->dsets[k].id < 0)
        skel_die(f->s, "a dimension scale call on a dataset neither created nor opened");
    return f->dsets[k].id;
}

static int applies(skel_file_t *f)
{
    return skel_is_hdf5(f) && f->api == SKEL_HDF5 && !f->s->sizing;
}

void skel_set_scale(skel_file_t *f, const char *pattern, long long step, long long name_size)
{
    if (!applies(f))
        return;
    hid_t id = dataset_id(f, pattern, step);
    char name[1025];
    if (name_size < 0 || name_size > (long long)sizeof name)
        skel_die(f->s, "a dimension scale's name of more than 1024 bytes");
    if (name_size > 0) { /* the application's name is not known: one of its size */
        memset(name, 'x', (size_t)name_size - 1);
        name[name_size - 1] = '\0';
    }
    double t0 = skel_now();
    if (H5DSset_scale(id, name_size > 0 ? name : NULL) < 0)
        skel_die(f->s, "H5DSset_scale failed");
    skel_add(f->s, T_WRITE, t0);
}

void skel_attach_scale(skel_file_t *f, const char *pattern, const char *scale, long long step,
                       long long dim, int attach)
{
    if (!applies(f))
        return;
    hid_t id = dataset_id(f, pattern, step), sid = dataset_id(f, scale, step);
    if (dim < 0 || dim >= 32)
        skel_die(f->s, "a dimension scale attached to a dimension past 32");
    double t0 = skel_now();
    herr_t rc = attach ? H5DSattach_scale(id, sid, (unsigned)dim)
                       : H5DSdetach_scale(id, sid, (unsigned)dim);
    if (rc < 0)
        skel_die(f->s, attach ? "H5DSattach_scale failed" : "H5DSdetach_scale failed");
    skel_add(f->s, T_WRITE, t0);
}

static herr_t no_visit(hid_t did, unsigned dim, hid_t scale, void *data)
{
    (void)did, (void)dim, (void)scale, (void)data;
    return 0;
}

void skel_lookup_scales(skel_file_t *f, const char *pattern, long long step, int kind,
                        long long dim, int active)
{
    if (!applies(f) || !active)
        return;
    hid_t id = dataset_id(f, pattern, step);
    if (dim < 0 || dim >= 32)
        skel_die(f->s, "a dimension scale lookup past dimension 32");
    double t0 = skel_now();
    if (kind == 0)
        H5DSis_scale(id);
    else if (kind == 1)
        H5DSget_num_scales(id, (unsigned)dim);
    else
        H5DSiterate_scales(id, (unsigned)dim, NULL, no_visit, NULL);
    skel_add(f->s, T_READ, t0);
}
