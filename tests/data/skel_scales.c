/* An HDF5 program written for the skeleton tests: numbers stored big-endian and dimension
 * scales, as netCDF-4 stores its variables. Every rank writes its rows of a 2-D field of
 * big-endian doubles (H5T_IEEE_F64BE, from native doubles: HDF5 converts) and of a big-endian
 * 16-bit integer dataset; two 1-D big-endian coordinate datasets become dimension scales
 * (H5DSset_scale, one with a name, one without) attached to the field's dimensions
 * (H5DSattach_scale), and one is attached to the integers and detached again
 * (H5DSdetach_scale). Then every rank opens the file again, finds its datasets as netCDF-4 does
 * (H5Gopen2, H5Literate opening them from its callback, H5Aiterate2 over the attributes), looks
 * up the scales as netCDF-4 does at every open (H5DSis_scale, H5DSget_num_scales,
 * H5DSiterate_scales: they read DIMENSION_LIST, whose references are in the file's global heap)
 * before reading its rows. Links libhdf5_hl. Usage: skel_scales [ROWS_PER_RANK] */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define COLS 6

static hid_t dataset(hid_t file, const char *name, hid_t type, int nd, const hsize_t *dims)
{
    hid_t space = H5Screate_simple(nd, dims, NULL);
    hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sclose(space);
    return d;
}

static void write_rows(hid_t d, hid_t memtype, int rank, hsize_t rows, const void *buf)
{
    hid_t space = H5Dget_space(d);
    hsize_t start[2] = {rank * rows, 0}, count[2] = {rows, COLS};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mspace = H5Screate_simple(2, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    H5Dwrite(d, memtype, mspace, space, dxpl, buf);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(space);
}

static void read_rows(hid_t d, int rank, hsize_t rows, double *buf)
{
    hid_t space = H5Dget_space(d);
    hsize_t start[2] = {rank * rows, 0}, count[2] = {rows, COLS};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mspace = H5Screate_simple(2, count, NULL);
    H5Dread(d, H5T_NATIVE_DOUBLE, mspace, space, H5P_DEFAULT, buf);
    H5Sclose(mspace);
    H5Sclose(space);
}

/* As netCDF-4 finds its variables: the datasets opened from H5Literate's callback. */
static herr_t open_variable(hid_t grp, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    hid_t *opened = data;
    if (strcmp(name, "field") == 0)
        opened[0] = H5Dopen2(grp, name, H5P_DEFAULT);
    else if (strcmp(name, "x") == 0)
        opened[1] = H5Dopen2(grp, name, H5P_DEFAULT);
    return 0;
}

static herr_t skip_attribute(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)loc, (void)name, (void)info, (void)data;
    return 0;
}

static herr_t count_scale(hid_t did, unsigned dim, hid_t scale, void *data)
{
    (void)did, (void)dim, (void)scale;
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
    double *field = malloc(sizeof(double) * rows * COLS);
    short *ints = malloc(sizeof(short) * rows * COLS);
    for (hsize_t i = 0; i < rows * COLS; i++) {
        field[i] = (double)i + rank;
        ints[i] = (short)(i + rank);
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate("scales.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {rows * size, COLS};
    hid_t x = dataset(file, "/x", H5T_STD_I32BE, 1, &dims[0]); /* as netCDF-4 orders them */
    H5DSset_scale(x, "rows");
    hid_t y = dataset(file, "/y", H5T_IEEE_F32BE, 1, &dims[1]);
    H5DSset_scale(y, NULL);
    hid_t f = dataset(file, "/field", H5T_IEEE_F64BE, 2, dims);
    H5DSattach_scale(f, x, 0);
    H5DSattach_scale(f, y, 1);
    hid_t n = dataset(file, "/counts", H5T_STD_I16BE, 2, dims);
    H5DSattach_scale(n, y, 1);
    H5DSdetach_scale(n, y, 1);
    write_rows(f, H5T_NATIVE_DOUBLE, rank, rows, field);
    write_rows(n, H5T_NATIVE_SHORT, rank, rows, ints);
    H5Dclose(n);
    H5Dclose(f);
    H5Dclose(y);
    H5Dclose(x);
    H5Fclose(file);

    /* read back as netCDF-4 opens a file: its variables' scales looked up, then the data */
    file = H5Fopen("scales.h5", H5F_ACC_RDONLY, fapl);
    hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
    hid_t opened[2] = {H5I_INVALID_HID, H5I_INVALID_HID}; /* /field, /x */
    H5Literate(root, H5_INDEX_NAME, H5_ITER_INC, NULL, open_variable, opened);
    H5Gclose(root);
    f = opened[0];
    x = opened[1];
    hsize_t attrs = 0;
    H5Aiterate2(f, H5_INDEX_NAME, H5_ITER_INC, &attrs, skip_attribute, NULL);
    int found = H5DSis_scale(x) > 0 && H5DSis_scale(f) == 0;
    found += H5DSget_num_scales(f, 0);
    H5DSiterate_scales(f, 1, NULL, count_scale, &found);
    if (found != 3)
        MPI_Abort(MPI_COMM_WORLD, 1);
    read_rows(f, rank, rows, field);
    H5Dclose(f);
    H5Dclose(x);
    H5Fclose(file);
    H5Pclose(fapl);
    free(ints);
    free(field);
    MPI_Finalize();
    return 0;
}
