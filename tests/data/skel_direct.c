/* An HDF5 program written for the skeleton tests (direct chunk writes, as h5py's
 * write_direct_chunk makes them): each rank writes its own file direct_R.h5 through HDF5's
 * serial (sec2) driver, a 64x64 uint16 dataset of 16x64 deflated chunks with fill time
 * "alloc"; it compresses chunks 0-2 itself (zlib, of data that differ by rank, so the stored
 * sizes differ) and writes them with H5Dwrite_chunk, chunk 3 raw with filter mask 1 (deflate
 * skipped); then reads chunk 0 back as stored (H5Dread_chunk) and the whole dataset through
 * the filters (H5Dread), and checks it. Usage: skel_direct */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#define ROWS 64
#define COLS 64
#define CROWS 16

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char name[64];
    snprintf(name, sizeof name, "direct_%d.h5", rank);
    hid_t file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {ROWS, COLS}, chunk[2] = {CROWS, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 4);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC);
    hid_t d = H5Dcreate2(file, "/d", H5T_STD_U16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    static unsigned short data[ROWS * COLS], back[ROWS * COLS];
    unsigned seed = 7u + (unsigned)rank;
    for (int i = 0; i < ROWS * COLS; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (unsigned short)((seed >> 16) % (unsigned)(4 + 4 * rank + i / (CROWS * COLS)));
    }
    static unsigned char z[4 * CROWS * COLS * 2];
    int bad = 0;
    for (int c = 0; c < ROWS / CROWS; c++) {
        hsize_t at[2] = {(hsize_t)c * CROWS, 0};
        const unsigned short *part = data + c * CROWS * COLS;
        uLongf n = sizeof z;
        if (c < 3) {
            compress2(z, &n, (const Bytef *)part, CROWS * COLS * 2, 4);
            bad |= H5Dwrite_chunk(d, H5P_DEFAULT, 0, at, n, z) < 0;
        } else {
            bad |= H5Dwrite_chunk(d, H5P_DEFAULT, 1, at, CROWS * COLS * 2, part) < 0;
        }
    }
    hsize_t first[2] = {0, 0};
    uint32_t mask = 0;
    bad |= H5Dread_chunk(d, H5P_DEFAULT, first, &mask, z) < 0;
    bad |= H5Dread(d, H5T_NATIVE_USHORT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) < 0;
    for (int i = 0; i < ROWS * COLS; i++)
        bad |= back[i] != data[i];
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    if (bad)
        fprintf(stderr, "skel_direct: rank %d: the data read back differ\n", rank);
    MPI_Finalize();
    return bad;
}
