/* Direct chunk writes and reads (H5Dwrite_chunk, H5Dread_chunk; h5py's write_direct_chunk),
 * and extents (H5Dset_extent, as netCDF-4 grows unlimited dimensions):
 * the application's chunks go to the file as stored, past HDF5's filters, and so do the
 * skeleton's, of the stored sizes the trace recorded. Their bytes must still read back through
 * the dataset's filters (the application may read the chunk with H5Dread): the skeleton's chunk
 * is its zeros as the filters store them (shuffle: as they are; deflate: a zlib stream made
 * here; fletcher32: the checksum appended), padded to the recorded size after the deflate
 * stream, which inflate ignores. A chunk of another filter is opaque bytes: written, not
 * readable through that filter. Other methods write the chunk's bytes as raw bytes. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *p;
    size_t cap, len;
    unsigned acc;
    int nbits;
} bits_t;

static void put_bits(bits_t *b, unsigned v, int n) /* deflate's order: least significant first */
{
    for (int i = 0; i < n; i++) {
        b->acc |= ((v >> i) & 1u) << b->nbits;
        if (++b->nbits == 8) {
            if (b->len < b->cap)
                b->p[b->len] = (unsigned char)b->acc;
            b->len++;
            b->acc = 0;
            b->nbits = 0;
        }
    }
}

static void put_code(bits_t *b, unsigned code, int n) /* a Huffman code: most significant first */
{
    for (int i = n - 1; i >= 0; i--)
        put_bits(b, (code >> i) & 1u, 1);
}

/* A match of len bytes (3 to 258) at distance 1: its fixed length code, extra bits, and
 * distance code 0. */
static void put_match(bits_t *b, unsigned len)
{
    static const unsigned short base[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                            15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                            67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const unsigned char extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                            2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    int i = 28;
    while (base[i] > len)
        i--;
    unsigned sym = 257u + (unsigned)i;
    if (sym < 280)
        put_code(b, sym - 256u, 7);
    else
        put_code(b, 0xc0u + sym - 280u, 8);
    put_bits(b, len - base[i], extra[i]);
    put_code(b, 0, 5); /* distance 1 */
}

/* A zlib stream (RFC 1950/1951) of n zero bytes into out (cap bytes): one block of fixed
 * Huffman codes, a literal 0 and then matches at distance 1 (of 258, the last shorter). Returns its
 * length (more than cap: not all of it was stored). */
static size_t zero_stream(unsigned char *out, size_t cap, size_t n)
{
    bits_t b = {out, cap, 0, 0, 0};
    put_bits(&b, 0x78, 8); /* CM 8, 32 KiB window */
    put_bits(&b, 0x01, 8); /* no dictionary, check bits: 0x7801 % 31 == 0 */
    put_bits(&b, 1, 1);    /* the final block */
    put_bits(&b, 1, 2);    /* fixed codes */
    size_t left = n;
    if (left) {
        put_code(&b, 0x30, 8); /* literal 0 */
        left--;
    }
    for (; left >= 3; left -= left < 258 ? left : 258)
        put_match(&b, left < 258 ? (unsigned)left : 258);
    for (; left; left--)
        put_code(&b, 0x30, 8);
    put_code(&b, 0, 7); /* end of block */
    if (b.nbits)
        put_bits(&b, 0, 8 - b.nbits);
    uint32_t adler = ((uint32_t)(n % 65521u) << 16) | 1u; /* of zeros: a = 1, b = n */
    for (int i = 3; i >= 0; i--)
        put_bits(&b, (adler >> (8 * i)) & 0xffu, 8);
    return b.len;
}

/* HDF5's Fletcher-32 of the fletcher32 filter (16-bit big-endian words, an odd byte last). */
static uint32_t fletcher32(const unsigned char *d, size_t n)
{
    uint32_t s1 = 0, s2 = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        s1 = (s1 + (((uint32_t)d[i] << 8) | d[i + 1])) % 65535u;
        s2 = (s2 + s1) % 65535u;
    }
    if (n % 2) {
        s1 = (s1 + ((uint32_t)d[n - 1] << 8)) % 65535u;
        s2 = (s2 + s1) % 65535u;
    }
    return (s2 << 16) | s1;
}

typedef struct {
    int k;        /* the dataset in f->dsets */
    size_t raw;   /* bytes of one chunk, unfiltered */
    int deflate;  /* filters the stored chunk went through (not masked) */
    int fletcher; /* fletcher32, last */
    hsize_t at[32];
} chunk_t;

static int chunk_of(skel_file_t *f, const char *pattern, long long step, int nd,
                    const long long *start, unsigned mask, chunk_t *c)
{
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, f->s->rank);
    int k = f->ndsets - 1;
    while (k >= 0 && strcmp(f->dsets[k].name, name) != 0)
        k--;
    if (k < 0)
        skel_die(f->s, "direct chunk transfer on a dataset that was neither created nor opened");
    if (nd < 1 || nd > 32)
        skel_die(f->s, "a dataset of more than 32 dimensions");
    memset(c, 0, sizeof *c);
    c->k = k;
    for (int i = 0; i < nd; i++) {
        if (start[i] < 0)
            skel_die(f->s, "a negative chunk offset for these parameters");
        c->at[i] = (hsize_t)start[i];
    }
    if (f->dsets[k].id < 0)
        return k;
    hid_t dcpl = H5Dget_create_plist(f->dsets[k].id);
    hsize_t ch[32];
    if (dcpl < 0 || H5Pget_chunk(dcpl, nd, ch) != nd)
        skel_die(f->s, "direct chunk transfer on a dataset that is not chunked");
    c->raw = H5Tget_size(f->dsets[k].type);
    for (int i = 0; i < nd; i++)
        c->raw = (size_t)skel_imul((long long)c->raw, (long long)ch[i]);
    int n = H5Pget_nfilters(dcpl);
    for (int i = 0; i < n; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
        if (mask & (1u << i))
            continue;
        c->deflate |= id == H5Z_FILTER_DEFLATE;
        c->fletcher |= id == H5Z_FILTER_FLETCHER32;
    }
    H5Pclose(dcpl);
    return k;
}

