/* h5errors: an ordinary parallel HDF5 program that meets the failures applications rely on, and
 * prints for each its result, errno and the whole HDF5 error stack it sees (each entry's
 * function, major and minor class and description). Run with and without the runtime: the
 * output must be the same.
 *
 * usage: h5errors DIR errors   the failing calls (and one with HDF5's own printing on stderr);
 *                              a variable-length string dataset (HDF5 refuses fill time
 *                              "never" for it); data read back; datasets opened as
 *                              H5Oopen, H5Oopen_by_idx and H5Dopen1 print their chunk cache
 *        h5errors DIR many N   N datasets of 128 bytes, each released with H5Idec_ref, and the
 *                              file too
 *        h5errors DIR own      a file whose access list sets its own alignment (0, 4096) and
 *                              sieve buffer (the default value): prints the alignment in effect
 *        h5errors DIR owndset  datasets whose creation list sets a fill time and an allocation
 *                              time of their own (and one HDF5's defaults): prints those in effect
 * Every file is opened with the MPI-IO driver on MPI_COMM_WORLD; rank 0 prints. */
#include <errno.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;
static char dir[4096];

static const char *path(const char *name)
{
    static char buf[8192];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static herr_t print_entry(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)data;
    char maj[256] = "", min[256] = "";
    H5Eget_msg(e->maj_num, NULL, maj, sizeof maj);
    H5Eget_msg(e->min_num, NULL, min, sizeof min);
    if (rank == 0)
        printf("  #%u %s line %u: %s | %s | %s\n", n, e->func_name, e->line, maj, min, e->desc);
    return 0;
}

/* The call's result, errno and error stack, as the application sees them right after it. */
static void report(const char *what, long long rc, int err)
{
    if (rank == 0)
        printf("%s: %s errno=%d (%s)\n", what, rc < 0 ? "failed" : "ok", err,
               err ? strerror(err) : "-");
    hid_t stack = H5Eget_current_stack();
    H5Ewalk2(stack, H5E_WALK_DOWNWARD, print_entry, NULL);
    H5Eclose_stack(stack);
}

#define CALL(what, expr)                                                                           \
    do {                                                                                           \
        errno = 0;                                                                                 \
        long long rc_ = (long long)(expr);                                                         \
        report(what, rc_, errno);                                                                  \
    } while (0)

static hid_t fapl(void)
{
    hid_t l = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(l, MPI_COMM_WORLD, MPI_INFO_NULL);
    return l;
}

static void print_cache(const char *how, hid_t d)
{
    size_t slots = 0, bytes = 0;
    double w0 = 0;
    hid_t dapl = H5Dget_access_plist(d);
    H5Pget_chunk_cache(dapl, &slots, &bytes, &w0);
    H5Pclose(dapl);
    if (rank == 0)
        printf("%s: chunk cache %zu slots, %zu bytes, w0 %.2f\n", how, slots, bytes, w0);
}

