/* A test application for fill_time=never's guard (runtime/src/apply/fill_guard.c): one chunked
 * 1-D dataset /data of 2 N doubles per rank (chunks of N), in FILE, written collectively
 * (mpio) or by the only process (sec2) as
 *   full      each rank its 2 N elements (a checkpoint writer, as GCRM-IO)
 *   partial   each rank the first N of its 2 N, in a new file
 *   reused    as partial, after a dataset /old of the same shape, written whole (-1 - i, not
 *             the fill value 0), was deleted (H5Ldelete): /data takes its space
 *   shrunk    as partial, after /old (extendible) was written whole and shrunk to 1 element
 *             (H5Dset_extent)
 *   reopened  as partial, in a file opened again: made first with a persistent free-space
 *             strategy, /old written whole and deleted, /keep written after it, closed
 *   twice     as reused, /old deleted through a second H5Fopen of the file (a link to it)
 *   mounted   as reused, /old deleted through the file mounted in another one
 *   rewritten as partial, after a deflated dataset /z was written twice (ones, then values
 *             that compress less: HDF5 frees its first chunks by itself)
 *   reused2   as reused, with a second dataset /data2 made after /data (never written)
 *   ownalloc  as reused, every dataset contiguous with the application's own fill_time=alloc
 *             (HDF5 writes the fill value over the space /data takes: zeros either way)
 * then reads /data back whole into a buffer of 0x5A bytes and prints (rank 0) one JSON line:
 * {"fill_time": "never"|"ifset"|"alloc", "unwritten_not_fill": K, "written_wrong": W}, the
 * elements never written that do not read back as the fill value 0, over all ranks.
 * Usage: [mpiexec -n R] fill_guard_probe MODE mpio|sec2 N FILE [NAME]
 * NAME: /data's name instead (as given to H5Dcreate2). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hid_t fapl_of(int mpio)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (mpio)
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    return fapl;
}

/* Dataset name of the file's shape, written whole with -1 - i; kind 0 chunked, 1 chunked with
 * no limit (extendible), 2 contiguous with the application's own fill_time=alloc. */
