/* A serial writer whose dataset close does the writing: a deflate-compressed chunked dataset,
 * a chunk cache (H5Pset_cache) larger than all its chunks, one H5Dwrite per chunk. The writes
 * only fill the cache; the close compresses and writes every chunk (h5py's
 * compression="gzip" with rdcc_nbytes, or a tuned chunk_cache_bytes).
 *
 *   close_probe FILE MODE
 *     dclose   the dataset created, written, closed with H5Dclose
 *     decref   the same, let go with H5Idec_ref (as h5py lets go of its objects)
 *     oclose   the dataset created and closed empty, reopened with H5Oopen (as h5py opens
 *              f["name"]), written, closed with H5Oclose
 *     late     H5Fclose before H5Dclose: the file's close waits for the dataset's
 *
 * Sec2 driver, no MPI. Prints "close_s X region_s Y": the seconds of the dataset's close
 * (H5Dclose, H5Idec_ref, H5Oclose; in late mode H5Fclose and H5Dclose) and of the whole region
 * from before H5Fcreate to after the last close, both timed by the program. Exit 1 on an HDF5
 * failure. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 64
#define CHUNKS 4

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One chunk of smooth values, as a simulation's field. */
static void fill(float *buf, int chunk)
{
    for (int i = 0; i < N * N * N; i++)
        buf[i] = (float)(i / (N * N)) + 0.5f * (float)(i / N % N) + 0.25f * (float)(i % N) +
                 (float)chunk;
}

static int write_chunks(hid_t d, float *buf)
{
    hsize_t c[4] = {1, N, N, N};
    hid_t ms = H5Screate_simple(4, c, NULL), fs = H5Dget_space(d);
    int ok = ms >= 0 && fs >= 0;
    for (int k = 0; ok && k < CHUNKS; k++) {
        hsize_t st[4] = {(hsize_t)k, 0, 0, 0};
        fill(buf, k);
        ok = H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, c, NULL) >= 0 &&
             H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf) >= 0;
    }
    H5Sclose(ms);
    H5Sclose(fs);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: close_probe FILE dclose|decref|oclose|late\n");
        return 2;
    }
    const char *mode = argv[2];
    float *buf = malloc(sizeof(float) * N * N * N);
    hsize_t dims[4] = {CHUNKS, N, N, N}, ch[4] = {1, N, N, N};
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_cache(fapl, 0, 521, (size_t)64 << 20, 1.0); /* 64 MiB: every chunk stays */
    H5Pset_chunk(dcpl, 4, ch);
    H5Pset_deflate(dcpl, 6);
    hid_t sp = H5Screate_simple(4, dims, NULL);
    double start = now();
    hid_t f = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t d = f >= 0 ? H5Dcreate2(f, "u", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT)
                     : H5I_INVALID_HID;
    int ok = d >= 0 && buf;
    if (ok && strcmp(mode, "oclose") == 0) {
        ok = H5Dclose(d) >= 0 && (d = H5Oopen(f, "u", H5P_DEFAULT)) >= 0;
    }
    ok = ok && write_chunks(d, buf);
    double t = now();
    if (strcmp(mode, "decref") == 0)
        ok = H5Idec_ref(d) >= 0 && ok;
    else if (strcmp(mode, "oclose") == 0)
        ok = H5Oclose(d) >= 0 && ok;
    else if (strcmp(mode, "late") == 0)
        ok = H5Fclose(f) >= 0 && H5Dclose(d) >= 0 && ok;
    else
        ok = H5Dclose(d) >= 0 && ok;
    double close_s = now() - t;
    if (strcmp(mode, "late") != 0)
        ok = H5Fclose(f) >= 0 && ok;
    double region_s = now() - start;
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Pclose(fapl);
    free(buf);
    printf("close_s %.6f region_s %.6f\n", close_s, region_s);
    return ok ? 0 : 1;
}
