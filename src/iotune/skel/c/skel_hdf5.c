/* HDF5 files: groups, datasets and hyperslab writes (the native method on an HDF5 file and
 * the hdf5 method), and the element sizes the other methods need. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdio.h>
#include <string.h>

/* A descriptor's number type: its name as the file stores it (float32 is the machine's own order;
 * float32be and the like big-endian, as netCDF-4 stores its variables). */
static hid_t type_of(const char *t, size_t *size)
{
    static const struct {
        const char *name;
        size_t size;
    } types[] = {{"float32", 4}, {"float64", 8}, {"int8", 1},   {"int16", 2},  {"int32", 4},
                 {"int64", 8},   {"uint8", 1},   {"uint16", 2}, {"uint32", 4}, {"uint64", 8}};
    hid_t ids[] = {H5T_NATIVE_FLOAT,  H5T_NATIVE_DOUBLE, H5T_NATIVE_INT8,  H5T_NATIVE_INT16,
                   H5T_NATIVE_INT32,  H5T_NATIVE_INT64,  H5T_NATIVE_UINT8, H5T_NATIVE_UINT16,
                   H5T_NATIVE_UINT32, H5T_NATIVE_UINT64};
    hid_t be[] = {H5T_IEEE_F32BE, H5T_IEEE_F64BE, H5T_STD_I8BE,  H5T_STD_I16BE, H5T_STD_I32BE,
                  H5T_STD_I64BE,  H5T_STD_U8BE,   H5T_STD_U16BE, H5T_STD_U32BE, H5T_STD_U64BE};
    size_t n = strlen(t);
    int big = n > 2 && strcmp(t + n - 2, "be") == 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strncmp(types[i].name, t, big ? n - 2 : n) == 0 &&
            types[i].name[big ? n - 2 : n] == '\0') {
            *size = types[i].size;
            return big ? be[i] : ids[i];
        }
    *size = 1;
    return H5T_NATIVE_UINT8;
}

/* The memory type a write or read of a dataset of type t goes through: the machine's own
 * number type for a number stored in the other byte order (HDF5 converts, as it does for the
 * application, which holds its numbers in its own order), else t itself. */
hid_t skel_mem_type(hid_t t)
{
    H5T_class_t c = H5Tget_class(t);
    if ((c != H5T_INTEGER && c != H5T_FLOAT) || H5Tget_order(t) == H5Tget_order(H5T_NATIVE_INT))
        return t;
    size_t n = H5Tget_size(t);
    if (c == H5T_FLOAT)
        return n == 4 ? H5T_NATIVE_FLOAT : n == 8 ? H5T_NATIVE_DOUBLE : t;
    int sgn = H5Tget_sign(t) == H5T_SGN_2;
    switch (n) {
    case 1: return sgn ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
    case 2: return sgn ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16;
    case 4: return sgn ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32;
    case 8: return sgn ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
    default: return t;
    }
}

hid_t skel_type_named(const char *name)
{
    size_t size;
    return type_of(name, &size);
}

hid_t skel_type_opaque(long long size)
{
    hid_t t = H5Tcreate(H5T_OPAQUE, (size_t)size);
    if (t < 0)
        skel_die(NULL, "H5Tcreate(H5T_OPAQUE) failed");
    H5Tset_tag(t, "iotune skeleton");
    return t;
}

hid_t skel_type_compound(long long size, int n, const char *const *names, const char *const *types,
                         const long long *offsets)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, (size_t)size);
    if (t < 0)
        skel_die(NULL, "H5Tcreate(H5T_COMPOUND) failed");
    for (int i = 0; i < n; i++)
        if (H5Tinsert(t, names[i], (size_t)offsets[i], skel_type_named(types[i])) < 0)
            skel_die(NULL, "H5Tinsert failed");
    return t;
}

/* Types the skeleton made (opaque, compound) are its to close; native ones are not. */
static int owned_type(hid_t t)
{
    H5T_class_t c = H5Tget_class(t);
    return c == H5T_OPAQUE || c == H5T_COMPOUND;
}

void skel_close_types(skel_file_t *f)
{
    for (int i = 0; i < f->ndsets; i++)
        if (owned_type(f->dsets[i].type))
            H5Tclose(f->dsets[i].type);
}

static void set_filters(skel_t *s, hid_t dcpl, const char *filters)
{
    for (const char *p = filters; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == 7 && strncmp(p, "shuffle", n) == 0)
            H5Pset_shuffle(dcpl);
        else if (n == 10 && strncmp(p, "fletcher32", n) == 0)
            H5Pset_fletcher32(dcpl);
        else if (n == 9 && strncmp(p, "deflate=", 8) == 0 && p[8] >= '0' && p[8] <= '9')
            H5Pset_deflate(dcpl, (unsigned)(p[8] - '0'));
        else
            skel_die(s, "unknown filter");
        p += n + (p[n] == ',');
    }
}

