#include "adapt/phase.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int iot_phase_class(const char *name, char *out, size_t len)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (!*base || strpbrk(base, "*?[\\") || strlen(base) >= len)
        return 0;
    /* the extension keeps its digits when it has letters (h5, r1.dat stays .dat) */
    const char *dot = strrchr(base, '.');
    int ext_letters = 0;
    for (const char *c = dot ? dot + 1 : ""; *c; c++)
        ext_letters |= isalpha((unsigned char)*c) != 0;
    const char *stop = dot && dot != base && ext_letters ? dot : base + strlen(base);
    size_t n = 0;
    for (const char *c = base; *c; c++) {
        if (c < stop && isdigit((unsigned char)*c)) {
            while (c + 1 < stop && isdigit((unsigned char)c[1]))
                c++;
            out[n++] = '*';
        } else {
            out[n++] = *c;
        }
    }
    out[n] = '\0';
    return 1;
}

void iot_phase_local(iot_phase_stats *s, const iot_counters *now, const iot_counters *at)
{
    memset(s, 0, sizeof *s);
    s->sum[IOT_S_RANKS] = 1;
    s->sum[IOT_S_VIEWS] = (double)(now[IOT_L_MPIIO].set_views - at[IOT_L_MPIIO].set_views);
    const iot_counters *p = &now[IOT_L_POSIX], *q = &at[IOT_L_POSIX];
    double transfers = (double)(p->writes + p->reads - q->writes - q->reads);
    double opens = (double)(p->opens + p->creates - q->opens - q->creates);
    double pairs = transfers - (opens > 0 ? opens : 1);
    double seq = (double)(p->sequential - q->sequential);
    double consec = (double)(p->consecutive - q->consecutive);
    s->sum[IOT_S_PAIRS] = pairs > 0 ? pairs : 0;
    s->sum[IOT_S_BACKWARD] = pairs > seq ? pairs - seq : 0;
    s->sum[IOT_S_GAPS] = seq > consec ? seq - consec : 0;
    for (int l = 0; l < IOT_NLAYERS; l++) {
        double *x = &s->sum[IOT_S_LAYER0 + l * IOT_S_PER_LAYER];
        const iot_counters *a = &now[l], *b = &at[l];
        x[IOT_SL_W] = (double)(a->writes - b->writes);
        x[IOT_SL_R] = (double)(a->reads - b->reads);
        x[IOT_SL_COLL] = (double)(a->coll_writes + a->coll_reads - b->coll_writes - b->coll_reads);
        x[IOT_SL_BW] = (double)(a->bytes_written - b->bytes_written);
        x[IOT_SL_BR] = (double)(a->bytes_read - b->bytes_read);
        x[IOT_SL_META] = a->meta_time - b->meta_time;
        x[IOT_SL_BUSY] = a->write_time + a->read_time + a->meta_time - b->write_time -
                         b->read_time - b->meta_time;
        for (int k = 0; k < IOT_SIZE_BINS; k++)
            x[IOT_SL_SIZES + k] = (double)(a->sizes[k] - b->sizes[k]);
    }
    s->max[IOT_M_FILE_END] = (double)now[IOT_L_POSIX].last_offset;
    for (int l = 0; l < IOT_NLAYERS; l++) {
        const double *x = &s->sum[IOT_S_LAYER0 + l * IOT_S_PER_LAYER];
        if (x[IOT_SL_W] + x[IOT_SL_R] > 0) {
            s->max[IOT_M_TRANSFER] =
                now[l].write_time + now[l].read_time - at[l].write_time - at[l].read_time;
            s->max[IOT_M_BUSY] = s->max[IOT_M_TRANSFER] + now[l].meta_time - at[l].meta_time;
            break;
        }
    }
}

/* Words of the three-valued ROMIO hints, in the order of insights.tsv. */
static const char *const toggles[] = {"automatic", "enable", "disable"};

