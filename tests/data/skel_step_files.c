/* An HDF5 program written for the skeleton tests, in three modes.
 * `rank`: every rank writes a file of its own (NAME_<rank>.h5, on MPI_COMM_SELF) with a group
 * per step (/step_0, /step_1, ...) holding a dataset, and a history dataset (/hist) extended by
 * a row per step: the steps differ (the extents), so its skeleton is unrolled, and it must
 * still write one file per rank (it wrote one name on every rank).
 * `log`: a new shared file per step (NAME_0000.h5, NAME_0001.h5, ...) whose dataset every rank
 * writes its block of, then rank 0 appends a line to a log file (NAME.log, fopen "a") and
 * every rank writes its record of the step to a summary file (NAME.sum) at the same offset at
 * every step: its skeleton loops over the steps and must keep the log and the summary (the
 * calls on files without a step number were dropped from the loop body).
 * `once`: one shared file (NAME.h5) with a root attribute and a dataset (/mesh) written once,
 * before the steps, then a group per step (/step_0, ...) with a dataset every rank writes its
 * block of: its skeleton must loop (it was unrolled: --steps could not scale it), making the
 * calls made before the steps at its first step only.
 * Usage: skel_step_files rank|log|once NAME [STEPS [N]] */
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

static void write_rows(hid_t dset, hsize_t first, hsize_t rows, hid_t dxpl, const double *buf)
{
    hid_t fs = H5Dget_space(dset);
    hsize_t start[1] = {first}, count[1] = {rows};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(1, count, NULL);
    check(H5Dwrite(dset, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf) >= 0);
    H5Sclose(ms), H5Sclose(fs);
}

/* every rank its own file: a group per step, a history grown by a row per step */
static void per_rank(const char *name, int rank, int steps, hsize_t n, const double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s_%d.h5", name, rank);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_SELF, MPI_INFO_NULL);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(f >= 0);
    hsize_t zero[1] = {0}, unlimited[1] = {H5S_UNLIMITED}, chunk[1] = {4};
    hid_t space = H5Screate_simple(1, zero, unlimited), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    hid_t hist = H5Dcreate2(f, "/hist", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(hist >= 0);
    H5Sclose(space), H5Pclose(dcpl);
    for (int s = 0; s < steps; s++) {
        char group[64];
        snprintf(group, sizeof group, "/step_%d/x", s);
        hsize_t dims[1] = {n};
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        hid_t fs = H5Screate_simple(1, dims, NULL);
        hid_t d = H5Dcreate2(f, group, H5T_NATIVE_DOUBLE, fs, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        check(d >= 0);
        write_rows(d, 0, n, H5P_DEFAULT, buf);
        H5Dclose(d), H5Sclose(fs), H5Pclose(lcpl);
        hsize_t grown[1] = {(hsize_t)s + 1};
        check(H5Dset_extent(hist, grown) >= 0);
        write_rows(hist, (hsize_t)s, 1, H5P_DEFAULT, buf);
    }
    H5Dclose(hist), H5Fclose(f), H5Pclose(fapl);
}

/* a shared file per step, a log line (rank 0) and a summary record (every rank) per step */
static void per_step(const char *name, int rank, int size, int steps, hsize_t n, const double *buf)
{
    char path[256], log[256], sum[256];
    snprintf(log, sizeof log, "%s.log", name);
    snprintf(sum, sizeof sum, "%s.sum", name);
    MPI_File summary;
    check(MPI_File_open(MPI_COMM_WORLD, sum, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &summary) == MPI_SUCCESS);
    for (int s = 0; s < steps; s++) {
        snprintf(path, sizeof path, "%s_%04d.h5", name, s);
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        check(f >= 0);
        hsize_t dims[1] = {n * (hsize_t)size};
        hid_t fs = H5Screate_simple(1, dims, NULL);
        hid_t d = H5Dcreate2(f, "/x", H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(d >= 0);
        write_rows(d, n * (hsize_t)rank, n, dxpl, buf);
        H5Dclose(d), H5Sclose(fs), H5Fclose(f), H5Pclose(dxpl), H5Pclose(fapl);
        char record[64];
        memset(record, ' ', sizeof record);
        snprintf(record, sizeof record, "rank %d step %d", rank, s);
        check(MPI_File_write_at_all(summary, (MPI_Offset)rank * 64, record, 64, MPI_BYTE,
                                    MPI_STATUS_IGNORE) == MPI_SUCCESS);
        if (rank == 0) {
            FILE *fp = fopen(log, "a");
            check(fp != NULL);
            char line[32];
            int len = snprintf(line, sizeof line, "step %04d written\n", s);
            check(fwrite(line, 1, (size_t)len, fp) == (size_t)len);
            fclose(fp);
        }
    }
    MPI_File_close(&summary);
}

/* one shared file: a root attribute and a dataset written once, then a group per step */
static void once_then_steps(const char *name, int rank, int size, int steps, hsize_t n,
                            const double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(f >= 0);
    hid_t scalar = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "steps", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
    check(a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &steps) >= 0);
    H5Aclose(a), H5Sclose(scalar);
    hsize_t dims[1] = {n * (hsize_t)size};
    hid_t fs = H5Screate_simple(1, dims, NULL);
    hid_t mesh =
        H5Dcreate2(f, "/mesh", H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(mesh >= 0);
    write_rows(mesh, n * (hsize_t)rank, n, dxpl, buf);
    H5Dclose(mesh);
    for (int s = 0; s < steps; s++) {
        char group[64];
        snprintf(group, sizeof group, "/step_%d", s);
        hid_t g = H5Gcreate2(f, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(g >= 0);
        hid_t d = H5Dcreate2(g, "x", H5T_NATIVE_DOUBLE, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(d >= 0);
        write_rows(d, n * (hsize_t)rank, n, dxpl, buf);
        H5Dclose(d), H5Gclose(g);
    }
    H5Sclose(fs), H5Fclose(f), H5Pclose(dxpl), H5Pclose(fapl);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check(argc > 2);
    int steps = argc > 3 ? atoi(argv[3]) : 3;
    hsize_t n = argc > 4 ? strtoull(argv[4], NULL, 10) : 16;
    double *buf = malloc(sizeof(double) * n);
    for (hsize_t i = 0; i < n; i++)
        buf[i] = (double)i + rank;
    if (strcmp(argv[1], "rank") == 0)
        per_rank(argv[2], rank, steps, n, buf);
    else if (strcmp(argv[1], "once") == 0)
        once_then_steps(argv[2], rank, size, steps, n, buf);
    else
        per_step(argv[2], rank, size, steps, n, buf);
    free(buf);
    MPI_Finalize();
    return 0;
}