int skel_is_hdf5(skel_file_t *f)
{
    return f->s->method == SKEL_M_HDF5 || (f->s->method == SKEL_NATIVE && f->api == SKEL_HDF5);
}

void skel_group(skel_file_t *f, const char *pattern, long long step)
{
    if (!skel_is_hdf5(f) || f->api != SKEL_HDF5 || f->s->sizing)
        return;
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, f->s->rank);
    double t0 = skel_now();
    if (H5Lexists(f->h5, name, H5P_DEFAULT) <= 0) {
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        hid_t g = H5Gcreate2(f->h5, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        H5Pclose(lcpl);
        if (g < 0)
            skel_die(f->s, "H5Gcreate failed");
        H5Gclose(g);
    }
    skel_add(f->s, T_WRITE, t0);
}

void skel_delete(skel_file_t *f, const char *pattern, long long step)
{
    if (!skel_is_hdf5(f) || f->api != SKEL_HDF5 || f->s->sizing)
        return;
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, f->s->rank);
    double t0 = skel_now(); /* a link the skeleton did not make (not traced): nothing to do */
    if (H5Lexists(f->h5, name, H5P_DEFAULT) > 0 && H5Ldelete(f->h5, name, H5P_DEFAULT) < 0)
        skel_die(f->s, "H5Ldelete failed");
    /* the datasets kept open at that path or under it are gone: a dataset made again there
     * (at the next step of a file open over the steps) is made anew, not written through the
     * handle of the deleted one */
    size_t len = strlen(name);
    int kept = 0;
    for (int k = 0; k < f->ndsets; k++) {
        const char *at = f->dsets[k].name;
        if (strncmp(at, name, len) == 0 && (at[len] == 0 || at[len] == '/')) {
            if (f->dsets[k].id >= 0)
                H5Dclose(f->dsets[k].id);
            if (owned_type(f->dsets[k].type))
                H5Tclose(f->dsets[k].type);
        } else if (kept++ != k)
            f->dsets[kept - 1] = f->dsets[k];
    }
    f->ndsets = kept;
    skel_add(f->s, T_WRITE, t0);
}

/* The application's fill value: hex digits, two per byte of one element of type t. */
static void set_fill_value(skel_t *s, hid_t dcpl, hid_t t, const char *hex)
{
    unsigned char value[256];
    size_t n = H5Tget_size(t);
    if (n == 0 || n > sizeof value || strlen(hex) != 2 * n)
        skel_die(s, "a fill value of another size than its dataset's element");
    for (size_t i = 0; i < n; i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            skel_die(s, "a fill value that is not hex");
        value[i] = (unsigned char)byte;
    }
    if (H5Pset_fill_value(dcpl, t, value) < 0)
        skel_die(s, "H5Pset_fill_value failed");
}

void skel_anonymous(skel_file_t *f)
{
    f->anonymous = 1;
}

