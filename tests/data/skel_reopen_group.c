/* An HDF5 program written for the skeleton tests (an outside tester's checkpoint writer, cut
 * down): a file whose root tracks its links' creation order, with an empty group /fields and a
 * dataset /density every rank writes its rows of, closed; then opened again read-write, where
 * it makes an empty group /restart and a dataset /restart_count. Its skeleton must make
 * /restart in the second session of the file, as the program did (it made it at the file's
 * creation, before /density: the links' creation order differed). With `old`, the second
 * session makes /restart with the deprecated H5Gcreate1 and a group /restart_anon without a
 * name first (H5Gcreate_anon), linked after (H5Olink): neither was traced, and its skeleton made
 * both at the file's creation.
 * Usage: skel_reopen_group FILE [ROWS [old]] */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok)
{
    if (!ok)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

static void write_rows(hid_t f, const char *path, hsize_t rows, int rank, int size)
{
    hsize_t dims[1] = {rows * (hsize_t)size}, start[1] = {rows * (hsize_t)rank}, count[1] = {rows};
    hid_t fs = H5Screate_simple(1, dims, NULL), ms = H5Screate_simple(1, count, NULL);
    hid_t d = H5Dcreate2(f, path, H5T_NATIVE_INT, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0);
    int *buf = calloc(rows, sizeof(int));
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    check(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0);
    free(buf);
    H5Pclose(dxpl), H5Dclose(d), H5Sclose(ms), H5Sclose(fs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *name = argc > 1 ? argv[1] : "restart.h5";
    hsize_t rows = argc > 2 ? strtoull(argv[2], NULL, 10) : 8;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, fcpl, fapl);
    check(f >= 0);
    hid_t g = H5Gcreate2(f, "/fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(g >= 0);
    H5Gclose(g);
    write_rows(f, "/density", rows, rank, size);
    H5Fclose(f);

    f = H5Fopen(name, H5F_ACC_RDWR, fapl);
    check(f >= 0);
    if (argc > 3 && strcmp(argv[3], "old") == 0) {
        g = H5Gcreate1(f, "/restart", 0);
        check(g >= 0);
        H5Gclose(g);
        g = H5Gcreate_anon(f, H5P_DEFAULT, H5P_DEFAULT);
        check(g >= 0 && H5Olink(g, f, "restart_anon", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        H5Gclose(g);
    } else {
        g = H5Gcreate2(f, "/restart", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(g >= 0);
        H5Gclose(g);
    }
    write_rows(f, "/restart_count", 1, rank, size);
    H5Fclose(f);
    H5Pclose(fcpl), H5Pclose(fapl);
    MPI_Finalize();
    return 0;
}
