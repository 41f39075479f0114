/* Reads into memory never touched, as h5py does (`dset[...]` reads into a new NumPy array): each
 * rank writes its 1 MiB block of a 1-D dataset, then reads it back twice with H5Dread, first
 * into freshly mapped memory (its pages fault in during the read), then into the same memory
 * again (now resident). Usage: skel_fresh_read FILE */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(argc > 1 ? argv[1] : "fresh.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t n = 1 << 17, dims = n * (hsize_t)size, start = n * (hsize_t)rank;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t d = H5Dcreate2(f, "/x", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t mspace = H5Screate_simple(1, &n, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &n, NULL);
    double *out = malloc(sizeof(double) * n);
    for (hsize_t i = 0; i < n; i++)
        out[i] = (double)(start + i);
    hid_t coll = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(coll, H5FD_MPIO_COLLECTIVE);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mspace, space, coll, out);
    size_t bytes = sizeof(double) * n;
    double *in = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    H5Dread(d, H5T_NATIVE_DOUBLE, mspace, space, H5P_DEFAULT, in); /* fresh memory */
    H5Dread(d, H5T_NATIVE_DOUBLE, mspace, space, H5P_DEFAULT, in); /* the same, resident */
    int bad = memcmp(in, out, bytes) != 0;
    munmap(in, bytes);
    free(out);
    H5Pclose(coll);
    H5Sclose(mspace);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
    MPI_Finalize();
    return bad;
}
