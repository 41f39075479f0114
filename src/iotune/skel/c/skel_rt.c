/* I/O methods and timing of a generated skeleton (see skel_rt.h and docs/skel.md).
 *
 * native     what the application did: HDF5 files through HDF5 with the traced transfer mode,
 *            MPI-IO files with MPI_File_write_at(_all) at the traced offsets or through the
 *            traced file view (skel_write_view), POSIX files with pwrite.
 * hdf5       everything through HDF5 (--transfer forces collective or independent); a raw
 *            file becomes one 1-D byte dataset per write, ranks' blocks in rank order.
 * mpiio      Skel's MPI_LUSTRE: one shared raw file, each rank's bytes of a file contiguous
 *            from an offset aligned to --stripe (found with an MPI_Allgather: communication).
 * posix      one file per rank (NAME.dir/rank-R), written with pwrite.
 * aggregate  Skel's MPI_AMR: --aggregators N groups; members send their bytes to the group's
 *            first rank (MPI_Gatherv: communication), which writes NAME.dir/agg-G.
 */
#define _GNU_SOURCE
#include "skel_rt.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { T_OPEN, T_COMM, T_WRITE, T_CLOSE, T_N };
#define MAX_OPEN_DATASETS 4096

struct skel {
    const char *name;
    int rank, size;
    enum skel_method method;
    int transfer; /* -1: as described, 0 independent, 1 collective */
    long long stripe;
    int aggregators;
    long long steps, cur_step;
    double *times; /* steps x T_N */
    long long bytes;
    char *buf;
    size_t buf_size;
    size_t cursor; /* where the next write's data starts in buf */
    const char *timing, *dir;
    int cleanup;
    MPI_Comm group_comm; /* aggregate: ranks of one aggregator */
    int group;
    char **created; /* files to remove with --cleanup */
    int ncreated;
};

struct skel_file {
    skel_t *s;
    enum skel_api api;
    char name[4096];
    MPI_Comm comm;
    hid_t h5;
    MPI_File mf;
    int fd;
    long long pos;     /* next byte of this rank in a method that packs (mpiio, posix) */
    long long *pieces; /* mpiio / aggregate: sizes written at close */
    int npieces, cap;
    int nwrites;          /* hdf5 method on a raw file: datasets /w0, /w1 ... */
    const long long *mem; /* skel_memory: the next write's memory pieces */
    int nmem;
    struct {
        char name[1024];
        hid_t id;
        hid_t type;
    } dsets[MAX_OPEN_DATASETS];
    int ndsets;
};

long long skel_size = 1;

