/* h5probe: an ordinary parallel HDF5 program that also reports, as JSON on stdout, every
 * property the runtime can change, read back from HDF5 and MPI-IO themselves. Tests run it
 * with and without a control file and compare.
 *
 * usage: h5probe FILE [--sec2] [--rows N]
 *   writes /grid (2-D float, N rows per rank x 100), /ids (1-D int) and /g/small (1-D short),
 *   closes, reopens read-only, reads everything back and verifies it. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs;

static void hints_json(MPI_File fh)
{
    MPI_Info info;
    MPI_File_get_info(fh, &info);
    int n;
    MPI_Info_get_nkeys(info, &n);
    printf("{");
    for (int i = 0; i < n; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
        printf("%s\"%s\": \"%s\"", i ? ", " : "", key, val);
    }
    printf("}");
    MPI_Info_free(&info);
}

/* Property lists of an open file; collective (H5Fget_access_plist duplicates the
 * communicator), printed by rank 0. */
static void file_json(hid_t fid, int mpio)
{
    hid_t fapl = H5Fget_access_plist(fid);
    hsize_t thr, align, meta, small;
    size_t sieve;
    H5Pget_alignment(fapl, &thr, &align);
    H5Pget_sieve_buf_size(fapl, &sieve);
    H5Pget_meta_block_size(fapl, &meta);
    H5Pget_small_data_block_size(fapl, &small);
    H5AC_cache_config_t mdc;
    mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    H5Fget_mdc_config(fid, &mdc);
    hbool_t coll_read = 0, coll_write = 0;
    H5Pget_all_coll_metadata_ops(fapl, &coll_read);
    H5Pget_coll_metadata_write(fapl, &coll_write);
    if (rank == 0) {
        printf("{\"alignment\": [%llu, %llu], \"sieve_buf_size\": %zu, \"meta_block_size\": "
               "%llu, \"small_data_block_size\": %llu, \"mdc_initial_size\": %zu, "
               "\"mdc_min_size\": %zu, \"mdc_max_size\": %zu, \"coll_metadata_read\": %s, "
               "\"coll_metadata_write\": %s, \"hints\": ",
               (unsigned long long)thr, (unsigned long long)align, sieve, (unsigned long long)meta,
               (unsigned long long)small, mdc.initial_size, mdc.min_size, mdc.max_size,
               coll_read ? "true" : "false", coll_write ? "true" : "false");
    }
    if (mpio) {
        MPI_File *fh;
        H5Fget_vfd_handle(fid, fapl, (void **)&fh);
        if (rank == 0)
            hints_json(*fh);
    } else if (rank == 0) {
        printf("{}");
    }
    if (rank == 0)
        printf("}");
    H5Pclose(fapl);
}

static const char *io_mode_name(H5D_mpio_actual_io_mode_t m)
{
    switch (m) {
    case H5D_MPIO_NO_COLLECTIVE: return "independent";
    case H5D_MPIO_CHUNK_INDEPENDENT: return "chunk-independent";
    case H5D_MPIO_CHUNK_COLLECTIVE: return "chunk-collective";
    case H5D_MPIO_CHUNK_MIXED: return "chunk-mixed";
    case H5D_MPIO_CONTIGUOUS_COLLECTIVE: return "contiguous-collective";
    default: return "unknown";
    }
}

static void dataset_json(hid_t dset, const char *name, const char *io_mode)
{
    hid_t dcpl = H5Dget_create_plist(dset), dapl = H5Dget_access_plist(dset);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    hsize_t chunk[8] = {0};
    int nchunk = layout == H5D_CHUNKED ? H5Pget_chunk(dcpl, 8, chunk) : 0;
    H5D_fill_time_t fill;
    H5D_alloc_time_t alloc;
    H5Pget_fill_time(dcpl, &fill);
    H5Pget_alloc_time(dcpl, &alloc);
    size_t slots, bytes;
    double w0;
    H5Pget_chunk_cache(dapl, &slots, &bytes, &w0);
    haddr_t offset = H5Dget_offset(dset);
    if (rank == 0) {
        printf("\"%s\": {\"layout\": \"%s\", \"chunk\": [", name,
               layout == H5D_CHUNKED   ? "chunked"
               : layout == H5D_COMPACT ? "compact"
                                       : "contiguous");
        for (int i = 0; i < nchunk; i++)
            printf("%s%llu", i ? ", " : "", (unsigned long long)chunk[i]);
        printf("], \"fill_time\": \"%s\", \"alloc_time\": \"%s\", \"chunk_cache\": [%zu, %zu, "
               "%g], \"offset\": %lld, \"io_mode\": \"%s\"}",
               fill == H5D_FILL_TIME_IFSET   ? "ifset"
               : fill == H5D_FILL_TIME_ALLOC ? "alloc"
                                             : "never",
               alloc == H5D_ALLOC_TIME_EARLY  ? "early"
               : alloc == H5D_ALLOC_TIME_INCR ? "incr"
               : alloc == H5D_ALLOC_TIME_LATE ? "late"
                                              : "default",
               slots, bytes, w0, offset == HADDR_UNDEF ? -1LL : (long long)offset, io_mode);
    }
    H5Pclose(dcpl);
    H5Pclose(dapl);
}