void skel_dataset(skel_file_t *f, const char *pattern, long long step, hid_t t, int nd,
                  const long long *dims, const long long *maxdims, const long long *chunks,
                  const char *filters, int alloc_time, int fill_time, const char *fill_value,
                  int track_times, int attr_order)
{
    int anonymous = f->anonymous;
    f->anonymous = 0;
    if (f->api != SKEL_HDF5) {
        if (owned_type(t))
            H5Tclose(t);
        return;
    }
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, f->s->rank);
    /* made at an earlier step of a file open over the steps (a dataset without a step number,
     * written at every step): its handle is used again (it was created again, and failed) */
    for (int k = 0; k < f->ndsets; k++)
        if (strcmp(f->dsets[k].name, name) == 0) {
            if (owned_type(t))
                H5Tclose(t);
            return;
        }
    skel_dataset_room(f, name);
    if (!skel_is_hdf5(f) || f->s->sizing) { /* element sizes only */
        snprintf(f->dsets[f->ndsets].name, sizeof f->dsets[0].name, "%s", name);
        f->dsets[f->ndsets].id = -1;
        f->dsets[f->ndsets++].type = t;
        return;
    }
    if (nd < 1 || nd > 32)
        skel_die(f->s, "a dataset of more than 32 dimensions");
    hsize_t d[32], mx[32], ch[32];
    for (int i = 0; i < nd; i++) {
        if (dims[i] < 0 || (chunks && chunks[i] < 1))
            skel_die(f->s, "a negative dimension or a chunk below 1 for these parameters");
        d[i] = (hsize_t)dims[i];
        mx[i] = maxdims ? (maxdims[i] < 0 ? H5S_UNLIMITED : (hsize_t)maxdims[i]) : d[i];
        if (chunks)
            ch[i] = (hsize_t)chunks[i];
    }
    double t0 = skel_now();
    hid_t space = H5Screate_simple(nd, d, mx);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (chunks)
        H5Pset_chunk(dcpl, nd, ch);
    set_filters(f->s, dcpl, filters);
    if (alloc_time >= 0)
        H5Pset_alloc_time(dcpl, (H5D_alloc_time_t)alloc_time);
    if (fill_time >= 0)
        H5Pset_fill_time(dcpl, (H5D_fill_time_t)fill_time);
    if (fill_value)
        set_fill_value(f->s, dcpl, t, fill_value);
    if (track_times == 0)
        H5Pset_obj_track_times(dcpl, 0);
    if (attr_order >= 0)
        H5Pset_attr_creation_order(dcpl, (unsigned)attr_order);
    hid_t id = anonymous ? H5Dcreate_anon(f->h5, t, space, dcpl, H5P_DEFAULT)
                         : H5Dcreate2(f->h5, name, t, space, lcpl, dcpl, H5P_DEFAULT);
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    if (id < 0)
        skel_die(f->s, "H5Dcreate failed");
    skel_add(f->s, T_WRITE, t0);
    snprintf(f->dsets[f->ndsets].name, sizeof f->dsets[0].name, "%s", name);
    f->dsets[f->ndsets].id = id;
    f->dsets[f->ndsets].type = t;
    f->ndsets++;
}

void skel_h5_write(skel_file_t *f, hid_t id, hid_t type, size_t esize, int nd, const hsize_t *start,
                   const hsize_t *count, int collective, int active)
{
    skel_t *s = f->s;
    int coll = skel_transfer_of(s, collective) && f->comm == MPI_COMM_WORLD;
    if (!active && !coll)
        return;
    long long n = 1;
    for (int i = 0; i < nd; i++)
        n = skel_imul(n, (long long)count[i]);
    if (!active)
        n = 0;
    n = skel_imul(n, (long long)esize) / (long long)esize; /* the bytes fit too */
    const char *data = skel_data_for(s, (size_t)n * esize);
    if (s->sizing)
        return;
    double t0 = skel_now();
    hid_t fspace = H5Dget_space(id);
    /* memory shaped like the selection, as applications do: HDF5 takes its faster paths
     * when both selections have the same shape */
    hsize_t one = 1;
    hid_t mspace =
        active && n > 0 ? H5Screate_simple(nd, count, NULL) : H5Screate_simple(1, &one, NULL);
    if (active && n > 0)
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    else {
        H5Sselect_none(fspace);
        H5Sselect_none(mspace);
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    herr_t rc = H5Dwrite(id, type, mspace, fspace, dxpl, data);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(fspace);
    if (rc < 0)
        skel_die(s, "H5Dwrite failed");
    skel_add(s, T_WRITE, t0);
    s->bytes = skel_iadd(s->bytes, n * (long long)esize);
}

void skel_write(skel_file_t *f, const char *pattern, long long step, int nd, const long long *start,
                const long long *count, int collective, int active)
{
    skel_t *s = f->s;
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, s->rank);
    if (nd < 1 || nd > 32)
        skel_die(s, "a dataset of more than 32 dimensions");
    long long n = 1;
    for (int i = 0; i < nd; i++) {
        if (start[i] < 0 || count[i] < 0)
            skel_die(s, "a negative selection start or count for these parameters");
        n = skel_imul(n, count[i]);
    }
    if (skel_is_hdf5(f)) {
        int k = f->ndsets - 1;
        while (k >= 0 && strcmp(f->dsets[k].name, name) != 0)
            k--;
        if (k < 0)
            skel_die(s, "write to a dataset that was not created");
        hsize_t st[32], ct[32];
        for (int i = 0; i < nd; i++) {
            st[i] = (hsize_t)start[i];
            ct[i] = (hsize_t)count[i];
        }
        size_t esize = H5Tget_size(f->dsets[k].type);
        skel_h5_write(f, f->dsets[k].id, skel_mem_type(f->dsets[k].type), esize, nd, st, ct,
                      collective, active);
        return;
    }
    /* other methods see a dataset write as its bytes */
    size_t esize = 1;
    for (int k = f->ndsets - 1; k >= 0; k--)
        if (strcmp(f->dsets[k].name, name) == 0)
            esize = H5Tget_size(f->dsets[k].type);
    skel_write_bytes(f, -1, active ? skel_imul(n, (long long)esize) : 0, collective, active);
}