static hid_t write_old(hid_t f, const char *name, hsize_t n, int rank, int size, int kind, hid_t x)
{
    hsize_t dims = 2 * n * (hsize_t)size, max = H5S_UNLIMITED, at = 2 * n * (hsize_t)rank,
            all = 2 * n;
    hid_t space = H5Screate_simple(1, &dims, kind == 1 ? &max : NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (kind == 2)
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC);
    else
        H5Pset_chunk(dcpl, 1, &n);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    double *old = malloc(2 * n * sizeof *old);
    for (hsize_t i = 0; i < 2 * n; i++)
        old[i] = -1.0 - (double)(at + i);
    hid_t mem = H5Screate_simple(1, &all, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &all, NULL);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, x, old);
    free(old);
    H5Sclose(mem);
    H5Sclose(space);
    H5Pclose(dcpl);
    return d;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 5 && argc != 6) {
        fprintf(stderr,
                "usage: fill_guard_probe "
                "full|partial|reused|reused2|shrunk|reopened|rewritten|twice|mounted|ownalloc "
                "mpio|sec2 "
                "N FILE [NAME]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1], *file = argv[4], *name = argc == 6 ? argv[5] : "data";
    int mpio = strcmp(argv[2], "mpio") == 0, rank, size;
    hsize_t n = (hsize_t)atoll(argv[3]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hid_t x = H5Pcreate(H5P_DATASET_XFER);
    if (mpio)
        H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE);
    hid_t fapl = fapl_of(mpio), f;
    if (strcmp(mode, "reopened") == 0) {
        hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
        H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_FSM_AGGR, 1, 1);
        f = H5Fcreate(file, H5F_ACC_TRUNC, fcpl, fapl);
        H5Dclose(write_old(f, "old", n, rank, size, 0, x));
        H5Dclose(write_old(f, "keep", 1, rank, size, 0, x));
        H5Ldelete(f, "old", H5P_DEFAULT);
        H5Fclose(f);
        H5Pclose(fcpl);
        f = H5Fopen(file, H5F_ACC_RDWR, fapl);
    } else {
        f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    }
    int ownalloc = strcmp(mode, "ownalloc") == 0, reused2 = strcmp(mode, "reused2") == 0;
    if (strcmp(mode, "reused") == 0 || ownalloc || reused2) {
        H5Dclose(write_old(f, "old", n, rank, size, ownalloc ? 2 : 0, x));
        H5Ldelete(f, "old", H5P_DEFAULT);
    } else if (strcmp(mode, "rewritten") == 0) {
        hsize_t dims = 2 * n * (hsize_t)size, at = 2 * n * (hsize_t)rank, all = 2 * n;
        hid_t space = H5Screate_simple(1, &dims, NULL), mem = H5Screate_simple(1, &all, NULL);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &n);
        H5Pset_deflate(dcpl, 6);
        hid_t z = H5Dcreate2(f, "z", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        double *v = malloc(2 * n * sizeof *v);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &all, NULL);
        for (int pass = 0; pass < 2; pass++) {
            for (hsize_t i = 0; i < 2 * n; i++)
                v[i] = pass ? (double)((at + i) * 2654435761u % 1000003u) / 7.0 : 1.0;
            H5Dwrite(z, H5T_NATIVE_DOUBLE, mem, space, x, v);
            H5Fflush(f, H5F_SCOPE_GLOBAL);
        }
        free(v);
        H5Dclose(z);
        H5Pclose(dcpl);
        H5Sclose(mem);
        H5Sclose(space);
    } else if (strcmp(mode, "twice") == 0) { /* deleted through a second open of the file */
        char link[4200];
        snprintf(link, sizeof link, "%s.link", file);
        if (rank == 0 && symlink(file, link) != 0)
            perror("symlink");
        MPI_Barrier(MPI_COMM_WORLD);
        H5Dclose(write_old(f, "old", n, rank, size, 0, x));
        hid_t again = H5Fopen(link, H5F_ACC_RDWR, fapl);
        H5Ldelete(again, "old", H5P_DEFAULT);
        H5Fclose(again);
    } else if (strcmp(mode, "mounted") == 0) { /* deleted through a mount point */
        char parent[4200];
        snprintf(parent, sizeof parent, "%s.parent", file);
        H5Dclose(write_old(f, "old", n, rank, size, 0, x));
        hid_t g = H5Fcreate(parent, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Gclose(H5Gcreate2(g, "mnt", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        H5Fmount(g, "mnt", f, H5P_DEFAULT);
        H5Ldelete(g, "mnt/old", H5P_DEFAULT);
        H5Funmount(g, "mnt");
        H5Fclose(g);
    } else if (strcmp(mode, "shrunk") == 0) {
        hid_t d = write_old(f, "old", n, rank, size, 1, x);
        hsize_t one = 1;
        H5Dset_extent(d, &one);
        H5Dclose(d);
    }
    hsize_t dims = 2 * n * (hsize_t)size, start = 2 * n * (hsize_t)rank;
    hsize_t count = strcmp(mode, "full") == 0 ? 2 * n : n;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (ownalloc)
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC);
    else
        H5Pset_chunk(dcpl, 1, &n);
    hid_t d = H5Dcreate2(f, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (reused2) /* a second dataset made after the deletion, never written nor read */
        H5Dclose(H5Dcreate2(f, "data2", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    double *buf = malloc((size_t)dims * sizeof *buf);
    for (hsize_t i = 0; i < count; i++)
        buf[i] = 1.0 + (double)(start + i);
    hid_t mem = H5Screate_simple(1, &count, NULL);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, x, buf);
    H5Sselect_all(space);
    memset(buf, 0x5A, (size_t)dims * sizeof *buf);
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, x, buf);
    long counts[2] = {0, 0}, all[2];
    for (int r = 0; r < size; r++)
        for (hsize_t i = 0; i < 2 * n; i++) {
            hsize_t at = 2 * n * (hsize_t)r + i;
            int written = i < count;
            if (written ? buf[at] != 1.0 + (double)at : buf[at] != 0.0)
                counts[written]++;
        }
    MPI_Allreduce(counts, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    hid_t got = H5Dget_create_plist(d);
    H5D_fill_time_t ft = H5D_FILL_TIME_ERROR;
    H5Pget_fill_time(got, &ft);
    const char *names[] = {"alloc", "never", "ifset"};
    if (rank == 0)
        printf("{\"fill_time\": \"%s\", \"unwritten_not_fill\": %ld, \"written_wrong\": %ld}\n",
               ft >= 0 && ft <= 2 ? names[ft] : "?", all[0], all[1]);
    H5Pclose(got);
    free(buf);
    H5Sclose(mem);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
    H5Pclose(x);
    MPI_Finalize();
    return 0;
}
