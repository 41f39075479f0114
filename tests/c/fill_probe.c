/* A test application for the adaptive mode's layout insights: recurring phases chunked.<s>.h5,
 * each one chunked 1-D dataset /data of 2 N doubles per rank, written collectively as
 *   full     each rank its 2 N elements (every element written once)
 *   pieces   as full, in 16 writes of 2 N / 16 elements one after the other (adjacent boxes)
 *   scattered as full, in 32 writes of 2 N / 32 elements: the even pieces, then the odd ones
 *            (16 separate boxes before the odd pieces join them: more than a rank's boxes kept)
 *   partial  each rank the first N of its 2 N (half the dataset never written)
 *   overlap  every rank the first 2 N elements (as many elements as the extent, but the same
 *            ones: only rank 0's share is covered)
 *   reused   as partial, in space the file held other data in: a dataset /old of the same
 *            shape is written whole (other values) and deleted first, so that /data's chunks
 *            take its space (a program that rewrites a dataset in place): the elements never
 *            written read back the fill value only if it was written
 *   ownfill  as full, the dataset's creation list defining its own fill value (-7)
 *   late_partial  the first step as full, the later ones as partial (the adaptive mode
 *            learns from the first)
 *   late_reused   the first step as full, the later ones as reused
 *   read     nothing written: the files of a `full` run are read back (chunk 2 N elements)
 * Usage: mpiexec -n 2 fill_probe MODE STEPS N */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(
            stderr,
            "usage: fill_probe "
            "full|pieces|scattered|partial|overlap|reused|ownfill|late_partial|late_reused|read "
            "STEPS N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    int steps = atoi(argv[2]), rank, size;
    hsize_t n = (hsize_t)atoll(argv[3]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reading = strcmp(mode, "read") == 0;
    hsize_t dims = 2 * n * (hsize_t)size, chunk = 2 * n;
    hsize_t start = strcmp(mode, "overlap") == 0 ? 0 : 2 * n * (hsize_t)rank;
    int late = strncmp(mode, "late_", 5) == 0;
    if (late)
        mode += 5; /* partial or reused from the second step on */
    int scattered = strcmp(mode, "scattered") == 0;
    hsize_t pieces = strcmp(mode, "pieces") == 0 ? 16 : scattered ? 32 : 1;
    double *buf = malloc(2 * n * sizeof *buf);
    int overlap = strcmp(mode, "overlap") == 0; /* the same values: a well-defined file */
    for (hsize_t i = 0; i < 2 * n; i++)
        buf[i] = (overlap ? 0 : rank * 1e6) + (double)i;
    for (int s = 0; s < steps; s++) {
        int reused = strcmp(mode, "reused") == 0 && (!late || s > 0);
        hsize_t count = (strcmp(mode, "partial") == 0 && (!late || s > 0)) || reused ? n : 2 * n;
        char name[64];
        snprintf(name, sizeof name, "chunked.%d.h5", s);
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        hid_t f = reading ? H5Fopen(name, H5F_ACC_RDONLY, fapl)
                          : H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hid_t space = H5Screate_simple(1, &dims, NULL);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        double own = -7;
        if (strcmp(mode, "ownfill") == 0)
            H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &own);
        hid_t x = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE);
        if (reused) { /* each rank its 2 N elements of /old, -1 - i: not the fill value 0 */
            double *old = malloc(2 * n * sizeof *old);
            for (hsize_t i = 0; i < 2 * n; i++)
                old[i] = -1.0 - (double)i;
            hsize_t at = 2 * n * (hsize_t)rank, all = 2 * n;
            hid_t o =
                H5Dcreate2(f, "old", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            hid_t om = H5Screate_simple(1, &all, NULL);
            H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &all, NULL);
            H5Dwrite(o, H5T_NATIVE_DOUBLE, om, space, x, old);
            H5Sselect_all(space);
            H5Sclose(om);
            H5Dclose(o);
            H5Ldelete(f, "old", H5P_DEFAULT);
            free(old);
        }
        hid_t d = reading ? H5Dopen2(f, "data", H5P_DEFAULT)
                          : H5Dcreate2(f, "data", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl,
                                       H5P_DEFAULT);
        hid_t mem = H5Screate_simple(1, &count, NULL);
        if (reading) { /* each rank reads every other element of its block: partial reads */
            hsize_t from = 2 * n * (hsize_t)rank, stride = 2, half = n;
            H5Sselect_hyperslab(space, H5S_SELECT_SET, &from, &stride, &half, NULL);
            hid_t m = H5Screate_simple(1, &half, NULL);
            H5Dread(d, H5T_NATIVE_DOUBLE, m, space, x, buf);
            H5Sclose(m);
        } else {
            hsize_t part = count / pieces;
            hid_t pm = H5Screate_simple(1, &part, NULL);
            for (hsize_t j = 0; j < pieces; j++) {
                hsize_t k = scattered ? (j < pieces / 2 ? 2 * j : 2 * (j - pieces / 2) + 1) : j;
                hsize_t at = start + k * part;
                H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &part, NULL);
                H5Dwrite(d, H5T_NATIVE_DOUBLE, pm, space, x, buf + k * part);
            }
            H5Sclose(pm);
        }
        H5Pclose(x);
        H5Sclose(mem);
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Dclose(d);
        H5Fclose(f);
        H5Pclose(fapl);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
