/* A test application for the adaptive mode: recurring phases on different communicators.
 *   shared.<s>.h5  steps 0-2 on MPI_COMM_WORLD (collective writes of one block per rank)
 *   shared.3.h5    on a sub-communicator of rank 0 alone (the class's history now differs
 *                  between the ranks), then shared.4.h5 on MPI_COMM_WORLD again
 *   r<rank>.<s>.h5 steps 0-1, each rank its own name, on MPI_COMM_SELF
 *   thread<t>.<s>.dat  two threads at once, each its own raw file on MPI_COMM_SELF, 2 steps
 * Usage: mpiexec -n 2 adapt_probe [N] (doubles per rank and block, default 4096). */
#include <hdf5.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int n = 4096;

static void fill(double *buf, int rank, int step)
{
    for (int i = 0; i < n; i++)
        buf[i] = rank * 1e6 + step * 1e3 + i;
}

/* One HDF5 file on comm: each of its ranks writes its block of /data collectively. */
static void h5_phase(MPI_Comm comm, const char *name, int step)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
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
    fill(buf, rank, step);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, x, buf);
    free(buf);
    H5Pclose(x);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
}

typedef struct {
    int rank, thread;
} who;

static void *thread_phases(void *arg)
{
    const who *w = arg;
    double *buf = malloc((size_t)n * sizeof *buf);
    for (int step = 0; step < 2; step++) {
        char name[64];
        snprintf(name, sizeof name, "thread%d.r%d.%d.dat", w->thread, w->rank, step);
        MPI_File fh;
        if (MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                          &fh) != MPI_SUCCESS)
            continue;
        fill(buf, w->rank * 10 + w->thread, step);
        MPI_File_write_at(fh, 0, buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1)
        n = atoi(argv[1]);
    char name[64];
    for (int step = 0; step < 3; step++) {
        snprintf(name, sizeof name, "shared.%d.h5", step);
        h5_phase(MPI_COMM_WORLD, name, step);
    }
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &sub);
    if (sub != MPI_COMM_NULL) {
        h5_phase(sub, "shared.3.h5", 3);
        MPI_Comm_free(&sub);
    }
    h5_phase(MPI_COMM_WORLD, "shared.4.h5", 4);
    for (int step = 0; step < 2; step++) {
        snprintf(name, sizeof name, "r%d.%d.h5", rank, step);
        h5_phase(MPI_COMM_SELF, name, step);
    }
    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t t[2];
        who w[2] = {{rank, 0}, {rank, 1}};
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, thread_phases, &w[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("adapt_probe done (threads %s)\n", provided == MPI_THREAD_MULTIPLE ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