static int errors(void)
{
    hid_t fa = fapl();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    CALL("H5Fopen of a missing file", H5Fopen(path("missing.h5"), H5F_ACC_RDONLY, fa));
    hid_t f;
    CALL("H5Fcreate", f = H5Fcreate(path("errors.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, fa));
    hsize_t n = 64, chunk = 16;
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t d;
    CALL("H5Dcreate2 chunked",
         d = H5Dcreate2(f, "ints", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    int buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = i * 3;
    CALL("H5Dwrite", H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    CALL("H5Dcreate2 of an existing name",
         H5Dcreate2(f, "ints", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    CALL("H5Dopen2 of a missing name", H5Dopen2(f, "no/such", H5P_DEFAULT));
    CALL("H5Oopen of a missing name", H5Oopen(f, "nothing", H5P_DEFAULT));
    /* variable-length strings: HDF5 refuses fill time "never" for them */
    hid_t vls = H5Tcopy(H5T_C_S1);
    H5Tset_size(vls, H5T_VARIABLE);
    hsize_t four = 4;
    hid_t sspace = H5Screate_simple(1, &four, NULL);
    hid_t s;
    CALL("H5Dcreate2 of variable-length strings",
         s = H5Dcreate2(f, "strings", vls, sspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    /* (parallel HDF5 1.10 writes no variable-length data: the dataset stays unwritten) */
    CALL("H5Dclose of strings", H5Dclose(s));
    /* with HDF5's own printing (stderr), as a C program has it by default */
    H5Eset_auto2(H5E_DEFAULT, (H5E_auto2_t)H5Eprint2, stderr);
    CALL("H5Dopen2 of a missing name, printed", H5Dopen2(f, "printed/missing", H5P_DEFAULT));
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    CALL("H5Dclose", H5Dclose(d));
    CALL("H5Fclose", H5Fclose(f));
    MPI_Barrier(MPI_COMM_WORLD);

    CALL("H5Fcreate exclusive of an existing file",
         H5Fcreate(path("errors.h5"), H5F_ACC_EXCL, H5P_DEFAULT, fa));
    CALL("H5Fopen read-only", f = H5Fopen(path("errors.h5"), H5F_ACC_RDONLY, fa));
    CALL("H5Oopen", d = H5Oopen(f, "ints", H5P_DEFAULT));
    print_cache("H5Oopen", d);
    CALL("H5Dwrite to a read-only file",
         H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
    char *strings[64];
    CALL("H5Dread with an impossible conversion",
         H5Dread(d, vls, H5S_ALL, H5S_ALL, H5P_DEFAULT, strings));
    int back[64];
    CALL("H5Dread", H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back));
    int same = memcmp(back, buf, sizeof buf) == 0;
    CALL("H5Oclose", H5Oclose(d));
    hid_t by_idx;
    CALL("H5Oopen_by_idx",
         by_idx = H5Oopen_by_idx(f, ".", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT));
    print_cache("H5Oopen_by_idx", by_idx);
    CALL("H5Dclose", H5Dclose(by_idx));
    hid_t one;
    CALL("H5Dopen1", one = H5Dopen1(f, "ints"));
    print_cache("H5Dopen1", one);
    CALL("H5Dclose", H5Dclose(one));
    CALL("H5Dopen2 strings", s = H5Dopen2(f, "strings", H5P_DEFAULT));
    CALL("H5Dclose", H5Dclose(s));
    CALL("H5Fclose", H5Fclose(f));
    if (rank == 0)
        printf("data read back: %s\n", same ? "same" : "DIFFERENT");
    H5Tclose(vls);
    H5Sclose(sspace);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(fa);
    return same ? 0 : 1;
}

/* N datasets, each released by reference count as h5py does, then the file the same way. */
static int many(int count)
{
    hid_t fa = fapl();
    hid_t f = H5Fcreate(path("many.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, fa);
    hsize_t n = 32;
    hid_t space = H5Screate_simple(1, &n, NULL);
    int buf[32] = {0};
    int failed = f < 0;
    for (int i = 0; i < count && !failed; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%05d", i);
        hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        buf[0] = i;
        failed |= d < 0 || H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0;
        failed |= H5Idec_ref(d) != 0;
    }
    H5Sclose(space);
    H5Pclose(fa);
    failed |= H5Idec_ref(f) != 0;
    if (rank == 0)
        printf("many: %d datasets%s\n", count, failed ? " FAILED" : "");
    return failed;
}

/* The application's own file access settings: an alignment of its choice, and a sieve buffer
 * size equal to HDF5's default (set, but nothing to override). */
static int own(void)
{
    hid_t fa = fapl();
    H5Pset_alignment(fa, 0, 4096);
    H5Pset_sieve_buf_size(fa, 65536);
    hid_t f = H5Fcreate(path("own.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, fa);
    hid_t used = H5Fget_access_plist(f);
    hsize_t threshold = 0, alignment = 0;
    H5Pget_alignment(used, &threshold, &alignment);
    if (rank == 0)
        printf("own: alignment in effect %llu, %llu\n", (unsigned long long)threshold,
               (unsigned long long)alignment);
    H5Pclose(used);
    H5Pclose(fa);
    return H5Fclose(f) < 0;
}

/* The application's own dataset creation settings: three datasets whose creation list sets a
 * fill time (alloc) and an allocation time (early) of its own, one whose list sets HDF5's
 * defaults (ifset, and late for a contiguous dataset: nothing to override); prints the fill
 * and allocation times in effect. */
static int owndset(void)
{
    hid_t fa = fapl();
    hid_t f = H5Fcreate(path("owndset.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, fa);
    hsize_t n = 64;
    hid_t space = H5Screate_simple(1, &n, NULL);
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, i < 3 ? "own%d" : "defaults", i);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_fill_time(dcpl, i < 3 ? H5D_FILL_TIME_ALLOC : H5D_FILL_TIME_IFSET);
        H5Pset_alloc_time(dcpl, i < 3 ? H5D_ALLOC_TIME_EARLY : H5D_ALLOC_TIME_LATE);
        hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        hid_t used = d >= 0 ? H5Dget_create_plist(d) : H5I_INVALID_HID;
        H5D_fill_time_t ft = H5D_FILL_TIME_ERROR;
        H5D_alloc_time_t at = H5D_ALLOC_TIME_ERROR;
        H5Pget_fill_time(used, &ft);
        H5Pget_alloc_time(used, &at);
        if (rank == 0)
            printf("owndset: %s fill time %d, allocation time %d\n", name, (int)ft, (int)at);
        failed |= d < 0;
        H5Pclose(used);
        H5Dclose(d);
        H5Pclose(dcpl);
    }
    H5Sclose(space);
    H5Pclose(fa);
    return H5Fclose(f) < 0 || failed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) {
        fprintf(stderr, "usage: h5errors DIR errors | h5errors DIR many N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    int rc = strcmp(argv[2], "many") == 0      ? many(argc > 3 ? atoi(argv[3]) : 5000)
             : strcmp(argv[2], "own") == 0     ? own()
             : strcmp(argv[2], "owndset") == 0 ? owndset()
                                               : errors();
    MPI_Finalize();
    return rc;
}