static const char *hint_value(const char *hints, const char *key, char *buf, size_t len)
{
    size_t k = strlen(key);
    for (const char *line = hints; line && *line;) {
        size_t n = strcspn(line, "\n");
        if (n > k && strncmp(line, key, k) == 0 && line[k] == '=') {
            snprintf(buf, len, "%.*s", (int)(n - k - 1), line + k + 1);
            return buf;
        }
        line += n + (line[n] == '\n');
    }
    return NULL;
}

/* Parallel file systems (the list of iotune.insights.PARALLEL_FS). */
static int parallel_fs(const char *fs)
{
    static const char *const names[] = {"lustre",   "gpfs", "beegfs", "pvfs2",
                                        "orangefs", "daos", "wekafs", "cephfs"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(fs, names[i]) == 0)
            return 1;
    return 0;
}

void iot_phase_hints(iot_phase_stats *s, const char *hints, const char *fs)
{
    static const char *const keys[5] = {"cb_buffer_size", "romio_cb_write", "romio_cb_read",
                                        "romio_ds_write", "romio_ds_read"};
    for (int i = 0; i < 5; i++) {
        char v[256];
        double x = -1; /* unknown */
        if (hint_value(hints, keys[i], v, sizeof v)) {
            if (i == 0) {
                x = atof(v);
            } else {
                for (int t = 0; t < 3; t++)
                    if (strcmp(v, toggles[t]) == 0)
                        x = t;
            }
        }
        s->max[IOT_M_HINTS + i] = x;
        s->max[IOT_M_NEG_HINTS + i] = -x;
    }
    char v[256];
    double one = hint_value(hints, "cb_config_list", v, sizeof v) ? strcmp(v, "*:1") == 0 : -1;
    s->max[IOT_M_CONFIG_LIST1] = one;
    s->max[IOT_M_NEG_CONFIG_LIST1] = -one;
    s->max[IOT_M_PARALLEL_FS] = parallel_fs(fs);
    s->max[IOT_M_NEG_PARALLEL_FS] = -parallel_fs(fs);
}

static void num(iot_insights *in, int id, double x)
{
    in->v[id] = (iot_insight){1, x, NULL};
}

static void word(iot_insights *in, int id, const char *w)
{
    in->v[id] = (iot_insight){1, 0, w};
}

/* Agreed over the ranks: max == -(max of the negation). */
static int agreed(const iot_phase_stats *s, int m, int neg, double *out)
{
    if (s->max[m] != -s->max[neg] || s->max[m] < 0)
        return 0;
    *out = s->max[m];
    return 1;
}

static const char *const layer_words[IOT_NLAYERS] = {"hdf5", "mpiio", "posix", "stdio"};
/* upper bounds of the size bins (capture.c), the last one open */
static const double bin_upper[IOT_SIZE_BINS - 1] = {
    100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824};

static int outermost(const iot_phase_stats *s)
{
    for (int l = 0; l < IOT_NLAYERS; l++) {
        const double *x = &s->sum[IOT_S_LAYER0 + l * IOT_S_PER_LAYER];
        if (x[IOT_SL_W] + x[IOT_SL_R] > 0 || x[IOT_SL_BW] + x[IOT_SL_BR] > 0)
            return l;
    }
    return -1;
}

double iot_phase_bytes(const iot_phase_stats *s)
{
    int l = outermost(s);
    if (l < 0)
        return 0;
    const double *x = &s->sum[IOT_S_LAYER0 + l * IOT_S_PER_LAYER];
    return x[IOT_SL_BW] + x[IOT_SL_BR];
}

/* The thresholds of iotune.insights (RANDOM_BACKWARD, STRIDED_SHARE, SMALL). */
#define RANDOM_BACKWARD 0.25
#define STRIDED_SHARE 0.5
#define SMALL (1024.0 * 1024.0)

