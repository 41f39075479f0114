/* A checkpoint writer as applications write them (not one of iotune's kernels): every step a
 * new file chk_NNNN.h5 with a group /fields that carries attributes (time, step, a name), and
 * one 2-D float64 dataset per field, each rank writing its block of rows collectively.
 *
 *   checkpoint [--rows N] [--cols N] [--fields N] [--steps N] [--layout chunked|contiguous]
 *              [--deflate LEVEL] [--fill VALUE] [--oversize K] [--prefix P]
 *
 * --fill sets a fill value (as codes that want NaN or 0 in unwritten cells do); --oversize K
 * creates each dataset K times taller than what is written (room for later steps); --deflate
 * compresses (parallel HDF5 writes filtered datasets collectively only). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long rows = 512, cols = 512, fields = 2, steps = 2, oversize = 1, deflate = -1;
    int chunked = 1, fill_set = 0;
    double fill = 0.0;
    const char *prefix = "chk_";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rows"))
            rows = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--cols"))
            cols = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--fields"))
            fields = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--oversize"))
            oversize = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--deflate"))
            deflate = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--fill")) {
            fill = atof(argv[i + 1]);
            fill_set = 1;
        } else if (!strcmp(argv[i], "--layout"))
            chunked = !strcmp(argv[i + 1], "chunked");
        else if (!strcmp(argv[i], "--prefix"))
            prefix = argv[i + 1];
        else {
            if (!rank)
                fprintf(stderr, "unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    long mine = rows / size;
    double *buf = malloc(sizeof(double) * mine * cols);
    for (long s = 0; s < steps; s++) {
        char name[256];
        snprintf(name, sizeof name, "%s%04ld.h5", prefix, s);
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hid_t g = H5Gcreate2(f, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t scalar = H5Screate(H5S_SCALAR);
        double t = 0.1 * (double)s;
        hid_t a = H5Acreate2(g, "time", H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, &t);
        H5Aclose(a);
        a = H5Acreate2(g, "step", H5T_NATIVE_LONG, scalar, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_LONG, &s);
        H5Aclose(a);
        hid_t str = H5Tcopy(H5T_C_S1);
        H5Tset_size(str, 16);
        a = H5Acreate2(g, "code", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, str, "checkpoint 1.0\0\0");
        H5Aclose(a);
        H5Tclose(str);
        hsize_t dims[2] = {(hsize_t)(rows * oversize), (hsize_t)cols};
        hid_t space = H5Screate_simple(2, dims, NULL);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        if (chunked || deflate >= 0) {
            hsize_t chunk[2] = {(hsize_t)(mine < 64 ? mine : 64), (hsize_t)cols};
            H5Pset_chunk(dcpl, 2, chunk);
        }
        if (deflate >= 0)
            H5Pset_deflate(dcpl, (unsigned)deflate);
        if (fill_set)
            H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill);
        hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
        hsize_t start[2] = {(hsize_t)(rank * mine), 0}, count[2] = {(hsize_t)mine, (hsize_t)cols};
        hid_t mem = H5Screate_simple(2, count, NULL);
        for (long k = 0; k < fields; k++) {
            char dname[32];
            snprintf(dname, sizeof dname, "field%ld", k);
            hid_t d =
                H5Dcreate2(g, dname, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            a = H5Acreate2(d, "units", H5T_NATIVE_DOUBLE, scalar, H5P_DEFAULT, H5P_DEFAULT);
            H5Awrite(a, H5T_NATIVE_DOUBLE, &t);
            H5Aclose(a);
            for (long i = 0; i < mine * cols; i++)
                buf[i] = (double)(rank * mine * cols + i) + (double)k + 0.5 * (double)(i % 7);
            hid_t fs = H5Dget_space(d);
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
            if (H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, fs, dxpl, buf) < 0)
                MPI_Abort(MPI_COMM_WORLD, 1);
            H5Sclose(fs);
            H5Dclose(d);
        }
        H5Sclose(mem);
        H5Pclose(dxpl);
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Sclose(scalar);
        H5Gclose(g);
        H5Fclose(f);
        H5Pclose(fapl);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
