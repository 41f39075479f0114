/* Attributes of HDF5 files (the descriptor's files[].attributes): created on their object after
 * the step's datasets, of zeros, so that the skeleton's file has the original's attributes
 * (name, type, extent); their values are not the application's. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdlib.h>

hid_t skel_type_string(long long size, H5T_str_t pad, H5T_cset_t cset)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, size > 0 ? (size_t)size : H5T_VARIABLE) < 0 ||
        H5Tset_strpad(t, pad) < 0 || H5Tset_cset(t, cset) < 0)
        skel_die(NULL, "a string type could not be made");
    return t;
}

/* An attribute's type made for the call (string, opaque, compound) is closed after it; the
 * predefined ones are HDF5's own. */
void skel_close_attr_type(hid_t t)
{
    H5T_class_t c = H5Tget_class(t);
    if (c == H5T_STRING || c == H5T_OPAQUE || c == H5T_COMPOUND)
        H5Tclose(t);
}

void skel_attribute(skel_file_t *f, const char *on, long long step, const char *name, hid_t t,
                    int nd, const long long *dims)
{
    if (!skel_is_hdf5(f) || f->api != SKEL_HDF5 || f->s->sizing) {
        skel_close_attr_type(t);
        return;
    }
    char path[1024];
    skel_format_name(path, sizeof path, on, step, f->s->rank);
    double t0 = skel_now();
    hid_t obj = H5Oopen(f->h5, path, H5P_DEFAULT);
    if (obj < 0)
        skel_die(f->s, "H5Oopen of an attribute's object failed");
    if (H5Aexists(obj, name) > 0) { /* a file opened once for all steps: made in step 0 */
        H5Oclose(obj);
        skel_close_attr_type(t);
        return;
    }
    hsize_t d[32];
    size_t n = 1;
    for (int i = 0; i < nd && i < 32; i++) {
        d[i] = (hsize_t)dims[i];
        n *= (size_t)dims[i];
    }
    hid_t space = nd > 0 ? H5Screate_simple(nd, d, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        skel_die(f->s, "H5Acreate failed");
    int vlen = H5Tis_variable_str(t) > 0;
    size_t esize = vlen ? sizeof(char *) : H5Tget_size(t);
    void *zeros = calloc(n > 0 ? n : 1, esize);
    if (!zeros)
        skel_die(f->s, "no memory for an attribute");
    if (vlen)
        for (size_t i = 0; i < n; i++)
            ((const char **)zeros)[i] = "";
    if (n > 0 && H5Awrite(a, t, zeros) < 0)
        skel_die(f->s, "H5Awrite failed");
    free(zeros);
    H5Aclose(a);
    H5Sclose(space);
    H5Oclose(obj);
    skel_close_attr_type(t);
    skel_add(f->s, T_WRITE, t0);
}