void iot_phase_insights(iot_insights *in, const iot_phase_stats *s, int comm_size, int world,
                        const char *fs)
{
    memset(in, 0, sizeof *in);
    num(in, IOT_I_RANKS, world);
    num(in, IOT_I_FILES, comm_size > 1 ? 1 : world);
    num(in, IOT_I_FILE_RANKS, comm_size);
    /* a file opened on a communicator of one rank in a job of several: each rank its own */
    word(in, IOT_I_FILE_MODE, world <= 1 ? "single" : comm_size > 1 ? "shared" : "per_process");
    num(in, IOT_I_FILE_VIEWS, s->sum[IOT_S_VIEWS]);
    int l = outermost(s);
    if (l < 0) {
        word(in, IOT_I_TRANSFER_MODE, "none");
        word(in, IOT_I_IO_MIX, "none");
        num(in, IOT_I_WRITES, 0);
        num(in, IOT_I_READS, 0);
    } else {
        const double *x = &s->sum[IOT_S_LAYER0 + l * IOT_S_PER_LAYER];
        double total = x[IOT_SL_W] + x[IOT_SL_R], moved = x[IOT_SL_BW] + x[IOT_SL_BR];
        double share = total ? x[IOT_SL_COLL] / total : 0;
        word(in, IOT_I_INTERFACE, layer_words[l]);
        word(in, IOT_I_TRANSFER_MODE,
             !total         ? "none"
             : share >= 0.9 ? "collective"
             : share <= 0.1 ? "independent"
                            : "mixed");
        num(in, IOT_I_WRITES, x[IOT_SL_W]);
        num(in, IOT_I_READS, x[IOT_SL_R]);
        num(in, IOT_I_BYTES_WRITTEN, x[IOT_SL_BW]);
        num(in, IOT_I_BYTES_READ, x[IOT_SL_BR]);
        if (x[IOT_SL_R] > 0)
            num(in, IOT_I_READ_SIZE_MEAN, x[IOT_SL_BR] / x[IOT_SL_R]);
        num(in, IOT_I_WRITE_FRACTION, moved ? x[IOT_SL_BW] / moved : 0);
        word(in, IOT_I_IO_MIX,
             !moved          ? "none"
             : !x[IOT_SL_BR] ? "write"
             : !x[IOT_SL_BW] ? "read"
                             : "mixed");
        if (total)
            num(in, IOT_I_TRANSFER_SIZE_MEDIAN, (double)(long long)(moved / total));
        /* the histogram bounds the extremes: the smallest bin's lower and the largest bin's
         * upper bound (a transfer of exactly the bound falls in the next bin) */
        int lo = -1, hi = -1;
        for (int k = 0; k < IOT_SIZE_BINS; k++)
            if (x[IOT_SL_SIZES + k] > 0) {
                lo = lo < 0 ? k : lo;
                hi = k;
            }
        if (lo >= 0) {
            num(in, IOT_I_TRANSFER_SIZE_MIN, lo ? bin_upper[lo - 1] : 0);
            if (hi < IOT_SIZE_BINS - 1)
                num(in, IOT_I_TRANSFER_SIZE_MAX, bin_upper[hi] - 1);
        }
        double busy = x[IOT_SL_BUSY];
        num(in, IOT_I_META_FRACTION, busy > 0 ? x[IOT_SL_META] / busy : 0);
        num(in, IOT_I_META_TIME_RANK_S, x[IOT_SL_META] / (comm_size > 0 ? comm_size : 1));
        const double *below = &s->sum[IOT_S_LAYER0 + IOT_L_MPIIO * IOT_S_PER_LAYER];
        if (l == IOT_L_HDF5 && !below[IOT_SL_BW])
            below = &s->sum[IOT_S_LAYER0 + IOT_L_POSIX * IOT_S_PER_LAYER];
        if (l == IOT_L_HDF5 && x[IOT_SL_BW] && below[IOT_SL_BW])
            num(in, IOT_I_WRITE_AMPLIFICATION, below[IOT_SL_BW] / x[IOT_SL_BW]);
        /* locality: backward steps and gaps of the outermost layer's own transfers (HDF5
         * selections, MPI-IO offsets; else POSIX's), noncontiguous HDF5 selections or MPI-IO
         * transfers through a noncontiguous view (the measures of iotune.insights' trace, from
         * counters) */
        int h5 = l == IOT_L_HDF5 || l == IOT_L_MPIIO; /* the outermost layer's own steps */
        double pairs = s->sum[h5 ? IOT_S_H5_PAIRS : IOT_S_PAIRS], sel = s->sum[IOT_S_SELECTIONS];
        double back = pairs ? s->sum[h5 ? IOT_S_H5_BACKWARD : IOT_S_BACKWARD] / pairs : 0;
        double gaps = pairs ? s->sum[h5 ? IOT_S_H5_GAPS : IOT_S_GAPS] / pairs : 0;
        double nonc = sel ? s->sum[IOT_S_NONCONTIG] / sel : 0;
        num(in, IOT_I_BACKWARD_FRACTION, back);
        num(in, IOT_I_GAP_FRACTION, gaps);
        num(in, IOT_I_NONCONTIGUOUS_FRACTION, nonc);
        word(in, IOT_I_ACCESS_PATTERN,
             back >= RANDOM_BACKWARD                        ? "random"
             : (nonc > gaps ? nonc : gaps) >= STRIDED_SHARE ? "strided"
                                                            : "sequential");
        double small_w = 0, small_r = 0, all = 0;
        for (int k = 0; k < IOT_SIZE_BINS; k++) {
            all += x[IOT_SL_SIZES + k];
            if (k < IOT_SIZE_BINS - 1 && bin_upper[k] <= SMALL)
                small_w += x[IOT_SL_SIZES + k];
        }
        /* the histogram mixes reads and writes: split the small share by their counts */
        small_r = total ? small_w * x[IOT_SL_R] / total : 0;
        small_w = total ? small_w * x[IOT_SL_W] / total : 0;
        num(in, IOT_I_SMALL_WRITES, (double)(long long)(small_w + 0.5));
        num(in, IOT_I_SMALL_READS, (double)(long long)(small_r + 0.5));
        num(in, IOT_I_SMALL_WRITE_FRACTION, x[IOT_SL_W] && all ? (small_w + small_r) / all : 0);
        num(in, IOT_I_SMALL_READ_FRACTION, x[IOT_SL_R] && all ? (small_w + small_r) / all : 0);
    }
    if (s->max[IOT_M_FILE_END] >= 0)
        num(in, IOT_I_FILE_BYTES, s->max[IOT_M_FILE_END]);
    snprintf(in->fs, sizeof in->fs, "%s", fs);
    if (fs[0]) {
        word(in, IOT_I_FS, in->fs);
        double p;
        if (agreed(s, IOT_M_PARALLEL_FS, IOT_M_NEG_PARALLEL_FS, &p))
            word(in, IOT_I_PARALLEL_FS, p ? "yes" : "no");
    }
    double h;
    if (agreed(s, IOT_M_HINTS, IOT_M_NEG_HINTS, &h))
        num(in, IOT_I_HINT_CB_BUFFER_SIZE, h);
    static const int toggle_ids[4] = {IOT_I_HINT_ROMIO_CB_WRITE, IOT_I_HINT_ROMIO_CB_READ,
                                      IOT_I_HINT_ROMIO_DS_WRITE, IOT_I_HINT_ROMIO_DS_READ};
    for (int i = 0; i < 4; i++)
        if (agreed(s, IOT_M_HINTS + 1 + i, IOT_M_NEG_HINTS + 1 + i, &h))
            word(in, toggle_ids[i], toggles[(int)h]);
    if (agreed(s, IOT_M_CONFIG_LIST1, IOT_M_NEG_CONFIG_LIST1, &h) && h)
        word(in, IOT_I_HINT_CB_CONFIG_LIST, "*:1");
}
