/* An outside tester's programs for the skeleton tests (2 ranks or more; every rank writes its
 * block of N doubles).
 *
 * `anon`: a group made without a name (H5Gcreate_anon) holding a dataset made in it, linked as
 * /g with H5Olink, and another made in it after the link; a dataset made without a name
 * (H5Dcreate_anon), written, linked as /linked; another written and never linked. The
 * skeleton's file must have /g/d inside /g (it was at the root) and its writes (they were
 * dropped).
 *
 * `nested`: an anonymous group linked into another anonymous group, datasets made in it before
 * and after, an anonymous dataset linked into it, then the outer group linked as /outer: each
 * dataset must be at /outer/inner/... (they were traced at the root), one trace entry each.
 *
 * `seekpos`: records written through the individual file pointer after MPI_File_seek with
 * MPI_SEEK_SET, MPI_SEEK_CUR and MPI_SEEK_END, without a view and under one with a displacement:
 * then once more in the file opened again (the default view again): the skeleton's must land
 * at the same offsets.
 *
 * `read`: reads NAME.h5's /x, which it did not write (made before the run by `make`).
 * `make`: writes NAME.h5 with /x and its attribute units (the input of `read`; run untraced),
 * /m, 2-D chunked, and NAME.dat.
 * `transform`: reads NAME.h5's /x, its units and /m, writes NAME_out.h5 with /y: an input, then
 * an output.
 * `rawread`: reads NAME.dat (made by `make`, through MPI-IO) at its block; `sharedread`: the
 * same through the shared file pointer (MPI_File_read_ordered); `posixread`: reads it with stdio
 * (an input deck: not made by a skeleton).
 *
 * `reopen`: creates NAME.h5 (no step number in its name), then opens it at every step, writes
 * its block of a dataset of the step (/step_0, /step_1, ...) and closes it: the skeleton must
 * open and close it at every step too (each_step), in a loop over the steps.
 *
 * `seek`: at every step writes a file of the step (NAME_<step>.out), then records through the
 * shared file pointer of NAME.dat after seeking it (MPI_File_seek_shared) past a header, 64 KiB
 * further at each step: the records land after the seek's offset, in a loop over the steps.
 *
 * Usage: skel_tester
 * anon|nested|seekpos|read|make|transform|rawread|sharedread|posixread|reopen|seek NAME [STEPS [N]]
 */
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

static int rank, size;

static hid_t open_file(const char *path, int create)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = create ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                     : H5Fopen(path, H5F_ACC_RDWR, fapl);
    check(f >= 0);
    H5Pclose(fapl);
    return f;
}

/* this rank's block of a 1-D dataset of size * n doubles, written (or read) collectively */
static void block(hid_t dset, hsize_t n, double *buf, int write)
{
    hid_t fs = H5Dget_space(dset), dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    hsize_t start[1] = {(hsize_t)rank * n}, count[1] = {n};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(1, count, NULL);
    check((write ? H5Dwrite(dset, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf)
                 : H5Dread(dset, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf)) >= 0);
    H5Sclose(ms), H5Sclose(fs), H5Pclose(dxpl);
}

static hid_t space_of(hsize_t n)
{
    hsize_t dims[1] = {(hsize_t)size * n};
    return H5Screate_simple(1, dims, NULL);
}