static void die(skel_t *s, const char *what)
{
    fprintf(stderr, "skeleton %s: rank %d: %s\n", s ? s->name : "?", s ? s->rank : -1, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double now(void)
{
    return MPI_Wtime();
}

static void add(skel_t *s, int part, double t0)
{
    s->times[s->cur_step * T_N + part] += now() - t0;
}

static void format_name(char *out, size_t n, const char *pattern, long long step, int rank)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 32 < n; p++) {
        if (strncmp(p, "{step}", 6) == 0) {
            o += (size_t)snprintf(out + o, n - o, "%lld", step);
            p += 5;
        } else if (strncmp(p, "{rank}", 6) == 0) {
            o += (size_t)snprintf(out + o, n - o, "%d", rank);
            p += 5;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/* Bytes written over after the buffer grows, to push its fresh contents out of the CPU caches:
 * an application's data was made before its I/O, not right before each write (measured: from
 * just-touched memory the skeleton's pwrite of HACC-IO's variables took 0.6x the kernel's). */
#define SKEL_SCRUB ((size_t)64 << 20)

static void ensure_buffer(skel_t *s, size_t bytes)
{
    if (bytes <= s->buf_size)
        return;
    size_t want = bytes > 2 * s->buf_size ? bytes : 2 * s->buf_size; /* few growths */
    char *b = realloc(s->buf, want);
    if (!b)
        die(s, "out of memory for the write buffer");
    memset(b + s->buf_size, 0x5a ^ (s->rank & 0xff), want - s->buf_size); /* touch it now */
    s->buf = b;
    s->buf_size = want;
    static char *scrub;
    if (!scrub)
        scrub = malloc(SKEL_SCRUB);
    if (scrub)
        memset(scrub, s->rank & 0xff, SKEL_SCRUB);
}

/* The data of the next write: each write of a step reads memory of its own, as an application
 * writes its distinct arrays (reusing one hot buffer would make page-cache writes faster
 * than the application's). Past 1 GiB per rank and step the region wraps around. */
#define SKEL_DATA_CAP ((size_t)1 << 30)
static char *data_for(skel_t *s, size_t bytes)
{
    if (s->cursor + bytes > SKEL_DATA_CAP && bytes <= SKEL_DATA_CAP)
        s->cursor = 0;
    ensure_buffer(s, s->cursor + bytes + 1);
    char *p = s->buf + s->cursor;
    s->cursor += bytes;
    return p;
}

static void remember(skel_t *s, const char *path)
{
    if (!s->cleanup)
        return;
    for (int i = 0; i < s->ncreated; i++)
        if (strcmp(s->created[i], path) == 0)
            return;
    s->created = realloc(s->created, sizeof(char *) * (size_t)(s->ncreated + 1));
    s->created[s->ncreated++] = strdup(path);
}

static enum skel_method parse_method(const char *m)
{
    if (strcmp(m, "native") == 0)
        return SKEL_NATIVE;
    if (strcmp(m, "hdf5") == 0)
        return SKEL_M_HDF5;
    if (strcmp(m, "mpiio") == 0)
        return SKEL_M_MPIIO;
    if (strcmp(m, "posix") == 0)
        return SKEL_M_POSIX;
    if (strcmp(m, "aggregate") == 0)
        return SKEL_AGGREGATE;
    return (enum skel_method) - 1;
}

static const char *USAGE =
    "options: --method native|hdf5|mpiio|posix|aggregate  --transfer collective|independent\n"
    "         --stripe BYTES  --aggregators N  --steps N  --set NAME=VALUE  --timing FILE\n"
    "         --dir DIR  --cleanup\n";

skel_t *skel_init(int *argc, char ***argv, const char *name, const char *default_method,
                  skel_param *params, int nparams, long long *steps,
                  long long (*default_steps)(void))
{
    MPI_Init(argc, argv);
    skel_t *s = calloc(1, sizeof *s);
    if (!s)
        die(NULL, "out of memory");
    s->name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->size);
    skel_size = s->size;
    s->method = parse_method(default_method);
    s->transfer = -1;
    s->stripe = 1 << 20;
    s->aggregators = 1;
    s->timing = NULL;
    s->dir = NULL;
    char **av = *argv;
    for (int i = 1; i < *argc; i++) {
        const char *a = av[i], *v = i + 1 < *argc ? av[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "--help") == 0) {
            if (s->rank == 0)
                printf("usage: %s [options]\n%s", av[0], USAGE);
            MPI_Finalize();
            exit(0);
        } else if (strcmp(a, "--cleanup") == 0) {
            s->cleanup = 1;
            continue;
        }
        if (!v)
            bad = 1;
        else if (strcmp(a, "--method") == 0)
            bad = (int)(s->method = parse_method(v)) < 0;
        else if (strcmp(a, "--transfer") == 0) {
            s->transfer = strcmp(v, "collective") == 0 ? 1 : strcmp(v, "independent") == 0 ? 0 : -2;
            bad = s->transfer == -2;
        } else if (strcmp(a, "--stripe") == 0)
            bad = (s->stripe = atoll(v)) < 1;
        else if (strcmp(a, "--aggregators") == 0)
            bad = (s->aggregators = atoi(v)) < 1;
        else if (strcmp(a, "--steps") == 0)
            bad = (*steps = atoll(v)) < 1;
        else if (strcmp(a, "--timing") == 0)
            s->timing = v;
        else if (strcmp(a, "--dir") == 0)
            s->dir = v;
        else if (strcmp(a, "--set") == 0) {
            const char *eq = strchr(v, '=');
            bad = 1;
            for (int p = 0; eq && p < nparams; p++)
                if (strlen(params[p].name) == (size_t)(eq - v) &&
                    !strncmp(params[p].name, v, eq - v)) {
                    *params[p].value = atoll(eq + 1);
                    bad = 0;
                }
        } else
            bad = 1;
        if (bad) {
            if (s->rank == 0)
                fprintf(stderr, "skeleton %s: bad option %s %s\n%s", name, a, v ? v : "", USAGE);
            MPI_Finalize();
            exit(2);
        }
        i++;
    }
    if (s->dir && chdir(s->dir) != 0)
        die(s, "cannot change to --dir");
    if (*steps < 1)
        *steps = default_steps(); /* after --set: it may use the parameters */
    if (*steps < 1)
        die(s, "the number of steps is below 1");
    s->steps = *steps;
    s->times = calloc((size_t)s->steps * T_N, sizeof(double));
    if (!s->times)
        die(s, "out of memory");
    if (s->aggregators > s->size)
        s->aggregators = s->size;
    s->group = (int)((long long)s->rank * s->aggregators / s->size);
    MPI_Comm_split(MPI_COMM_WORLD, s->group, s->rank, &s->group_comm);
    return s;
}

void skel_step(skel_t *s, long long step)
{
    s->cur_step = step < s->steps ? step : s->steps - 1;
    s->cursor = 0; /* a new step rewrites the same arrays */
}

void skel_compute(skel_t *s, double seconds)
{
    (void)s;
    if (seconds <= 0)
        return;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

static void make_dir_of(skel_t *s, const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die(s, "cannot create the method's directory");
}

skel_file_t *skel_open(skel_t *s, const char *pattern, enum skel_api api, long long step)
{
    skel_file_t *f = calloc(1, sizeof *f);
    if (!f)
        die(s, "out of memory");
    f->s = s;
    f->api = api;
    f->fd = -1;
    format_name(f->name, sizeof f->name, pattern, step, s->rank);
    int per_rank = strstr(pattern, "{rank}") != NULL;
    f->comm = per_rank ? MPI_COMM_SELF : MPI_COMM_WORLD;
    enum skel_method m = s->method;
    if (m == SKEL_NATIVE && api == SKEL_HDF5)
        m = SKEL_M_HDF5;
    char path[4200];
    /* remove what a previous run left, outside the timed parts (as the kernels do) */
    if (m == SKEL_M_POSIX || m == SKEL_AGGREGATE) {
        snprintf(path, sizeof path, "%s.dir", f->name);
        make_dir_of(s, path);
        if (m == SKEL_M_POSIX)
            snprintf(path, sizeof path, "%s.dir/rank-%d", f->name, s->rank);
        else
            snprintf(path, sizeof path, "%s.dir/agg-%d", f->name, s->group);
    } else {
        snprintf(path, sizeof path, "%s", f->name);
    }
    int is_owner = per_rank || m == SKEL_M_POSIX || s->rank == 0;
    if (m == SKEL_AGGREGATE) {
        int grank;
        MPI_Comm_rank(s->group_comm, &grank);
        is_owner = grank == 0;
    }
    if (is_owner) {
        unlink(path);
        remember(s, path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    if (m == SKEL_M_HDF5) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, f->comm, MPI_INFO_NULL);
        f->h5 = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Pclose(fapl);
        if (f->h5 < 0)
            die(s, "H5Fcreate failed");
    } else if (m == SKEL_M_MPIIO || (m == SKEL_NATIVE && api == SKEL_MPIIO)) {
        MPI_Info info = MPI_INFO_NULL;
        if (m == SKEL_M_MPIIO) { /* MPI_LUSTRE: stripes the size of the ranks' blocks */
            char v[32];
            MPI_Info_create(&info);
            snprintf(v, sizeof v, "%lld", s->stripe);
            MPI_Info_set(info, "striping_unit", v);
        }
        if (MPI_File_open(f->comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &f->mf) !=
            MPI_SUCCESS)
            die(s, "MPI_File_open failed");
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
    } else if (is_owner || m == SKEL_NATIVE) {
        f->fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (f->fd < 0)
            die(s, "open failed");
    }
    add(s, T_OPEN, t0);
    return f;
}

static hid_t type_of(const char *t, size_t *size)
{
    static const struct {
        const char *name;
        size_t size;
    } types[] = {{"float32", 4}, {"float64", 8}, {"int8", 1},   {"int16", 2},  {"int32", 4},
                 {"int64", 8},   {"uint8", 1},   {"uint16", 2}, {"uint32", 4}, {"uint64", 8}};
    hid_t ids[] = {H5T_NATIVE_FLOAT,  H5T_NATIVE_DOUBLE, H5T_NATIVE_INT8,  H5T_NATIVE_INT16,
                   H5T_NATIVE_INT32,  H5T_NATIVE_INT64,  H5T_NATIVE_UINT8, H5T_NATIVE_UINT16,
                   H5T_NATIVE_UINT32, H5T_NATIVE_UINT64};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].name, t) == 0) {
            *size = types[i].size;
            return ids[i];
        }
    *size = 1;
    return H5T_NATIVE_UINT8;
}

