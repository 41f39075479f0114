/* The gzip sink of the trace files (trace_gz.h): a fopencookie FILE over zlib's deflate. */
#include "trace/trace_gz.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "base/real.h"

struct trace_gz {
    FILE *out;
    z_stream z;
    int err;
};

static int gz_pump(trace_gz *g, int flush)
{
    unsigned char buf[1 << 15];
    do {
        g->z.next_out = buf;
        g->z.avail_out = sizeof buf;
        int rc = deflate(&g->z, flush);
        if (rc == Z_STREAM_ERROR)
            return -1;
        size_t have = sizeof buf - g->z.avail_out;
        if (have && fwrite(buf, 1, have, g->out) != have)
            return -1;
    } while (g->z.avail_out == 0);
    return 0;
}

static ssize_t gz_write(void *cookie, const char *data, size_t n)
{
    trace_gz *g = cookie;
    g->z.next_in = (unsigned char *)(uintptr_t)data;
    g->z.avail_in = (uInt)n;
    if (gz_pump(g, Z_NO_FLUSH) != 0) {
        g->err = errno ? errno : EIO;
        return -1;
    }
    return (ssize_t)n;
}

FILE *trace_gz_open(const char *path, trace_gz **gp)
{
    trace_gz *g = calloc(1, sizeof *g);
    *gp = g;
    if (!g || !(g->out = iot_real_fopen(path, "w"))) {
        int err = g ? errno : ENOMEM;
        free(g);
        *gp = NULL;
        errno = err ? err : EIO;
        return NULL;
    }
    /* windowBits 15 + 16: a gzip header. Level 1, the fastest: on irregular calls (a run per
     * call) zlib's default level 6 costs six times the instructions for 15 % fewer bytes. */
    FILE *f = NULL;
    if (deflateInit2(&g->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
        cookie_io_functions_t io = {NULL, gz_write, NULL, NULL};
        if (!(f = fopencookie(g, "w", io)))
            deflateEnd(&g->z);
    }
    if (!f) {
        iot_real_fclose(g->out);
        free(g);
        *gp = NULL;
        errno = ENOMEM;
        return NULL;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    return f;
}

int trace_gz_close(FILE *f, trace_gz *g)
{
    int err = 0;
    if (fclose(f) != 0)
        err = g->err ? g->err : (errno ? errno : EIO);
    if (!err && gz_pump(g, Z_FINISH) != 0)
        err = errno ? errno : EIO;
    deflateEnd(&g->z);
    if (ferror(g->out) && !err)
        err = errno ? errno : EIO;
    if (iot_real_fclose(g->out) != 0 && !err)
        err = errno ? errno : EIO;
    free(g);
    return err;
}