static void anon(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t f = open_file(path, 1), space = space_of(n);
    hid_t g = H5Gcreate_anon(f, H5P_DEFAULT, H5P_DEFAULT);
    check(g >= 0);
    hid_t d = H5Dcreate2(g, "d", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0);
    check(H5Olink(g, f, "g", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    block(d, n, buf, 1);
    hid_t e = H5Dcreate2(g, "e", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(e >= 0);
    block(e, n, buf, 1);
    H5Dclose(e), H5Dclose(d), H5Gclose(g);
    hid_t a = H5Dcreate_anon(f, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
    check(a >= 0);
    block(a, n, buf, 1);
    check(H5Olink(a, f, "linked", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Dclose(a);
    hid_t lost = H5Dcreate_anon(f, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
    check(lost >= 0);
    block(lost, n, buf, 1);
    H5Dclose(lost), H5Sclose(space), H5Fclose(f);
}

/* `nested`: an anonymous group (inner) made, a dataset made in it, linked into another
 * anonymous group (outer) as "inner", a dataset made in it after, an anonymous dataset linked
 * into it as "a", then outer linked as /outer: /outer/inner/d, /outer/inner/e, /outer/inner/a. */
static void nested(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t f = open_file(path, 1), space = space_of(n);
    hid_t outer = H5Gcreate_anon(f, H5P_DEFAULT, H5P_DEFAULT);
    hid_t inner = H5Gcreate_anon(f, H5P_DEFAULT, H5P_DEFAULT);
    check(outer >= 0 && inner >= 0);
    hid_t d =
        H5Dcreate2(inner, "d", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0);
    block(d, n, buf, 1);
    check(H5Olink(inner, outer, "inner", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    hid_t e =
        H5Dcreate2(inner, "e", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(e >= 0);
    block(e, n, buf, 1);
    hid_t a = H5Dcreate_anon(f, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
    check(a >= 0);
    block(a, n, buf, 1);
    check(H5Olink(a, inner, "a", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    check(H5Olink(outer, f, "outer", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Dclose(a), H5Dclose(e), H5Dclose(d), H5Gclose(inner), H5Gclose(outer);
    H5Sclose(space), H5Fclose(f);
}

/* `seekpos`: NAME.dat written through the individual file pointer after MPI_File_seek with each
 * whence: SEEK_SET, SEEK_CUR (forward), SEEK_END; then again under a view with a displacement
 * (4096 + rank * 1024 bytes, contiguous bytes), where offsets count from the displacement. */
static void seekpos(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.dat", name);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS);
    int len = (int)(n * sizeof(double)) / 8; /* small records */
    MPI_Offset mine = (MPI_Offset)rank * 512;
    for (int view = 0; view < 2; view++) {
        if (view) {
            MPI_Barrier(MPI_COMM_WORLD); /* every rank's writes in, for SEEK_END */
            check(MPI_File_set_view(fh, 4096 + (MPI_Offset)rank * 1024, MPI_BYTE, MPI_BYTE,
                                    "native", MPI_INFO_NULL) == MPI_SUCCESS);
            mine = 0;
        }
        check(MPI_File_seek(fh, mine + 16, MPI_SEEK_SET) == MPI_SUCCESS);
        check(MPI_File_write(fh, buf, len, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        check(MPI_File_seek(fh, 40, MPI_SEEK_CUR) == MPI_SUCCESS);
        check(MPI_File_write(fh, buf, len, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD); /* the file's size the same for every rank */
        check(MPI_File_seek(fh, 8 * rank, MPI_SEEK_END) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD); /* every rank sought before any writes past the end */
        check(MPI_File_write(fh, buf, len, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_File_close(&fh); /* opened again: the default view, offsets the file's again */
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS);
    check(MPI_File_seek(fh, 2048 + (MPI_Offset)rank * len, MPI_SEEK_SET) == MPI_SUCCESS);
    check(MPI_File_write(fh, buf, len, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    MPI_File_close(&fh);
}

static void read_input(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    check(f >= 0);
    hid_t d = H5Dopen2(f, "/x", H5P_DEFAULT);
    check(d >= 0);
    block(d, n, buf, 0);
    H5Dclose(d), H5Fclose(f), H5Pclose(fapl);
}

/* a 2-D chunked dataset of 16-bit integers, size x n, unlimited along its first dimension */
static hid_t matrix(hid_t f, hsize_t n)
{
    hsize_t dims[2] = {(hsize_t)size, n}, maxdims[2] = {H5S_UNLIMITED, n}, chunk[2] = {1, n};
    hid_t space = H5Screate_simple(2, dims, maxdims), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t d = H5Dcreate2(f, "/m", H5T_STD_I16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(d >= 0);
    H5Pclose(dcpl), H5Sclose(space);
    return d;
}

/* this rank's row of /m */
static void row(hid_t d, hsize_t n, short *buf, int write)
{
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = {(hsize_t)rank, 0}, count[2] = {1, n};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(2, count, NULL);
    check((write ? H5Dwrite(d, H5T_NATIVE_SHORT, ms, fs, H5P_DEFAULT, buf)
                 : H5Dread(d, H5T_NATIVE_SHORT, ms, fs, H5P_DEFAULT, buf)) >= 0);
    H5Sclose(ms), H5Sclose(fs);
}

static void make_input(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t f = open_file(path, 1), space = space_of(n);
    hid_t d = H5Dcreate2(f, "/x", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0);
    block(d, n, buf, 1);
    hsize_t three[1] = {3};
    hid_t aspace = H5Screate_simple(1, three, NULL);
    hid_t units = H5Acreate2(d, "units", H5T_IEEE_F64LE, aspace, H5P_DEFAULT, H5P_DEFAULT);
    check(units >= 0 && H5Awrite(units, H5T_NATIVE_DOUBLE, buf) >= 0);
    H5Aclose(units), H5Sclose(aspace);
    hid_t m = matrix(f, n);
    row(m, n, (short *)buf, 1);
    H5Dclose(m), H5Dclose(d), H5Sclose(space), H5Fclose(f);
    snprintf(path, sizeof path, "%s.dat", name);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS);
    check(MPI_File_write_at_all(fh, (MPI_Offset)(rank * n * sizeof(double)), buf,
                                (int)(n * sizeof(double)), MPI_BYTE,
                                MPI_STATUS_IGNORE) == MPI_SUCCESS);
    MPI_File_close(&fh);
}

static void transform(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    check(f >= 0);
    hid_t d = H5Dopen2(f, "/x", H5P_DEFAULT), m = H5Dopen2(f, "/m", H5P_DEFAULT);
    check(d >= 0 && m >= 0);
    block(d, n, buf, 0);
    hid_t units = H5Aopen(d, "units", H5P_DEFAULT); /* an attribute of the input, read */
    check(units >= 0 && H5Aread(units, H5T_NATIVE_DOUBLE, buf) >= 0);
    H5Aclose(units);
    short *row_buf = malloc(n * sizeof *row_buf);
    check(row_buf != NULL);
    row(m, n, row_buf, 0);
    free(row_buf);
    H5Dclose(m), H5Dclose(d), H5Fclose(f), H5Pclose(fapl);
    snprintf(path, sizeof path, "%s_out.h5", name);
    hid_t o = open_file(path, 1), space = space_of(n);
    hid_t y = H5Dcreate2(o, "/y", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(y >= 0);
    block(y, n, buf, 1);
    H5Dclose(y), H5Sclose(space), H5Fclose(o);
}

/* `posixread`: reads NAME.dat with stdio, as an input deck is read */
static void posix_read(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.dat", name);
    FILE *in = fopen(path, "rb");
    check(in != NULL);
    check(fread(buf, sizeof(double), n, in) == n);
    fclose(in);
}

static void raw_read(const char *name, hsize_t n, double *buf, int shared)
{
    char path[256];
    snprintf(path, sizeof path, "%s.dat", name);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS);
    if (shared) /* through the shared file pointer: the trace has no offsets */
        check(MPI_File_read_ordered(fh, buf, (int)(n * sizeof(double)), MPI_BYTE,
                                    MPI_STATUS_IGNORE) == MPI_SUCCESS);
    else
        check(MPI_File_read_at_all(fh, (MPI_Offset)(rank * n * sizeof(double)), buf,
                                   (int)(n * sizeof(double)), MPI_BYTE,
                                   MPI_STATUS_IGNORE) == MPI_SUCCESS);
    MPI_File_close(&fh);
}

static void reopen(const char *name, int steps, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    H5Fclose(open_file(path, 1));
    for (int s = 0; s < steps; s++) {
        char dname[64];
        snprintf(dname, sizeof dname, "/step_%d", s);
        hid_t f = open_file(path, 0), space = space_of(n);
        hid_t d =
            H5Dcreate2(f, dname, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(d >= 0);
        block(d, n, buf, 1);
        H5Dclose(d), H5Sclose(space), H5Fclose(f);
    }
}

/* `unlink`: /a, /b and /g/c made and written, a soft link /g/alias made (no object the trace
 * follows), the file closed; opened again, /b deleted (H5Ldelete), alias (H5Gunlink on /g),
 * /g's first link by name (/g/c) (H5Ldelete_by_idx), then /v made and written in it: the file
 * has /a, /g and /v. */
static void unlink_links(const char *name, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.h5", name);
    hid_t f = open_file(path, 1), space = space_of(n);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(g >= 0);
    const char *made[] = {"a", "b", "g/c"};
    for (int i = 0; i < 3; i++) {
        hid_t d =
            H5Dcreate2(f, made[i], H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        check(d >= 0);
        block(d, n, buf, 1);
        H5Dclose(d);
    }
    check(H5Lcreate_soft("/a", g, "alias", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Gclose(g), H5Fclose(f);
    f = open_file(path, 0);
    check(H5Ldelete(f, "b", H5P_DEFAULT) >= 0);
    g = H5Gopen2(f, "g", H5P_DEFAULT);
    check(g >= 0);
#ifndef H5_NO_DEPRECATED_SYMBOLS
    check(H5Gunlink(g, "alias") >= 0);
#else
    check(H5Ldelete(g, "alias", H5P_DEFAULT) >= 0);
#endif
    H5Gclose(g);
    check(H5Ldelete_by_idx(f, "g", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT) >= 0);
    hid_t v = H5Dcreate2(f, "v", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(v >= 0);
    block(v, n, buf, 1);
    H5Dclose(v), H5Sclose(space), H5Fclose(f);
}

static void seek(const char *name, int steps, hsize_t n, double *buf)
{
    char path[256];
    snprintf(path, sizeof path, "%s.dat", name);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS);
    if (rank == 0)
        check(MPI_File_write_at(fh, 0, buf, 64, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    for (int s = 0; s < steps; s++) {
        char step_path[256]; /* the step's own file: the steps */
        snprintf(step_path, sizeof step_path, "%s_%d.out", name, s);
        MPI_File out;
        check(MPI_File_open(MPI_COMM_WORLD, step_path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                            MPI_INFO_NULL, &out) == MPI_SUCCESS);
        check(MPI_File_write_at_all(out, (MPI_Offset)(rank * n * sizeof(double)), buf,
                                    (int)(n * sizeof(double)), MPI_BYTE,
                                    MPI_STATUS_IGNORE) == MPI_SUCCESS);
        MPI_File_close(&out);
        MPI_Offset at = 4096 + (MPI_Offset)s * 65536;
        check(MPI_File_seek_shared(fh, at, MPI_SEEK_SET) == MPI_SUCCESS);
        check(MPI_File_write_ordered(fh, buf, (int)(n * sizeof(double)), MPI_BYTE,
                                     MPI_STATUS_IGNORE) == MPI_SUCCESS);
    }
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: skel_tester "
                            "anon|nested|seekpos|read|make|transform|rawread|sharedread|posixread|"
                            "reopen|seek|unlink NAME "
                            "[STEPS [N]]\n");
        MPI_Finalize();
        return 2;
    }
    int steps = argc > 3 ? atoi(argv[3]) : 3;
    hsize_t n = argc > 4 ? (hsize_t)atoll(argv[4]) : 64;
    double *buf = malloc(n * sizeof *buf);
    check(buf != NULL && steps > 0);
    for (hsize_t i = 0; i < n; i++)
        buf[i] = rank * 1000.0 + (double)i;
    if (strcmp(argv[1], "anon") == 0)
        anon(argv[2], n, buf);
    else if (strcmp(argv[1], "nested") == 0)
        nested(argv[2], n, buf);
    else if (strcmp(argv[1], "seekpos") == 0)
        seekpos(argv[2], n, buf);
    else if (strcmp(argv[1], "posixread") == 0)
        posix_read(argv[2], n, buf);
    else if (strcmp(argv[1], "read") == 0)
        read_input(argv[2], n, buf);
    else if (strcmp(argv[1], "make") == 0)
        make_input(argv[2], n, buf);
    else if (strcmp(argv[1], "transform") == 0)
        transform(argv[2], n, buf);
    else if (strcmp(argv[1], "rawread") == 0 || strcmp(argv[1], "sharedread") == 0)
        raw_read(argv[2], n, buf, argv[1][0] == 's');
    else if (strcmp(argv[1], "reopen") == 0)
        reopen(argv[2], steps, n, buf);
    else if (strcmp(argv[1], "seek") == 0)
        seek(argv[2], steps, n, buf);
    else if (strcmp(argv[1], "unlink") == 0)
        unlink_links(argv[2], n, buf);
    free(buf);
    MPI_Finalize();
    return 0;
}
