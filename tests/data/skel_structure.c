/* An HDF5 checkpoint writer with what skeletons used to lose (issue 22): one file per step
 * with zero-padded names (chk_0000.h5, chk_0001.h5), a step group with a padded name
 * (/step_000), a 32-byte compound dataset (a C struct with padding), a chunked field with the
 * shuffle and deflate filters, a dataset created and never written, and H5Fflush after each
 * step's writes. Every rank writes a block of N elements of each written dataset, collectively.
 *
 * usage: skel_structure [N [STEPS]]   (defaults 16, 2)
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int id;
    double x, y;
    long long flag;
} particle; /* 32 bytes: 4 bytes of padding after id */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hsize_t n = argc > 1 ? (hsize_t)atoll(argv[1]) : 16;
    int steps = argc > 2 ? atoi(argv[2]) : 2;
    particle *p = calloc(n, sizeof *p);
    double *rho = calloc(n, sizeof *rho);
    for (hsize_t i = 0; i < n; i++) {
        p[i].id = (int)(rank * n + i);
        p[i].x = p[i].y = (double)i;
        rho[i] = (double)(i % 7);
    }
    hid_t ptype = H5Tcreate(H5T_COMPOUND, sizeof(particle));
    H5Tinsert(ptype, "id", HOFFSET(particle, id), H5T_NATIVE_INT);
    H5Tinsert(ptype, "x", HOFFSET(particle, x), H5T_NATIVE_DOUBLE);
    H5Tinsert(ptype, "y", HOFFSET(particle, y), H5T_NATIVE_DOUBLE);
    H5Tinsert(ptype, "flag", HOFFSET(particle, flag), H5T_NATIVE_LLONG);
    for (int step = 0; step < steps; step++) {
        char name[64], group[64], path[128];
        snprintf(name, sizeof name, "chk_%04d.h5", step);
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
        hid_t file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Pclose(fapl);
        snprintf(group, sizeof group, "/step_%03d", step);
        hid_t g = H5Gcreate2(file, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Gclose(g);
        hsize_t dims = n * (hsize_t)size, start = n * (hsize_t)rank, chunk = n;
        hid_t space = H5Screate_simple(1, &dims, NULL), mem = H5Screate_simple(1, &n, NULL);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &n, NULL);
        hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);

        snprintf(path, sizeof path, "%s/particles", group);
        hid_t d = H5Dcreate2(file, path, ptype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(d, ptype, mem, space, dxpl, p);
        H5Dclose(d);

        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, 6);
        snprintf(path, sizeof path, "%s/rho", group);
        d = H5Dcreate2(file, path, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        H5Pclose(dcpl);
        H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, dxpl, rho);
        H5Dclose(d);

        hsize_t ten = 10;
        hid_t small = H5Screate_simple(1, &ten, NULL);
        snprintf(path, sizeof path, "%s/unwritten", group);
        d = H5Dcreate2(file, path, H5T_NATIVE_FLOAT, small, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dclose(d);
        H5Sclose(small);

        H5Pclose(dxpl);
        H5Sclose(mem);
        H5Sclose(space);
        H5Fflush(file, H5F_SCOPE_GLOBAL);
        H5Fclose(file);
    }
    H5Tclose(ptype);
    free(p);
    free(rho);
    MPI_Finalize();
    return 0;
}
