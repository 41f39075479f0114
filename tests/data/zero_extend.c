/* A valid application that once broke advise (issue 23): chunked, extendible datasets created
 * with 0 elements, then extended and written step by step (appends), and one left empty.
 * Each rank writes its own block of every step, collectively.
 * Build: mpicc.mpich zero_extend.c $(pkg-config --cflags --libs hdf5-mpich) */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>

#define STEPS 3
#define PER_RANK 512 /* elements per rank and step */

static int check(herr_t status, const char *what)
{
    if (status < 0) {
        fprintf(stderr, "zero_extend: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(argc > 1 ? argv[1] : "zero.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t zero[2] = {0, 4}, unlimited[2] = {H5S_UNLIMITED, 4}, chunk[2] = {256, 4};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    hid_t space1 = H5Screate_simple(1, zero, unlimited);
    hid_t d1 =
        H5Dcreate2(file, "/appended", H5T_NATIVE_DOUBLE, space1, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t empty = H5Dcreate2(file, "/never_written", H5T_NATIVE_DOUBLE, space1, H5P_DEFAULT, dcpl,
                             H5P_DEFAULT);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t space2 = H5Screate_simple(2, zero, unlimited);
    hid_t d2 = H5Dcreate2(file, "/rows", H5T_NATIVE_DOUBLE, space2, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    static double buf[PER_RANK * 4];
    for (int i = 0; i < PER_RANK * 4; i++)
        buf[i] = rank * 1000.0 + i;
    for (int step = 0; step < STEPS; step++) {
        hsize_t n = (hsize_t)(step + 1) * PER_RANK * size;
        hsize_t start = (hsize_t)step * PER_RANK * size + (hsize_t)rank * PER_RANK;
        hsize_t count = PER_RANK;
        check(H5Dset_extent(d1, &n), "H5Dset_extent");
        hid_t fs = H5Dget_space(d1), ms = H5Screate_simple(1, &count, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
        check(H5Dwrite(d1, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf), "H5Dwrite 1-D");
        H5Sclose(fs);
        H5Sclose(ms);
        hsize_t n2[2] = {n, 4}, start2[2] = {start, 0}, count2[2] = {PER_RANK, 4};
        check(H5Dset_extent(d2, n2), "H5Dset_extent 2-D");
        fs = H5Dget_space(d2);
        ms = H5Screate_simple(2, count2, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start2, NULL, count2, NULL);
        check(H5Dwrite(d2, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf), "H5Dwrite 2-D");
        H5Sclose(fs);
        H5Sclose(ms);
    }
    H5Dclose(d1);
    H5Dclose(d2);
    H5Dclose(empty);
    H5Sclose(space1);
    H5Sclose(space2);
    H5Pclose(dcpl);
    H5Pclose(dxpl);
    H5Fclose(file);
    H5Pclose(fapl);
    MPI_Finalize();
    return 0;
}
