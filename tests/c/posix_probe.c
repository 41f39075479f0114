/* posix_probe: plain POSIX I/O with a known pattern, for checking the profile exactly.
 * usage: posix_probe FILE N SIZE [--mpi [--spawn]]
 *   N write() of SIZE bytes, lseek to 0, N read() of SIZE bytes, one pwrite() of SIZE bytes
 *   at offset 0, fsync, close. With --mpi each rank does it on FILE.<rank> between MPI_Init
 *   and MPI_Finalize; without, no MPI is used at all. --spawn: rank 0 also runs a shell that
 *   writes FILE.child a second later, in the background: a child process doing I/O of its
 *   own after this program has ended. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: posix_probe FILE N SIZE [--mpi]\n");
        return 2;
    }
    int use_mpi = argc > 4 && strcmp(argv[4], "--mpi") == 0, rank = 0;
    if (use_mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    char path[4096];
    snprintf(path, sizeof path, use_mpi ? "%s.%d" : "%s", argv[1], rank);
    long n = atol(argv[2]);
    size_t size = (size_t)atol(argv[3]);
    char *buf = malloc(size), *back = malloc(size);
    memset(buf, 'a' + rank, size);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0 || !buf || !back) {
        perror(path);
        return 1;
    }
    int bad = 0;
    for (long i = 0; i < n; i++)
        bad |= write(fd, buf, size) != (ssize_t)size;
    bad |= lseek(fd, 0, SEEK_SET) != 0;
    for (long i = 0; i < n; i++)
        bad |= read(fd, back, size) != (ssize_t)size || memcmp(buf, back, size) != 0;
    bad |= pwrite(fd, buf, size, 0) != (ssize_t)size;
    bad |= fsync(fd) != 0;
    bad |= close(fd) != 0;
    free(buf);
    free(back);
    if (use_mpi && argc > 5 && strcmp(argv[5], "--spawn") == 0 && rank == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd,
                 "(sleep 1; dd if=/dev/zero of='%s.child' bs=4096 count=1 2>/dev/null) &", argv[1]);
        bad |= system(cmd) != 0;
    }
    if (use_mpi)
        MPI_Finalize();
    return bad;
}
