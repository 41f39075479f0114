/* The HDF5 idioms of h5py programs, written in C (the tests run them without h5py too):
 *
 *   h5idioms anon FILE       datasets created without a name (H5Dcreate_anon), written, then
 *                            linked (H5Olink) in the root and in a group, as f["a"] = data
 *   h5idioms lapl FILE       the datasets of FILE opened with H5Oopen and a link access list
 *                            (as Debian's h5py 3.7 opens f["name"]); prints each one's chunk
 *                            cache and the link access property it was given (nlinks)
 *   h5idioms excl FILE       FILE created exclusively (H5F_ACC_EXCL), written, read back
 *
 * Every file is opened with the MPI-IO driver on MPI_COMM_WORLD. Rank 0 prints; exit 1 on an
 * HDF5 failure. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define N 64

static int rank;

static hid_t file_access(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    return fapl;
}

/* f[name] = data: every rank writes the whole array (the same values) */
static int assign(hid_t loc, const char *name, double scale)
{
    static double buf[N * N];
    for (int i = 0; i < N * N; i++)
        buf[i] = i * scale;
    hsize_t dims[2] = {N, N};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate_anon(loc, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0 &&
             H5Olink(d, loc, name, H5P_DEFAULT, H5P_DEFAULT) >= 0;
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(sp);
    return ok ? 0 : -1;
}

static int anon(const char *name)
{
    hid_t fapl = file_access();
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t g = f >= 0 ? H5Gcreate2(f, "step_000", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    int rc = g >= 0 && assign(f, "a", 1.0) == 0 && assign(g, "b", 2.0) == 0 ? 0 : 1;
    if (g >= 0)
        H5Gclose(g);
    if (f >= 0)
        H5Fclose(f);
    H5Pclose(fapl);
    if (rank == 0)
        printf("anon: %s\n", rc ? "failed" : "ok");
    return rc;
}

static int lapl(const char *name)
{
    hid_t fapl = file_access();
    hid_t f = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    int rc = f < 0;
    const char *names[] = {"a", "step_000/b"};
    for (int i = 0; i < 2 && !rc; i++) {
        hid_t la = H5Pcreate(H5P_LINK_ACCESS);
        H5Pset_nlinks(la, 7);
        hid_t d = H5Oopen(f, names[i], la);
        hid_t ap = d >= 0 ? H5Dget_access_plist(d) : -1;
        size_t slots = 0, bytes = 0, nlinks = 0;
        double w0 = 0;
        rc = ap < 0 || H5Pget_chunk_cache(ap, &slots, &bytes, &w0) < 0 ||
             H5Pget_nlinks(ap, &nlinks) < 0;
        if (rank == 0 && !rc)
            printf("%s: cache %zu %zu %g nlinks %zu\n", names[i], slots, bytes, w0, nlinks);
        if (ap >= 0)
            H5Pclose(ap);
        if (d >= 0)
            H5Oclose(d);
        H5Pclose(la);
    }
    if (f >= 0)
        H5Fclose(f);
    H5Pclose(fapl);
    return rc;
}

static int excl(const char *name)
{
    hid_t fapl = file_access();
    hid_t f = H5Fcreate(name, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    int rc = f < 0 || assign(f, "x", 1.0) < 0;
    if (f >= 0)
        H5Fclose(f);
    double v[N * N];
    f = rc ? -1 : H5Fopen(name, H5F_ACC_RDONLY, fapl);
    hid_t d = f >= 0 ? H5Dopen2(f, "x", H5P_DEFAULT) : -1;
    rc = d < 0 || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0;
    if (rank == 0)
        printf("excl: %s %g\n", rc ? "failed" : "ok", rc ? 0.0 : v[N * N - 1]);
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    H5Pclose(fapl);
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc = 2;
    if (argc == 3 && strcmp(argv[1], "anon") == 0)
        rc = anon(argv[2]);
    else if (argc == 3 && strcmp(argv[1], "lapl") == 0)
        rc = lapl(argv[2]);
    else if (argc == 3 && strcmp(argv[1], "excl") == 0)
        rc = excl(argv[2]);
    else if (rank == 0)
        fprintf(stderr, "usage: h5idioms anon|lapl|excl FILE\n");
    MPI_Finalize();
    return rc;
}
