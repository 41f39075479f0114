/* The end of a run: per-rank, per-step times gathered to rank 0, written as JSON and
 * summed up on stdout; files removed with --cleanup. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *skel_method_name(enum skel_method m)
{
    static const char *names[] = {"native", "hdf5", "mpiio", "posix", "aggregate"};
    return names[m];
}

int skel_finish(skel_t *s)
{
    int n = (int)(s->steps * T_N); /* bounded in skel_init */
    double *all = s->rank == 0 ? malloc(sizeof(double) * (size_t)n * (size_t)s->size) : NULL;
    long long *bytes = s->rank == 0 ? malloc(sizeof(long long) * 3 * (size_t)s->size) : NULL;
    if (s->rank == 0 && (!all || !bytes))
        skel_die(s, "out of memory for the ranks' timings");
    /* per rank: bytes written, the write memory made before the first step, and how often it
     * had to grow during the steps (a write that waited for its memory) */
    long long mine[3] = {s->bytes, (long long)s->buf_size, s->late_growths};
    MPI_Gather(s->times, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(mine, 3, MPI_LONG_LONG, bytes, 3, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (s->rank == 0) {
        static const char *parts[] = {"open", "comm", "write", "close", "read"};
        double worst[T_N] = {0};
        long long total_bytes = 0;
        for (int r = 0; r < s->size; r++) {
            double sum[T_N] = {0};
            for (int k = 0; k < n; k++)
                sum[k % T_N] += all[(size_t)r * (size_t)n + (size_t)k];
            for (int k = 0; k < T_N; k++)
                if (sum[k] > worst[k])
                    worst[k] = sum[k];
            total_bytes += bytes[3 * r];
        }
        char path[4200];
        snprintf(path, sizeof path, "%s", s->timing ? s->timing : "skel-timing.json");
        FILE *out = fopen(path, "w");
        if (!out)
            fprintf(stderr, "skeleton %s: cannot write %s\n", s->name, path);
        else {
            fprintf(out,
                    "{\"schema\": \"iotune-skel-timing\", \"version\": 2, \"skeleton\": \"%s\", "
                    "\"method\": \"%s\", \"ranks\": %d, \"steps\": %lld, \"bytes\": %lld,\n"
                    " \"parts\": [\"open\", \"comm\", \"write\", \"close\", \"read\"],\n"
                    " \"per_rank\": [",
                    s->name, skel_method_name(s->method), s->size, s->steps, total_bytes);
            for (int r = 0; r < s->size; r++) {
                fprintf(out,
                        "%s\n  {\"rank\": %d, \"bytes\": %lld, \"memory\": %lld, "
                        "\"late_growths\": %lld, \"steps\": [",
                        r ? "," : "", r, bytes[3 * r], bytes[3 * r + 1], bytes[3 * r + 2]);
                for (long long st = 0; st < s->steps; st++) {
                    const double *t = all + (size_t)r * (size_t)n + (size_t)st * T_N;
                    fprintf(out, "%s[%.9f, %.9f, %.9f, %.9f, %.9f]", st ? ", " : "", t[0], t[1],
                            t[2], t[3], t[4]);
                }
                fprintf(out, "]}");
            }
            fprintf(out, "\n]}\n");
            fclose(out);
        }
        double tot = 0;
        for (int k = 0; k < T_N; k++)
            tot += worst[k];
        printf("skeleton %s: method %s, %d ranks, %lld steps, %lld bytes", s->name,
               skel_method_name(s->method), s->size, s->steps, total_bytes);
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
