/* An HDF5 program written for the skeleton tests: files opened in ways that move bytes without
 * moving data. Even ranks create an empty file on a communicator of their own and close it (as
 * HDF5's ph5example tests split communicators), and rank 0 deletes it (MPI_File_delete); every
 * rank writes its rows of a small dataset beside a dataset never written, of a fill value (HDF5
 * writes it when it allocates the dataset, at its creation under MPI-IO); then every rank opens
 * the file again read-write (H5F_ACC_RDWR), opens both datasets, reads its rows of the first
 * only, and closes; then every rank opens it again read-only and only opens the datasets (as
 * netCDF-4 looks at its variables); last, every rank creates a scratch file and removes it
 * (remove, one succeeds: as netCDF-4's test does). Usage: skel_sessions [ROWS_PER_RANK] */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 8

static hid_t fapl_of(MPI_Comm comm)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
    return fapl;
}

static hid_t rows_of(hid_t dset, int rank, hsize_t rows)
{
    hid_t space = H5Dget_space(dset);
    hsize_t start[2] = {rank * rows, 0}, count[2] = {rows, COLS};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    return space;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hsize_t rows = argc > 1 ? strtoull(argv[1], NULL, 10) : 2;
    int *buf = malloc(sizeof(int) * rows * COLS);
    for (hsize_t i = 0; i < rows * COLS; i++)
        buf[i] = (int)i + rank;

    MPI_Comm half; /* the even ranks make an empty file together, the odd ones wait */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    if (rank % 2 == 0) {
        hid_t fapl = fapl_of(half);
        H5Fclose(H5Fcreate("empty.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
        H5Pclose(fapl);
    }
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) /* the empty file deleted, as ph5example does */
        MPI_File_delete("empty.h5", MPI_INFO_NULL);

    hid_t fapl = fapl_of(MPI_COMM_WORLD);
    hid_t file = H5Fcreate("sessions.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {rows * size, COLS};
    hid_t fspace = H5Screate_simple(2, dims, NULL);
    hid_t data =
        H5Dcreate2(file, "/data", H5T_NATIVE_INT, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE); /* a fill value, big-endian as its type */
    int fill = -7;
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    hid_t spare = H5Dcreate2(file, "/spare", H5T_STD_I32BE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    hsize_t mdims[2] = {rows, COLS};
    hid_t mspace = H5Screate_simple(2, mdims, NULL);
    hid_t sel = rows_of(data, rank, rows);
    H5Dwrite(data, H5T_NATIVE_INT, mspace, sel, H5P_DEFAULT, buf);
    H5Sclose(sel);
    H5Dclose(spare);
    H5Dclose(data);
    H5Fclose(file);

    file = H5Fopen("sessions.h5", H5F_ACC_RDWR, fapl);
    data = H5Dopen2(file, "/data", H5P_DEFAULT);
    spare = H5Dopen2(file, "/spare", H5P_DEFAULT);
    sel = rows_of(data, rank, rows);
    H5Dread(data, H5T_NATIVE_INT, mspace, sel, H5P_DEFAULT, buf);
    H5Sclose(sel);
    H5Dclose(spare);
    H5Dclose(data);
    H5Fclose(file);

    file = H5Fopen("sessions.h5", H5F_ACC_RDONLY, fapl);
    H5Dclose(H5Dopen2(file, "/data", H5P_DEFAULT));
    H5Dclose(H5Dopen2(file, "/spare", H5P_DEFAULT));
    H5Fclose(file);

    H5Sclose(mspace);
    H5Sclose(fspace);
    H5Pclose(fapl);
    fapl = fapl_of(MPI_COMM_WORLD); /* a scratch file every rank removes (one succeeds) */
    H5Fclose(H5Fcreate("scratch.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    H5Pclose(fapl);
    MPI_Barrier(MPI_COMM_WORLD);
    remove("scratch.h5");
    free(buf);
    MPI_Finalize();
    return 0;
}