/* The stored chunk into data (size bytes): zeros through the dataset's filters, padded. */
static void make_chunk(const chunk_t *c, unsigned char *data, size_t size)
{
    size_t tail = c->fletcher && size >= 4 ? 4 : 0;
    memset(data, 0, size);
    if (c->deflate)
        zero_stream(data, size - tail, c->raw);
    if (tail) {
        uint32_t sum = fletcher32(data, size - tail);
        for (int i = 0; i < 4; i++) /* as HDF5 stores it: least significant byte first */
            data[size - tail + (size_t)i] = (unsigned char)(sum >> (8 * i));
    }
}

void skel_write_chunk(skel_file_t *f, const char *pattern, long long step, int nd,
                      const long long *start, long long size, unsigned mask, int active)
{
    skel_t *s = f->s;
    if (!active)
        return;
    if (size < 0)
        skel_die(s, "a negative chunk size for these parameters");
    if (!skel_is_hdf5(f)) {
        skel_write_bytes(f, -1, size, 0, 1);
        return;
    }
    chunk_t c;
    chunk_of(f, pattern, step, nd, start, mask, &c);
    /* a recorded size below the skeleton's own stream (data that compressed better than
     * zeros do here): the stream, whole */
    size_t least = (c.deflate ? zero_stream(NULL, 0, c.raw) : 0) + (c.fletcher ? 4 : 0);
    if ((size_t)size < least)
        size = (long long)least;
    unsigned char *data = (unsigned char *)skel_data_for(s, (size_t)size);
    if (s->sizing)
        return;
    make_chunk(&c, data, (size_t)size); /* as the application's buffer, made before the call */
    double t0 = skel_now();
    if (H5Dwrite_chunk(f->dsets[c.k].id, H5P_DEFAULT, mask, c.at, (size_t)size, data) < 0)
        skel_die(s, "H5Dwrite_chunk failed");
    skel_add(s, T_WRITE, t0);
    s->bytes = skel_iadd(s->bytes, size);
}

void skel_read_chunk(skel_file_t *f, const char *pattern, long long step, int nd,
                     const long long *start, long long size, int active)
{
    skel_t *s = f->s;
    if (!active || !skel_is_hdf5(f) || f->api != SKEL_HDF5)
        return; /* the raw methods skip reads */
    if (size < 0)
        skel_die(s, "a negative chunk size for these parameters");
    chunk_t c;
    chunk_of(f, pattern, step, nd, start, 0, &c);
    char *data = skel_data_for(s, (size_t)size);
    if (s->sizing)
        return;
    hsize_t stored = 0; /* the skeleton's chunk may be larger than the recorded size */
    if (H5Dget_chunk_storage_size(f->dsets[c.k].id, c.at, &stored) < 0)
        skel_die(s, "H5Dget_chunk_storage_size failed: no such chunk");
    char *own = stored > (hsize_t)size ? malloc((size_t)stored) : NULL;
    if (stored > (hsize_t)size && !own)
        skel_die(s, "out of memory for a chunk");
    uint32_t filters = 0;
    double t0 = skel_now();
    herr_t rc = H5Dread_chunk(f->dsets[c.k].id, H5P_DEFAULT, c.at, &filters, own ? own : data);
    skel_add(s, T_READ, t0);
    free(own);
    if (rc < 0)
        skel_die(s, "H5Dread_chunk failed");
}

void skel_extend(skel_file_t *f, const char *pattern, long long step, int nd,
                 const long long *extent, int active)
{
    skel_t *s = f->s;
    if (!skel_is_hdf5(f) || f->api != SKEL_HDF5 || s->sizing)
        return;
    if (!active && f->comm != MPI_COMM_WORLD)
        return; /* a file of its own: only the ranks that extend it */
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, s->rank);
    int k = f->ndsets - 1;
    while (k >= 0 && strcmp(f->dsets[k].name, name) != 0)
        k--;
    if (k < 0 || f->dsets[k].id < 0)
        skel_die(s, "extent of a dataset that was neither created nor opened");
    if (nd < 1 || nd > 32)
        skel_die(s, "a dataset of more than 32 dimensions");
    hsize_t dims[32];
    for (int i = 0; i < nd; i++) {
        if (extent[i] < 0)
            skel_die(s, "a negative extent for these parameters");
        dims[i] = (hsize_t)extent[i];
    }
    double t0 = skel_now();
    if (H5Dset_extent(f->dsets[k].id, dims) < 0)
        skel_die(s, "H5Dset_extent failed");
    skel_add(s, T_WRITE, t0);
}
