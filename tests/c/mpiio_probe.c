/* mpiio_probe: a plain MPI-IO program (no HDF5) with hints of its own. Writes FILE (each rank
 * a block), reads it back, and prints the hints in effect as JSON on rank 0.
 * When the open fails, rank 0 prints the error instead and the program exits with 3.
 * usage: mpiio_probe FILE */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define BLOCK 65536

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", "2097152"); /* the application's own hints */
    MPI_Info_set(info, "romio_ds_write", "enable");
    MPI_File fh;
    int err = MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    if (err != MPI_SUCCESS) { /* the error the application sees, for the tests to compare */
        char text[MPI_MAX_ERROR_STRING];
        int len = 0, cls = 0;
        MPI_Error_class(err, &cls);
        MPI_Error_string(err, text, &len);
        if (rank == 0)
            printf("{\"open_error\": %d, \"class\": %d, \"message\": \"%.*s\"}\n", err, cls,
                   (int)strcspn(text, "\"\n"), text);
        MPI_Finalize();
        return 3;
    }
    MPI_Info_free(&info);
    static char buf[BLOCK], back[BLOCK];
    for (int i = 0; i < BLOCK; i++)
        buf[i] = (char)('a' + (i + rank) % 26);
    MPI_File_write_at_all(fh, (MPI_Offset)rank * BLOCK, buf, BLOCK, MPI_CHAR, MPI_STATUS_IGNORE);
    MPI_File_read_at_all(fh, (MPI_Offset)rank * BLOCK, back, BLOCK, MPI_CHAR, MPI_STATUS_IGNORE);
    int bad = memcmp(buf, back, BLOCK) != 0, all_bad;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Info got;
    MPI_File_get_info(fh, &got);
    if (rank == 0) {
        int n;
        MPI_Info_get_nkeys(got, &n);
        printf("{\"mismatches\": %d, \"hints\": {", all_bad);
        for (int i = 0; i < n; i++) {
            char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
            int flag;
            MPI_Info_get_nthkey(got, i, key);
            MPI_Info_get(got, key, MPI_MAX_INFO_VAL, val, &flag);
            printf("%s\"%s\": \"%s\"", i ? ", " : "", key, val);
        }
        printf("}}\n");
    }
    MPI_Info_free(&got);
    MPI_File_close(&fh);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
