/* Computation between I/O calls inside one output phase, as a program that fills, checks or
 * packs its data between writes: each rank writes 8 blocks of 256 KiB of a 1-D dataset, each
 * after GAP_MS milliseconds of work over its buffer, then reads them back with the same work
 * (a check) after each read. Usage: skel_gaps FILE */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>

#define BLOCKS 8
#define GAP_MS 5.0

static double work(double *buf, hsize_t n, double ms) /* at least ms of CPU over buf */
{
    double end = MPI_Wtime() + ms / 1e3, sum = 0;
    while (MPI_Wtime() < end)
        for (hsize_t i = 0; i < n; i += 8)
            sum += buf[i];
    return sum;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(argc > 1 ? argv[1] : "gaps.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t n = 1 << 15, dims = n * BLOCKS * (hsize_t)size;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t d = H5Dcreate2(f, "/x", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t mspace = H5Screate_simple(1, &n, NULL);
    double *buf = malloc(sizeof(double) * n), sum = 0;
    for (hsize_t i = 0; i < n; i++)
        buf[i] = (double)i;
    for (int read = 0; read < 2; read++)
        for (hsize_t b = 0; b < BLOCKS; b++) {
            hsize_t start = (b * (hsize_t)size + (hsize_t)rank) * n;
            H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &n, NULL);
            if (read)
                H5Dread(d, H5T_NATIVE_DOUBLE, mspace, space, H5P_DEFAULT, buf);
            else
                H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, space, H5P_DEFAULT, buf);
            sum += work(buf, n, GAP_MS);
        }
    free(buf);
    H5Sclose(mspace);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
    MPI_Finalize();
    return sum < 0;
}