typedef struct {
    const char *name;
    hid_t type;
    int rank;
    hsize_t cols;
} spec;

static const spec specs[] = {{"/grid", 0, 2, 100}, {"/ids", 1, 1, 1}, {"/g/small", 2, 1, 1}};

static hid_t type_of(int t)
{
    return t == 0 ? H5T_NATIVE_FLOAT : t == 1 ? H5T_NATIVE_INT : H5T_NATIVE_SHORT;
}

static double value_at(int d, hsize_t i)
{
    return (double)((i * 7 + (hsize_t)d * 13) % 1000);
}

/* Buffers hold the dataset's own type: a type conversion would make HDF5 fall back from
 * collective to independent I/O and hide the transfer mode. */
static void put(int t, void *buf, size_t i, double v)
{
    if (t == 0)
        ((float *)buf)[i] = (float)v;
    else if (t == 1)
        ((int *)buf)[i] = (int)v;
    else
        ((short *)buf)[i] = (short)v;
}

static double get(int t, const void *buf, size_t i)
{
    return t == 0   ? ((const float *)buf)[i]
           : t == 1 ? ((const int *)buf)[i]
                    : ((const short *)buf)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        fprintf(stderr, "usage: h5probe FILE [--sec2] [--rows N]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *path = argv[1];
    int mpio = 1;
    hsize_t rows = 64;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--sec2") == 0)
            mpio = 0;
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            rows = (hsize_t)atoll(argv[++i]);
    }
    if (!mpio && nprocs > 1) {
        fprintf(stderr, "h5probe: --sec2 needs one rank\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (mpio)
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t fid = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fid < 0)
        MPI_Abort(MPI_COMM_WORLD, 1);
    H5Gclose(H5Gcreate2(fid, "/g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const char *modes[3];
    int nds = 3, bad = 0;
    for (int d = 0; d < nds; d++) {
        const spec *s = &specs[d];
        hsize_t dims[2] = {rows * (hsize_t)nprocs, s->cols}, start[2] = {rows * (hsize_t)rank, 0},
                count[2] = {rows, s->cols};
        hid_t space = H5Screate_simple(s->rank, dims, NULL);
        hid_t dset = H5Dcreate2(fid, s->name, type_of(s->type), space, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
        hid_t mem = H5Screate_simple(s->rank, count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        size_t n = (size_t)(rows * s->cols);
        void *buf = malloc(n * sizeof(double));
        for (size_t i = 0; i < n; i++)
            put(s->type, buf, i, value_at(d, start[0] * s->cols + i));
        hid_t dxpl = H5Pcreate(H5P_DATASET_XFER); /* the application's own, independent */
        H5Dwrite(dset, type_of(s->type), mem, space, dxpl, buf);
        H5D_mpio_actual_io_mode_t m = H5D_MPIO_NO_COLLECTIVE;
        if (mpio)
            H5Pget_mpio_actual_io_mode(dxpl, &m);
        modes[d] = io_mode_name(m);
        H5Pclose(dxpl);
        free(buf);
        H5Sclose(mem);
        H5Sclose(space);
        H5Dclose(dset);
    }
    if (rank == 0)
        printf("{\"create\": ");
    file_json(fid, mpio);
    if (rank == 0)
        printf(", \"datasets\": {");
    for (int d = 0; d < nds; d++) {
        hid_t dset = H5Dopen2(fid, specs[d].name, H5P_DEFAULT);
        if (rank == 0 && d)
            printf(", ");
        dataset_json(dset, specs[d].name, modes[d]);
        H5Dclose(dset);
    }
    if (rank == 0)
        printf("}");
    H5Fclose(fid);

    /* read back, verifying every value, through H5Fopen/H5Dopen2 */
    fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (rank == 0)
        printf(", \"open\": ");
    file_json(fid, mpio);
    if (rank == 0)
        printf(", \"reopened\": {");
    for (int d = 0; d < nds; d++) {
        const spec *s = &specs[d];
        hid_t dset = H5Dopen2(fid, s->name, H5P_DEFAULT);
        hid_t space = H5Dget_space(dset);
        hsize_t start[2] = {rows * (hsize_t)rank, 0}, count[2] = {rows, s->cols};
        hid_t mem = H5Screate_simple(s->rank, count, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
        size_t n = (size_t)(rows * s->cols);
        void *buf = malloc(n * sizeof(double));
        H5Dread(dset, type_of(s->type), mem, space, H5P_DEFAULT, buf);
        for (size_t i = 0; i < n; i++)
            bad += get(s->type, buf, i) != value_at(d, start[0] * s->cols + i);
        if (rank == 0 && d)
            printf(", ");
        dataset_json(dset, s->name, "n/a");
        free(buf);
        H5Sclose(mem);
        H5Sclose(space);
        H5Dclose(dset);
    }
    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("}, \"ranks\": %d, \"mismatches\": %d}\n", nprocs, all_bad);
    H5Fclose(fid);
    H5Pclose(fapl);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
