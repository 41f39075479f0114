/* A test application for the adaptive mode: one class of files opened by different numbers of
 * ranks, as HDF5's parallel example does (rank 0 creates a file of the class on a communicator
 * of its own before all ranks write the class's files).
 *   step.0.h5            rank 0 alone, on MPI_COMM_SELF (a block written collectively on it)
 *   step.1.h5..step.S.h5 every rank, on MPI_COMM_WORLD: collective writes of one block per rank
 *   step.S+1.h5          rank 0 alone again, on a sub-communicator of its own
 *   step.S+2.h5          every rank again
 * Usage: mpiexec -n 2 ranks_probe [S] [N] [MS] (S steps on all ranks, default 3; N doubles per
 * rank and block, default 4096; MS: the last rank sleeps MS milliseconds before each phase on
 * all ranks, so that the others wait for it in the collective H5Fcreate, default 0). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int n = 4096, delay_ms;

static void late(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (delay_ms > 0 && size > 1 && rank == size - 1) {
        struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void h5_phase(MPI_Comm comm, int step)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char name[64];
    snprintf(name, sizeof name, "step.%d.h5", step);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL); /* duplicates comm: collective */
    late(comm);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims = (hsize_t)n * (hsize_t)size, start = (hsize_t)n * (hsize_t)rank,
            count = (hsize_t)n;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t d =
        H5Dcreate2(f, "data", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t mem = H5Screate_simple(1, &count, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
    hid_t x = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE);
    double *buf = malloc((size_t)n * sizeof *buf);
    for (int i = 0; i < n; i++)
        buf[i] = rank * 1e6 + step * 1e3 + i;
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, x, buf);
    free(buf);
    H5Pclose(x);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
}

int main(int argc, char **argv)
{
    int rank, steps = 3;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1)
        steps = atoi(argv[1]);
    if (argc > 2)
        n = atoi(argv[2]);
    if (argc > 3)
        delay_ms = atoi(argv[3]);
    if (rank == 0)
        h5_phase(MPI_COMM_SELF, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int step = 1; step <= steps; step++)
        h5_phase(MPI_COMM_WORLD, step);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &sub);
    if (sub != MPI_COMM_NULL) {
        h5_phase(sub, steps + 1);
        MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    h5_phase(MPI_COMM_WORLD, steps + 2);
    if (rank == 0)
        printf("ranks_probe done\n");
    MPI_Finalize();
    return 0;
}
