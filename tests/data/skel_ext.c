/* An HDF5 program written for the skeleton tests: not one of the kernels. Each rank owns a
 * band of columns of a 2-D chunked field with an unlimited first dimension (noncontiguous
 * selections), and writes a 1-D int64 particle block; rank 0 alone writes a small header
 * dataset (independent). Usage: skel_ext ROWS COLS_PER_RANK PARTICLES_PER_RANK STEPS */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hsize_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 64;
    hsize_t cols = argc > 2 ? strtoull(argv[2], NULL, 10) : 32;
    hsize_t np = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
    int steps = argc > 4 ? atoi(argv[4]) : 2;
    double *field = malloc(sizeof(double) * rows * cols);
    long long *ids = malloc(sizeof(long long) * np);
    for (hsize_t i = 0; i < rows * cols; i++)
        field[i] = (double)(i + rank);
    for (hsize_t i = 0; i < np; i++)
        ids[i] = (long long)(rank * np + i);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate("ext_out.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    hid_t coll = H5Pcreate(H5P_DATASET_XFER), ind = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE);
    H5Pset_dxpl_mpio(ind, H5FD_MPIO_INDEPENDENT);
    for (int s = 0; s < steps; s++) {
        char name[64];
        snprintf(name, sizeof name, "/run/out_%d", s);
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        hid_t g = H5Gcreate2(file, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        H5Pclose(lcpl);
        /* field: (rows, cols*size), unlimited rows, chunks (16, cols) */
        hsize_t dims[2] = {rows, cols * size}, maxd[2] = {H5S_UNLIMITED, cols * size};
        hsize_t chunk[2] = {rows < 16 ? rows : 16, cols};
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 2, chunk);
        hid_t sp = H5Screate_simple(2, dims, maxd);
        hid_t d = H5Dcreate2(g, "field", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        hsize_t start[2] = {0, cols * rank}, count[2] = {rows, cols};
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t ms = H5Screate_simple(2, count, NULL);
        H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, coll, field);
        H5Sclose(ms);
        H5Sclose(sp);
        H5Dclose(d);
        H5Pclose(dcpl);
        /* particles: 1-D int64 block per rank */
        hsize_t pd = np * size, ps = np * rank;
        sp = H5Screate_simple(1, &pd, NULL);
        d = H5Dcreate2(g, "ids", H5T_NATIVE_LLONG, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, &ps, NULL, &np, NULL);
        ms = H5Screate_simple(1, &np, NULL);
        H5Dwrite(d, H5T_NATIVE_LLONG, ms, sp, coll, ids);
        H5Sclose(ms);
        H5Sclose(sp);
        H5Dclose(d);
        /* header: 4 uint16 values written by rank 0 only, independently */
        hsize_t hd = 4;
        sp = H5Screate_simple(1, &hd, NULL);
        d = H5Dcreate2(g, "header", H5T_NATIVE_UINT16, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (rank == 0) {
            unsigned short h[4] = {1, 2, 3, 4};
            H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, ind, h);
        }
        H5Sclose(sp);
        H5Dclose(d);
        H5Gclose(g);
    }
    H5Pclose(coll);
    H5Pclose(ind);
    H5Fclose(file);
    free(field);
    free(ids);
    MPI_Finalize();
    return 0;
}
