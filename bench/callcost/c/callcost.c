/* callcost: the cost of an intercepted call, without the storage in the way.
 * usage: callcost posix|hdf5|hdf5read|hdf5read1m N FILE
 *   posix: N pwrite of 4 KiB to the same offset, then N pread of it (the page stays cached,
 *          so the time is the calls themselves: ~1 us of kernel work each);
 *   hdf5:  N independent H5Dwrite of 256 ints to the same part of a dataset (MPI-IO driver,
 *          so each one passes the HDF5, MPI-IO and POSIX layers);
 *   hdf5read: N independent H5Dread of 8,192 ints (32 KiB) into the same memory;
 *   hdf5read1m: the same of 262,144 ints (1 MiB: the trace asks whether its pages were
 *          resident before the call, reads of 256 KiB or more).
 * Prints one line: {"mode": ..., "calls": N, "seconds": t, "ns_per_call": ...}. */
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(stderr, "usage: callcost posix|hdf5|hdf5read|hdf5read1m N FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long n = atol(argv[2]);
    const char *path = argv[3];
    double t = 0;
    long calls = 0;
    if (strcmp(argv[1], "posix") == 0) {
        static char buf[4096];
        int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
        if (fd < 0 || pwrite(fd, buf, sizeof buf, 0) != sizeof buf)
            MPI_Abort(MPI_COMM_WORLD, 1);
        t = MPI_Wtime();
        for (long i = 0; i < n; i++)
            if (pwrite(fd, buf, sizeof buf, 0) != sizeof buf)
                MPI_Abort(MPI_COMM_WORLD, 1);
        for (long i = 0; i < n; i++)
            if (pread(fd, buf, sizeof buf, 0) != sizeof buf)
                MPI_Abort(MPI_COMM_WORLD, 1);
        t = MPI_Wtime() - t;
        calls = 2 * n;
        close(fd);
    } else {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, MPI_COMM_SELF, MPI_INFO_NULL);
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        int big = strcmp(argv[1], "hdf5read1m") == 0;
        int reads = big || strcmp(argv[1], "hdf5read") == 0;
        hsize_t dims = big ? 262144 : 65536, count = big ? 262144 : reads ? 8192 : 256, start = 0;
        hid_t space = H5Screate_simple(1, &dims, NULL), mem = H5Screate_simple(1, &count, NULL);
        hid_t d = H5Dcreate2(f, "d", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
        static int buf[262144];
        H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf);
        t = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            if (reads)
                H5Dread(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf);
            else
                H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf);
        }
        t = MPI_Wtime() - t;
        calls = n;
        H5Dclose(d);
        H5Sclose(mem);
        H5Sclose(space);
        H5Fclose(f);
        H5Pclose(fapl);
    }
    unlink(path);
    printf("{\"mode\": \"%s\", \"calls\": %ld, \"seconds\": %.6f, \"ns_per_call\": %.1f}\n",
           argv[1], calls, t, 1e9 * t / (double)calls);
    MPI_Finalize();
    return 0;
}
