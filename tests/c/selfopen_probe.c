/* A test application for the adaptive mode: one HDF5 file name rewritten every step (IOR's
 * repetitions), each step by every rank with a collective write, while rank 0 alone opens the
 * file on MPI_COMM_SELF twice per step (IOR checks that it exists before deleting it, and asks
 * its size after writing it), reading one value each time. Rank 0's history of the file's class
 * then differs from the others'.
 * Usage: mpiexec -n 2 selfopen_probe [STEPS] (default 3; 4096 doubles per rank). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NAME "self.h5"

static void peek(void)
{
    MPI_File fh;
    double x;
    if (MPI_File_open(MPI_COMM_SELF, NAME, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        return;
    MPI_File_read_at(fh, 0, &x, 1, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
}

static void write_step(int rank, int size, int step)
{
    hsize_t n = 4096, dims = n * (hsize_t)size, start = n * (hsize_t)rank;
    double *buf = malloc(n * sizeof *buf);
    for (hsize_t i = 0; i < n; i++)
        buf[i] = rank * 1e6 + step * 1e3 + (double)i;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(NAME, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t space = H5Screate_simple(1, &dims, NULL), mem = H5Screate_simple(1, &n, NULL);
    hid_t d =
        H5Dcreate2(f, "data", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &n, NULL);
    hid_t x = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, x, buf);
    H5Pclose(x);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 3;
    for (int step = 0; step < steps; step++) {
        if (rank == 0)
            peek(); /* does the previous step's file exist? */
        MPI_Barrier(MPI_COMM_WORLD);
        write_step(rank, size, step);
        if (rank == 0)
            peek(); /* its size */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("selfopen_probe done\n");
    MPI_Finalize();
    return 0;
}
