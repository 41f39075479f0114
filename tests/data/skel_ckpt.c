/* An HDF5 program written for the skeleton tests (an outside tester's checkpoint writer): ONE
 * file, a group per step (/step_000, /step_001, ...) with an attribute and two datasets every
 * rank writes its rows of, a growing history dataset (/energy, chunked, unlimited) extended by
 * one row per step, a flush after each step; then the file closed, opened again read-write,
 * extended once more and every step's rows read back. Its skeleton must write one file with a
 * group per step (it made the file anew at every step). Usage: skel_ckpt FILE [STEPS [ROWS]] */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 6

static void check(int ok)
{
    if (!ok)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

static hid_t rows_of(hid_t dset, hsize_t first, hsize_t rows, hsize_t col, hsize_t cols)
{
    hid_t space = H5Dget_space(dset);
    hsize_t start[2] = {first, col}, count[2] = {rows, cols};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    return space;
}

static void transfer(hid_t dset, hsize_t first, hsize_t rows, hsize_t col, hsize_t cols,
                     double *buf, int write)
{
    hid_t fs = rows_of(dset, first, rows, col, cols);
    hsize_t count[2] = {rows, cols};
    hid_t ms = H5Screate_simple(2, count, NULL), dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    check((write ? H5Dwrite(dset, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf)
                 : H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf)) >= 0);
    H5Pclose(dxpl), H5Sclose(ms), H5Sclose(fs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *name = argc > 1 ? argv[1] : "ckpt.h5";
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    hsize_t rows = argc > 3 ? strtoull(argv[3], NULL, 10) : 8;
    double *buf = malloc(sizeof(double) * rows * COLS);
    for (hsize_t i = 0; i < rows * COLS; i++)
        buf[i] = (double)i + rank;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(f >= 0);
    hsize_t e0[2] = {0, (hsize_t)size}, emax[2] = {H5S_UNLIMITED, (hsize_t)size};
    hsize_t echunk[2] = {4, (hsize_t)size};
    hid_t space = H5Screate_simple(2, e0, emax), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, echunk);
    hid_t energy =
        H5Dcreate2(f, "/energy", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(energy >= 0);
    H5Sclose(space), H5Pclose(dcpl);
    hsize_t dims[2] = {rows * size, COLS};
    for (int s = 0; s < steps; s++) {
        char path[64];
        snprintf(path, sizeof path, "/step_%03d", s);
        hid_t g = H5Gcreate2(f, path, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(g >= 0);
        hid_t scalar = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(g, "time", H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT, H5P_DEFAULT);
        double t = 0.5 * s;
        check(a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &t) >= 0);
        H5Aclose(a), H5Sclose(scalar);
        const char *fields[] = {"rho", "u"};
        for (int k = 0; k < 2; k++) {
            hid_t fs = H5Screate_simple(2, dims, NULL);
            hid_t d = H5Dcreate2(g, fields[k], H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT,
                                 H5P_DEFAULT);
            check(d >= 0);
            transfer(d, rank * rows, rows, 0, COLS, buf, 1);
            H5Sclose(fs), H5Dclose(d);
        }
        H5Gclose(g);
        hsize_t grown[2] = {(hsize_t)s + 1, (hsize_t)size};
        check(H5Dset_extent(energy, grown) >= 0);
        transfer(energy, s, 1, rank, 1, buf, 1);
        check(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0);
    }
    H5Dclose(energy);
    H5Fclose(f);

    f = H5Fopen(name, H5F_ACC_RDWR, fapl);
    check(f >= 0);
    energy = H5Dopen2(f, "/energy", H5P_DEFAULT);
    hsize_t grown[2] = {(hsize_t)steps + 1, (hsize_t)size};
    check(energy >= 0 && H5Dset_extent(energy, grown) >= 0);
    transfer(energy, steps, 1, rank, 1, buf, 1);
    H5Dclose(energy);
    for (int s = 0; s < steps; s++) {
        char path[64];
        snprintf(path, sizeof path, "/step_%03d/rho", s);
        hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
        check(d >= 0);
        transfer(d, rank * rows, rows, 0, COLS, buf, 0);
        H5Dclose(d);
    }
    H5Fclose(f);
    H5Pclose(fapl);
    free(buf);
    MPI_Finalize();
    return 0;
}