static int is_hdf5(skel_file_t *f)
{
    return f->s->method == SKEL_M_HDF5 || (f->s->method == SKEL_NATIVE && f->api == SKEL_HDF5);
}

void skel_group(skel_file_t *f, const char *pattern, long long step)
{
    if (!is_hdf5(f) || f->api != SKEL_HDF5)
        return;
    char name[1024];
    format_name(name, sizeof name, pattern, step, f->s->rank);
    double t0 = now();
    if (H5Lexists(f->h5, name, H5P_DEFAULT) <= 0) {
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        hid_t g = H5Gcreate2(f->h5, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        H5Pclose(lcpl);
        if (g < 0)
            die(f->s, "H5Gcreate failed");
        H5Gclose(g);
    }
    add(f->s, T_WRITE, t0);
}

void skel_dataset(skel_file_t *f, const char *pattern, long long step, const char *type, int nd,
                  const long long *dims, const long long *maxdims, const long long *chunks)
{
    if (f->api != SKEL_HDF5)
        return;
    if (f->ndsets == MAX_OPEN_DATASETS)
        die(f->s, "too many datasets open in one file");
    char name[1024];
    format_name(name, sizeof name, pattern, step, f->s->rank);
    size_t size;
    hid_t t = type_of(type, &size);
    if (!is_hdf5(f)) { /* other methods need the element size only */
        snprintf(f->dsets[f->ndsets].name, sizeof f->dsets[0].name, "%s", name);
        f->dsets[f->ndsets].id = -1;
        f->dsets[f->ndsets++].type = t;
        return;
    }
    hsize_t d[32], mx[32], ch[32];
    for (int i = 0; i < nd; i++) {
        d[i] = (hsize_t)dims[i];
        mx[i] = maxdims ? (maxdims[i] < 0 ? H5S_UNLIMITED : (hsize_t)maxdims[i]) : d[i];
        if (chunks)
            ch[i] = (hsize_t)chunks[i];
    }
    double t0 = now();
    hid_t space = H5Screate_simple(nd, d, mx);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (chunks)
        H5Pset_chunk(dcpl, nd, ch);
    hid_t id = H5Dcreate2(f->h5, name, t, space, lcpl, dcpl, H5P_DEFAULT);
    H5Pclose(lcpl);
    H5Pclose(dcpl);
    H5Sclose(space);
    if (id < 0)
        die(f->s, "H5Dcreate failed");
    add(f->s, T_WRITE, t0);
    snprintf(f->dsets[f->ndsets].name, sizeof f->dsets[0].name, "%s", name);
    f->dsets[f->ndsets].id = id;
    f->dsets[f->ndsets].type = t;
    f->ndsets++;
}

static int transfer_of(skel_t *s, int collective)
{
    return s->transfer >= 0 ? s->transfer : collective;
}

static void h5_write(skel_file_t *f, hid_t id, hid_t type, size_t esize, int nd,
                     const hsize_t *start, const hsize_t *count, int collective, int active)
{
    skel_t *s = f->s;
    int coll = transfer_of(s, collective) && f->comm == MPI_COMM_WORLD;
    if (!active && !coll)
        return;
    hsize_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= count[i];
    if (!active)
        n = 0;
    const char *data = data_for(s, (size_t)n * esize);
    double t0 = now();
    hid_t fspace = H5Dget_space(id);
    /* memory shaped like the selection, as applications do: HDF5 takes its faster paths
     * when both selections have the same shape */
    hsize_t one = 1;
    hid_t mspace =
        active && n > 0 ? H5Screate_simple(nd, count, NULL) : H5Screate_simple(1, &one, NULL);
    if (active && n > 0)
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    else {
        H5Sselect_none(fspace);
        H5Sselect_none(mspace);
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    herr_t rc = H5Dwrite(id, type, mspace, fspace, dxpl, data);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(fspace);
    if (rc < 0)
        die(s, "H5Dwrite failed");
    add(s, T_WRITE, t0);
    s->bytes += (long long)(n * esize);
}

void skel_write(skel_file_t *f, const char *pattern, long long step, int nd, const long long *start,
                const long long *count, int collective, int active)
{
    skel_t *s = f->s;
    char name[1024];
    format_name(name, sizeof name, pattern, step, s->rank);
    long long n = 1;
    for (int i = 0; i < nd; i++)
        n *= count[i];
    if (is_hdf5(f)) {
        int k = f->ndsets - 1;
        while (k >= 0 && strcmp(f->dsets[k].name, name) != 0)
            k--;
        if (k < 0)
            die(s, "write to a dataset that was not created");
        hsize_t st[32], ct[32];
        for (int i = 0; i < nd; i++) {
            st[i] = (hsize_t)start[i];
            ct[i] = (hsize_t)count[i];
        }
        size_t esize = H5Tget_size(f->dsets[k].type);
        h5_write(f, f->dsets[k].id, f->dsets[k].type, esize, nd, st, ct, collective, active);
        return;
    }
    /* other methods see a dataset write as its bytes */
    size_t esize = 1;
    for (int k = f->ndsets - 1; k >= 0; k--)
        if (strcmp(f->dsets[k].name, name) == 0)
            esize = H5Tget_size(f->dsets[k].type);
    skel_write_bytes(f, -1, active ? n * (long long)esize : 0, collective, active);
}

static const char *write_memory(skel_file_t *f, long long size, MPI_Datatype *type, int *count);

/* dataset sizes are needed by the other methods too: remember types without creating */
void skel_write_bytes(skel_file_t *f, long long offset, long long size, int collective, int active)
{
    skel_t *s = f->s;
    enum skel_method m = s->method;
    if (!active)
        size = 0;
    if (m == SKEL_M_HDF5) { /* a raw file through HDF5: one byte dataset per write */
        long long *sizes = malloc(sizeof(long long) * (size_t)s->size);
        double t0 = now();
        MPI_Allgather(&size, 1, MPI_LONG_LONG, sizes, 1, MPI_LONG_LONG, f->comm);
        add(s, T_COMM, t0);
        int n = f->comm == MPI_COMM_WORLD ? s->size : 1;
        long long total = 0, mine = 0;
        for (int r = 0; r < n; r++) {
            if (r < (f->comm == MPI_COMM_WORLD ? s->rank : 0))
                mine += sizes[r];
            total += sizes[r];
        }
        free(sizes);
        char name[32];
        snprintf(name, sizeof name, "/w%d", f->nwrites++);
        hsize_t d = (hsize_t)total, st = (hsize_t)mine, ct = (hsize_t)size;
        t0 = now();
        hid_t space = H5Screate_simple(1, &d, NULL);
        hid_t id =
            H5Dcreate2(f->h5, name, H5T_NATIVE_UINT8, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sclose(space);
        add(s, T_WRITE, t0);
        h5_write(f, id, H5T_NATIVE_UINT8, 1, 1, &st, &ct, collective, size > 0);
        H5Dclose(id);
        return;
    }
    if (m == SKEL_M_MPIIO || m == SKEL_AGGREGATE) { /* packed at close */
        if (size == 0)
            return;
        if (f->npieces == f->cap) {
            f->cap = f->cap ? 2 * f->cap : 64;
            f->pieces = realloc(f->pieces, sizeof(long long) * (size_t)f->cap);
            if (!f->pieces)
                die(s, "out of memory");
        }
        f->pieces[f->npieces++] = size;
        return;
    }
    if (m == SKEL_M_POSIX || offset < 0)
        offset = f->pos;
    MPI_Datatype mtype = MPI_BYTE;
    int mcount = (int)size;
    int native_mpiio = f->api == SKEL_MPIIO && m == SKEL_NATIVE;
    const char *data =
        native_mpiio ? write_memory(f, size, &mtype, &mcount) : data_for(s, (size_t)size);
    f->nmem = 0;
    double t0 = now();
    if (native_mpiio) {
        MPI_Status st;
        int rc =
            transfer_of(s, collective)
                ? MPI_File_write_at_all(f->mf, offset, data, mcount, mtype, &st)
                : (size ? MPI_File_write_at(f->mf, offset, data, mcount, mtype, &st) : MPI_SUCCESS);
        if (mtype != MPI_BYTE)
            MPI_Type_free(&mtype);
        if (rc != MPI_SUCCESS)
            die(s, "MPI_File_write_at failed");
    } else if (size > 0) {
        for (long long done = 0; done < size;) {
            ssize_t w = pwrite(f->fd, data + done, (size_t)(size - done), offset + done);
            if (w < 0)
                die(s, "pwrite failed");
            done += w;
        }
    }
    add(s, T_WRITE, t0);
    f->pos = offset + size;
    s->bytes += size;
}

void skel_memory(skel_file_t *f, int n, const long long *pieces)
{
    f->nmem = n;
    f->mem = pieces;
}

#define SKEL_MEM_GAP 64 /* bytes between the pieces of a noncontiguous memory datatype */

/* The memory of a native MPI-IO write of size bytes: the pieces skel_memory gave (one instance
 * of an hindexed type, *count 1) when they add up to size, else size contiguous bytes. */
static const char *write_memory(skel_file_t *f, long long size, MPI_Datatype *type, int *count)
{
    long long sum = 0;
    for (int i = 0; i < f->nmem; i++)
        sum += f->mem[i];
    *type = MPI_BYTE;
    *count = (int)size;
    if (f->nmem < 2 || sum != size) {
        f->nmem = 0;
        return data_for(f->s, (size_t)size);
    }
    int *len = malloc(sizeof(int) * (size_t)f->nmem);
    MPI_Aint *at = malloc(sizeof(MPI_Aint) * (size_t)f->nmem);
    if (!len || !at)
        die(f->s, "out of memory");
    long long off = 0;
    for (int i = 0; i < f->nmem; i++) {
        at[i] = (MPI_Aint)off;
        len[i] = (int)f->mem[i];
        off += f->mem[i] + SKEL_MEM_GAP;
    }
    MPI_Type_create_hindexed(f->nmem, len, at, MPI_BYTE, type);
    MPI_Type_commit(type);
    free(len);
    free(at);
    *count = 1;
    f->nmem = 0;
    return data_for(f->s, (size_t)off);
}

void skel_write_view(skel_file_t *f, long long offset, long long size, long long lb,
                     long long extent, int nblocks, const long long *view, int collective,
                     int active)
{
    skel_t *s = f->s;
    if (s->method != SKEL_NATIVE || f->api != SKEL_MPIIO) {
        skel_write_bytes(f, nblocks > 0 ? offset + view[0] : offset, size, collective, active);
        return;
    }
    if (!active)
        size = nblocks = 0;
    int *len = malloc(sizeof(int) * (size_t)(nblocks + 1));
    MPI_Aint *at = malloc(sizeof(MPI_Aint) * (size_t)(nblocks + 1));
    if (!len || !at)
        die(s, "out of memory");
    for (int i = 0; i < nblocks; i++) {
        at[i] = (MPI_Aint)view[2 * i];
        len[i] = (int)view[2 * i + 1];
    }
    MPI_Datatype ftype = MPI_BYTE; /* no blocks (a rank without data): bytes */
    if (nblocks > 0) {
        MPI_Aint lo = 0, ext = 0;
        MPI_Type_create_hindexed(nblocks, len, at, MPI_BYTE, &ftype);
        MPI_Type_get_extent(ftype, &lo, &ext);
        /* resized only when it must be: ROMIO's collective writes of a resized type span a
         * wider range of the file (measured: 432 bytes more, read and written back) */
        if (lo != (MPI_Aint)lb || ext != (MPI_Aint)extent) {
            MPI_Datatype blocks = ftype;
            MPI_Type_create_resized(blocks, (MPI_Aint)lb, (MPI_Aint)extent, &ftype);
            MPI_Type_free(&blocks);
        }
        MPI_Type_commit(&ftype);
    }
    free(len);
    free(at);
    MPI_Datatype mtype;
    int mcount;
    const char *data = write_memory(f, size, &mtype, &mcount);
    double t0 = now();
    MPI_Status st;
    int rc = MPI_File_set_view(f->mf, offset, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
    if (rc == MPI_SUCCESS && transfer_of(s, collective))
        rc = MPI_File_write_all(f->mf, data, mcount, mtype, &st);
    else if (rc == MPI_SUCCESS && size)
        rc = MPI_File_write(f->mf, data, mcount, mtype, &st);
    if (mtype != MPI_BYTE)
        MPI_Type_free(&mtype);
    if (rc != MPI_SUCCESS)
        die(s, "MPI_File_set_view or write through it failed");
    add(s, T_WRITE, t0);
    if (ftype != MPI_BYTE)
        MPI_Type_free(&ftype);
    s->bytes += size;
}

static void flush_packed(skel_file_t *f)
{
    skel_t *s = f->s;
    long long mine = 0;
    for (int i = 0; i < f->npieces; i++)
        mine += f->pieces[i];
    ensure_buffer(s, (size_t)mine + 1);
    if (s->method == SKEL_M_MPIIO) {
        long long *all = malloc(sizeof(long long) * (size_t)s->size), base = 0;
        double t0 = now();
        MPI_Allgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
        add(s, T_COMM, t0);
        for (int r = 0; r < s->rank; r++)
            base += (all[r] + s->stripe - 1) / s->stripe * s->stripe;
        free(all);
        t0 = now();
        long long from = 0; /* each piece from its own memory, as in data_for */
        for (int i = 0; i < f->npieces; i++) {
            MPI_Status st;
            if (MPI_File_write_at(f->mf, base, s->buf + from, (int)f->pieces[i], MPI_BYTE, &st) !=
                MPI_SUCCESS)
                die(s, "MPI_File_write_at failed");
            base += f->pieces[i];
            from += f->pieces[i];
        }
        add(s, T_WRITE, t0);
        s->bytes += mine;
        return;
    }
    /* aggregate */
    int gsize, grank;
    MPI_Comm_size(s->group_comm, &gsize);
    MPI_Comm_rank(s->group_comm, &grank);
    int *counts = malloc(sizeof(int) * (size_t)gsize),
        *displs = malloc(sizeof(int) * (size_t)gsize);
    int mine_i = (int)mine;
    double t0 = now();
    MPI_Gather(&mine_i, 1, MPI_INT, counts, 1, MPI_INT, 0, s->group_comm);
    long long total = 0;
    if (grank == 0)
        for (int r = 0; r < gsize; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
    char *recv = NULL;
    if (grank == 0 && !(recv = malloc((size_t)total + 1)))
        die(s, "out of memory (aggregator)");
    MPI_Gatherv(s->buf, mine_i, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, s->group_comm);
    add(s, T_COMM, t0);
    if (grank == 0) {
        t0 = now();
        for (long long done = 0; done < total;) {
            ssize_t w = pwrite(f->fd, recv + done, (size_t)(total - done), done);
            if (w < 0)
                die(s, "pwrite failed (aggregator)");
            done += w;
        }
        add(s, T_WRITE, t0);
    }
    s->bytes += mine;
    free(recv);
    free(counts);
    free(displs);
}

void skel_close(skel_file_t *f)
{
    skel_t *s = f->s;
    if (s->method == SKEL_M_MPIIO || s->method == SKEL_AGGREGATE)
        flush_packed(f);
    double t0 = now();
    for (int i = 0; i < f->ndsets; i++)
        if (f->dsets[i].id > 0)
            H5Dclose(f->dsets[i].id);
    if (is_hdf5(f)) {
        if (H5Fclose(f->h5) < 0)
            die(s, "H5Fclose failed");
    } else if (s->method == SKEL_M_MPIIO || (s->method == SKEL_NATIVE && f->api == SKEL_MPIIO)) {
        MPI_File_close(&f->mf);
    } else if (f->fd >= 0) {
        close(f->fd);
    }
    add(s, T_CLOSE, t0);
    free(f->pieces);
    free(f);
}

static const char *method_name(enum skel_method m)
{
    static const char *names[] = {"native", "hdf5", "mpiio", "posix", "aggregate"};
    return names[m];
}

int skel_finish(skel_t *s)
{
    int n = (int)s->steps * T_N;
    double *all = s->rank == 0 ? malloc(sizeof(double) * (size_t)n * (size_t)s->size) : NULL;
    long long *bytes = s->rank == 0 ? malloc(sizeof(long long) * (size_t)s->size) : NULL;
    MPI_Gather(s->times, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(&s->bytes, 1, MPI_LONG_LONG, bytes, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (s->rank == 0) {
        static const char *parts[] = {"open", "comm", "write", "close"};
        double worst[T_N] = {0};
        long long total_bytes = 0;
        for (int r = 0; r < s->size; r++) {
            double sum[T_N] = {0};
            for (int k = 0; k < n; k++)
                sum[k % T_N] += all[r * n + k];
            for (int k = 0; k < T_N; k++)
                if (sum[k] > worst[k])
                    worst[k] = sum[k];
            total_bytes += bytes[r];
        }
        char path[4200];
        snprintf(path, sizeof path, "%s", s->timing ? s->timing : "skel-timing.json");
        FILE *out = fopen(path, "w");
        if (!out)
            fprintf(stderr, "skeleton %s: cannot write %s\n", s->name, path);
        else {
            fprintf(out,
                    "{\"schema\": \"iotune-skel-timing\", \"version\": 1, \"skeleton\": \"%s\", "
                    "\"method\": \"%s\", \"ranks\": %d, \"steps\": %lld, \"bytes\": %lld,\n"
                    " \"parts\": [\"open\", \"comm\", \"write\", \"close\"],\n \"per_rank\": [",
                    s->name, method_name(s->method), s->size, s->steps, total_bytes);
            for (int r = 0; r < s->size; r++) {
                fprintf(out, "%s\n  {\"rank\": %d, \"bytes\": %lld, \"steps\": [", r ? "," : "", r,
                        bytes[r]);
                for (long long st = 0; st < s->steps; st++) {
                    const double *t = all + r * n + st * T_N;
                    fprintf(out, "%s[%.9f, %.9f, %.9f, %.9f]", st ? ", " : "", t[0], t[1], t[2],
                            t[3]);
                }
                fprintf(out, "]}");
            }
            fprintf(out, "\n]}\n");
            fclose(out);
        }
        double tot = worst[0] + worst[1] + worst[2] + worst[3];
        printf("skeleton %s: method %s, %d ranks, %lld steps, %lld bytes", s->name,
               method_name(s->method), s->size, s->steps, total_bytes);
        for (int k = 0; k < T_N; k++)
            printf(", %s %.4f s", parts[k], worst[k]);
        printf(", %.1f MB/s\n", tot > 0 ? (double)total_bytes / tot / 1e6 : 0.0);
        free(all);
        free(bytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < s->ncreated; i++) {
        unlink(s->created[i]);
        char *slash = strrchr(s->created[i], '/');
        if (slash && strstr(s->created[i], ".dir/")) {
            *slash = '\0';
            rmdir(s->created[i]);
        }
        free(s->created[i]);
    }
    free(s->created);
    MPI_Comm_free(&s->group_comm);
    free(s->times);
    free(s->buf);
    free(s);
    MPI_Finalize();
    return 0;
}
