/* h5edge: an ordinary parallel HDF5 program whose datasets are the cases a tuner must leave
 * alone or handle with care. Writes FILE with the MPI-IO driver, reopens it, verifies every
 * value, and prints (rank 0) each dataset's layout and chunk dimensions as JSON.
 *
 * usage: h5edge FILE
 *   /src         1-D int, contiguous, written;
 *   /virt        a virtual dataset mapping /src, made by rank 0 alone on MPI_COMM_SELF
 *                (parallel HDF5 1.10 neither creates nor reads one collectively);
 *   /z           1-D int, chunked and deflated, written collectively (filters need it);
 *   /ext         1-D int, created empty with an unlimited maximum, then extended and written;
 *   /fv          1-D int with the fill value -7, only its first half written;
 *   /g1/g2/deep  1-D int, contiguous, written.
 * While the datasets are made, OTHERS more files (FILE.otherNN) are open with the MPI-IO driver
 * too: a tuner that forgets an open file after a while loses its settings. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64      /* elements per rank */
#define OTHERS 80 /* files open at the same time as FILE */

static int rank, nprocs;

static int expected(const char *name, hsize_t i)
{
    if (strcmp(name, "/fv") == 0)
        return i < (hsize_t)N * (hsize_t)nprocs / 2 ? (int)i : -7;
    return (int)(i * 3 + (hsize_t)strlen(name));
}

/* Each rank writes its block of a 1-D dataset of N * nprocs ints (collectively). For /fv
 * only the first half of the dataset is written. */
static herr_t write_blocks(hid_t dset, const char *name)
{
    hsize_t total = (hsize_t)N * (hsize_t)nprocs, start = (hsize_t)rank * N, count = N;
    int *buf = malloc(N * sizeof *buf);
    for (hsize_t i = 0; i < N; i++)
        buf[i] = expected(name, start + i);
    if (strcmp(name, "/fv") == 0 && start >= total / 2)
        count = 0;
    hid_t fspace = H5Dget_space(dset), mspace = H5Screate_simple(1, &count, NULL);
    if (count)
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL);
    else
        H5Sselect_none(fspace);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    herr_t rc = H5Dwrite(dset, H5T_NATIVE_INT, mspace, fspace, dxpl, buf);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(fspace);
    free(buf);
    return rc;
}

static hid_t create(hid_t loc, const char *name, hsize_t dim, hsize_t max, hid_t dcpl)
{
    hid_t space = H5Screate_simple(1, &dim, &max);
    hid_t dset = H5Dcreate2(loc, name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Sclose(space);
    return dset;
}

static hid_t mpio_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    return fapl;
}

static const char *const names[] = {"/src", "/virt", "/z", "/ext", "/fv", "/g1/g2/deep"};
#define NDSETS (sizeof names / sizeof *names)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2) {
        fprintf(stderr, "usage: h5edge FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    hsize_t total = (hsize_t)N * (hsize_t)nprocs, chunk = 16, zero = 0, unlimited = H5S_UNLIMITED;
    herr_t rc[NDSETS] = {0};
    hid_t fapl = mpio_fapl();
    hid_t fid = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fid < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    hid_t others[OTHERS];
    char other[4096];
    for (int i = 0; i < OTHERS; i++) {
        snprintf(other, sizeof other, "%s.other%02d", argv[1], i);
        others[i] = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    }

    hid_t d = create(fid, "/src", total, total, H5P_DEFAULT);
    rc[0] = write_blocks(d, "/src");
    H5Dclose(d);

    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_deflate(dcpl, 1);
    d = create(fid, "/z", total, total, dcpl);
    rc[2] = write_blocks(d, "/z");
    H5Dclose(d);
    H5Pclose(dcpl);

    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    d = create(fid, "/ext", zero, unlimited, dcpl);
    H5Dset_extent(d, &total);
    rc[3] = write_blocks(d, "/ext");
    H5Dclose(d);
    H5Pclose(dcpl);

    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int fill = -7;
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    d = create(fid, "/fv", total, total, dcpl);
    rc[4] = write_blocks(d, "/fv");
    H5Dclose(d);
    H5Pclose(dcpl);

    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t space = H5Screate_simple(1, &total, NULL);
    d = H5Dcreate2(fid, "/g1/g2/deep", H5T_NATIVE_INT, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    rc[5] = write_blocks(d, "/g1/g2/deep");
    H5Dclose(d);
    H5Pclose(lcpl);
    H5Fclose(fid);
    for (int i = 0; i < OTHERS; i++) {
        H5Fclose(others[i]);
        snprintf(other, sizeof other, "%s.other%02d", argv[1], i);
        if (rank == 0)
            remove(other);
    }

    /* the virtual dataset: rank 0 alone, still through the MPI-IO driver (on MPI_COMM_SELF) */
    if (rank == 0) {
        hid_t self = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(self, MPI_COMM_SELF, MPI_INFO_NULL);
        fid = H5Fopen(argv[1], H5F_ACC_RDWR, self);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_virtual(dcpl, space, ".", "/src", space);
        d = create(fid, "/virt", total, total, dcpl);
        rc[1] = d < 0 ? -1 : 0;
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Fclose(fid);
        H5Pclose(self);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* read everything back on every rank, and report */
    fid = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl);
    int bad = 0;
    int *buf = malloc(total * sizeof *buf);
    if (rank == 0)
        printf("{\"datasets\": {");
    for (size_t k = 0; k < NDSETS; k++) {
        d = H5Dopen2(fid, names[k], H5P_DEFAULT);
        /* parallel HDF5 cannot read a virtual dataset: the tests read it with h5diff */
        int virt = strcmp(names[k], "/virt") == 0;
        herr_t read = virt ? 0 : H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        for (hsize_t i = 0; i < total && !virt; i++)
            bad += read < 0 || buf[i] != expected(names[k], i);
        hid_t p = H5Dget_create_plist(d);
        H5D_layout_t layout = H5Pget_layout(p);
        hsize_t c = 0;
        if (layout == H5D_CHUNKED)
            H5Pget_chunk(p, 1, &c);
        if (rank == 0)
            printf("%s\"%s\": {\"layout\": \"%s\", \"chunk\": %llu, \"write_rc\": %d}",
                   k ? ", " : "", names[k],
                   layout == H5D_CHUNKED      ? "chunked"
                   : layout == H5D_VIRTUAL    ? "virtual"
                   : layout == H5D_CONTIGUOUS ? "contiguous"
                                              : "other",
                   (unsigned long long)c, (int)rc[k]);
        H5Pclose(p);
        H5Dclose(d);
    }
    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("}, \"mismatches\": %d}\n", all_bad);
    free(buf);
    H5Sclose(space);
    H5Fclose(fid);
    H5Pclose(fapl);
    MPI_Finalize();
    return 0;
}
