/* An HDF5 program written for the skeleton tests: datasets created together and written after
 * (as HDF5's ph5example does), and a dataset opened twice when the file is opened again to read
 * it back read-write (two handles of one dataset, both read, both closed; HDF5 writes the
 * file's superblock at the close of a file opened so). Every rank writes and reads its
 * rows of each dataset collectively. Usage: skel_order [ROWS_PER_RANK] */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>

#define COLS 6
#define NDSETS 3

static void check(int ok)
{
    if (!ok)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

static hid_t open_file(const char *name, int create)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = create ? H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                     : H5Fopen(name, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    check(f >= 0);
    return f;
}

/* A collective transfer of this rank's rows of dataset d (write, else read). */
static void transfer(hid_t d, int write, hsize_t rows, int rank, double *buf)
{
    hsize_t start[2] = {(hsize_t)rank * rows, 0}, count[2] = {rows, COLS};
    hid_t fspace = H5Dget_space(d), mspace = H5Screate_simple(2, count, NULL);
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    herr_t rc = write ? H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf)
                      : H5Dread(d, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf);
    check(rc >= 0);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(fspace);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hsize_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
    double *buf = malloc(sizeof(double) * rows * COLS);
    check(buf != NULL);
    for (hsize_t i = 0; i < rows * COLS; i++)
        buf[i] = (double)i + rank;
    const char *names[NDSETS] = {"first", "second", "third"};

    /* every dataset created, then every dataset written */
    hid_t f = open_file("order.h5", 1);
    hsize_t dims[2] = {rows * (hsize_t)size, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t d[NDSETS];
    for (int i = 0; i < NDSETS; i++) {
        d[i] = H5Dcreate2(f, names[i], H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                          H5P_DEFAULT);
        check(d[i] >= 0);
    }
    H5Sclose(space);
    for (int i = 0; i < NDSETS; i++)
        transfer(d[i], 1, rows, rank, buf);
    for (int i = 0; i < NDSETS; i++)
        H5Dclose(d[i]);
    H5Fclose(f);

    /* opened again: "first" twice (two handles, both read), "second" once */
    f = open_file("order.h5", 0);
    hid_t a = H5Dopen2(f, "first", H5P_DEFAULT), b = H5Dopen2(f, "first", H5P_DEFAULT);
    hid_t c = H5Dopen2(f, "second", H5P_DEFAULT);
    check(a >= 0 && b >= 0 && c >= 0);
    transfer(a, 0, rows, rank, buf);
    transfer(b, 0, rows, rank, buf);
    transfer(c, 0, rows, rank, buf);
    H5Dclose(a);
    H5Dclose(b);
    H5Dclose(c);
    H5Fclose(f);
    free(buf);
    MPI_Finalize();
    return 0;
}
