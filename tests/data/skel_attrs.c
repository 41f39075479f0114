/* An HDF5 program written for the skeleton tests: attributes as applications make them
 * (netCDF-4 with H5Acreate1, h5py and most C codes with H5Acreate2), on the root group, on a
 * group and on a dataset: numbers (one stored big-endian), fixed-size and variable-length
 * strings, a null dataspace; written with H5Awrite, renamed (H5Arename, H5Arename_by_name) and
 * deleted (H5Adelete, H5Adelete_by_name, H5Adelete_by_idx); calls that fail (a NULL name, an
 * invalid location) must fail as they do without iotune. Every rank writes its rows of a 2-D
 * dataset. Then every rank opens the file again and reads attributes back (H5Aexists,
 * H5Aopen_by_name, H5Aopen_idx, H5Aiterate2, H5Aread) before its rows. The file is made as netCDF-4
 * makes its own: format bounds (V18, LATEST), no times in object headers, link and attribute
 * creation order tracked and indexed (the file's and the dataset's), flushed (H5Fflush) after its
 * attributes. Usage: skel_attrs [ROWS_PER_RANK] */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define COLS 5

static void check(int ok)
{
    if (!ok)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

/* An attribute of type t and nd dimensions (-1: a null dataspace) written with buf. */
static void attribute(hid_t a, hid_t t, const void *buf)
{
    check(a >= 0);
    check(H5Awrite(a, t, buf) >= 0);
    H5Aclose(a);
}

static hid_t space_of(int nd, const hsize_t *dims)
{
    return nd < 0    ? H5Screate(H5S_NULL)
           : nd == 0 ? H5Screate(H5S_SCALAR)
                     : H5Screate_simple(nd, dims, NULL);
}

static herr_t count_attribute(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)loc, (void)name, (void)info;
    ++*(int *)data;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hsize_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 4;
    double *data = malloc(sizeof(double) * rows * COLS);
    for (hsize_t i = 0; i < rows * COLS; i++)
        data[i] = (double)i + rank;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(fcpl, 0);
    H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    H5Pset_attr_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    H5Pset_obj_track_times(dcpl, 0);
    H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    hid_t file = H5Fcreate("attrs.h5", H5F_ACC_TRUNC, fcpl, fapl);
    hid_t grp = H5Gcreate2(file, "/grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {rows * size, COLS};
    hid_t fspace = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(grp, "data", H5T_IEEE_F64LE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(dset >= 0);

    /* the root: a fixed-size string (H5Acreate1, as netCDF-4) and integers (H5Acreate2) */
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 23);
    const char title[23] = "attributes of a test";
    hid_t scalar = space_of(0, NULL);
    attribute(H5Acreate1(file, "title", str, scalar, H5P_DEFAULT), str, title);
    hsize_t three = 3, two[2] = {2, 2}, pair = 2;
    hid_t s3 = space_of(1, &three);
    const int version[3] = {1, 2, 3};
    attribute(H5Acreate2(file, "version", H5T_STD_I32LE, s3, H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_INT, version);
    /* the group: a variable-length string, a double by name, a null dataspace */
    hid_t vstr = H5Tcopy(H5T_C_S1);
    H5Tset_size(vstr, H5T_VARIABLE);
    const char *units = "metres per second";
    attribute(H5Acreate2(grp, "units", vstr, scalar, H5P_DEFAULT, H5P_DEFAULT), vstr, &units);
    const double scale = 0.5;
    attribute(H5Acreate_by_name(file, "/grp", "scale", H5T_IEEE_F64LE, scalar, H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_DOUBLE, &scale);
    hid_t null = space_of(-1, NULL);
    attribute(H5Acreate2(grp, "empty", H5T_IEEE_F32LE, null, H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_FLOAT, &scale);
    /* the dataset: big-endian doubles (H5Acreate1), 2-D shorts renamed, one deleted */
    hid_t s2 = space_of(1, &pair);
    const double range[2] = {-1.0, 1.0};
    attribute(H5Acreate1(dset, "valid_range", H5T_IEEE_F64BE, s2, H5P_DEFAULT), H5T_NATIVE_DOUBLE,
              range);
    hid_t s22 = space_of(2, two);
    const short counts[4] = {1, 2, 3, 4};
    attribute(H5Acreate2(dset, "old_name", H5T_STD_I16LE, s22, H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_SHORT, counts);
    check(H5Arename(dset, "old_name", "new_name") >= 0);
    attribute(H5Acreate2(dset, "temp", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_INT, version);
    check(H5Adelete(dset, "temp") >= 0);
    attribute(H5Acreate2(grp, "gone", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_INT, version);
    check(H5Adelete_by_name(file, "/grp", "gone", H5P_DEFAULT) >= 0);
    attribute(H5Acreate2(grp, "by_index", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT),
              H5T_NATIVE_INT, version); /* the first of /grp's attributes by name */
    check(H5Adelete_by_idx(file, "/grp", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT) >= 0);
    check(H5Arename_by_name(file, "/", "version", "format_version", H5P_DEFAULT) >= 0);
    check(H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0);
    /* what fails without iotune fails with it, the same way */
    H5E_BEGIN_TRY
    {
        check(H5Acreate2(grp, NULL, H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT) < 0);
        check(H5Acreate2(H5I_INVALID_HID, "x", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT) <
              0);
        check(H5Acreate1(grp, "units", vstr, scalar, H5P_DEFAULT) < 0); /* exists already */
        check(H5Arename(dset, "no_such", "other") < 0);
        check(H5Arename(dset, NULL, "other") < 0);
        check(H5Adelete(grp, NULL) < 0);
        check(H5Adelete_by_name(file, NULL, "x", H5P_DEFAULT) < 0);
        check(H5Adelete_by_idx(file, "/grp", H5_INDEX_NAME, H5_ITER_INC, 99, H5P_DEFAULT) < 0);
        check(H5Awrite(H5I_INVALID_HID, H5T_NATIVE_INT, version) < 0);
        check(H5Aopen(grp, "no_such", H5P_DEFAULT) < 0);
        check(H5Aexists(H5I_INVALID_HID, "x") < 0);
    }
    H5E_END_TRY

    /* every rank's rows */
    hsize_t start[2] = {rank * rows, 0}, count[2] = {rows, COLS};
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mspace = H5Screate_simple(2, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    check(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, data) >= 0);
    H5Dclose(dset);
    H5Gclose(grp);
    H5Fclose(file);

    /* read back: looked up, opened by name and by index, read */
    file = H5Fopen("attrs.h5", H5F_ACC_RDONLY, fapl);
    dset = H5Dopen2(file, "/grp/data", H5P_DEFAULT);
    check(H5Aexists(file, "title") > 0 &&
          H5Aexists_by_name(file, "/grp", "gone", H5P_DEFAULT) == 0);
    char *got = NULL;
    hid_t a = H5Aopen_by_name(file, "/grp", "units", H5P_DEFAULT, H5P_DEFAULT);
    check(H5Aread(a, vstr, &got) >= 0 && got && strcmp(got, units) == 0);
    H5Dvlen_reclaim(vstr, scalar, H5P_DEFAULT, &got);
    H5Aclose(a);
    int n = 0;
    check(H5Aiterate2(dset, H5_INDEX_NAME, H5_ITER_INC, NULL, count_attribute, &n) >= 0 && n == 2);
    a = H5Aopen_idx(dset, 0); /* the first stored: valid_range */
    double back[4];
    check(H5Aread(a, H5T_NATIVE_DOUBLE, back) >= 0 && back[1] == 1.0);
    H5Aclose(a);
    a = H5Aopen(file, "format_version", H5P_DEFAULT);
    int v[3];
    check(H5Aread(a, H5T_NATIVE_INT, v) >= 0 && v[2] == 3);
    H5Aclose(a);
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    check(H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, data) >= 0);
    check(data[1] == 1.0 + rank);
    H5Dclose(dset);
    H5Fclose(file);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(fspace);
    H5Sclose(s22);
    H5Sclose(s2);
    H5Sclose(s3);
    H5Sclose(null);
    H5Sclose(scalar);
    H5Tclose(vstr);
    H5Tclose(str);
    H5Pclose(dcpl);
    H5Pclose(fcpl);
    H5Pclose(fapl);
    free(data);
    MPI_Finalize();
    return 0;
}
