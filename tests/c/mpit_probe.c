/* mpit_probe: an ordinary MPI-IO program that reads back, through the MPI tool interface
 * (MPI_T), the control variables named on its command line, as the MPI library sees them
 * while a file is open: for Open MPI, the MCA parameters set through OMPI_MCA_* (io,
 * fcoll, io_ompio_num_aggregators, ...). Rank 0 prints one JSON object; a name the library does
 * not have is left out.
 *
 * usage: mpit_probe FILE NAME... (each rank writes 1 MiB collectively, then reads it back) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES (1 << 20)

/* Prints "name": "value" of one control variable (ints, unsigned, sizes and strings). */
static int print_cvar(int index, const char *name, int first)
{
    char cname[256], desc[1024];
    int name_len = sizeof cname, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(index, cname, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS)
        return 0;
    MPI_T_cvar_handle handle;
    int count;
    if (bind != MPI_T_BIND_NO_OBJECT ||
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return 0;
    char text[1024] = "";
    if (type == MPI_CHAR) {
        char *buf = calloc((size_t)count + 1, 1);
        if (buf && MPI_T_cvar_read(handle, buf) == MPI_SUCCESS)
            snprintf(text, sizeof text, "%s", buf);
        free(buf);
    } else if (type == MPI_INT) {
        int v = 0;
        MPI_T_cvar_read(handle, &v);
        snprintf(text, sizeof text, "%d", v);
    } else if (type == MPI_UNSIGNED) {
        unsigned v = 0;
        MPI_T_cvar_read(handle, &v);
        snprintf(text, sizeof text, "%u", v);
    } else if (type == MPI_UNSIGNED_LONG || type == MPI_UNSIGNED_LONG_LONG ||
               type == MPI_LONG_LONG_INT || type == MPI_LONG) {
        long long v = 0;
        MPI_T_cvar_read(handle, &v);
        snprintf(text, sizeof text, "%lld", v);
    } else {
        snprintf(text, sizeof text, "?");
    }
    MPI_T_cvar_handle_free(&handle);
    printf("%s\"%s\": \"%s\"", first ? "" : ", ", name, text);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mpit_probe FILE NAME...\n");
        return 2;
    }
    int provided, rank;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    char *buf = malloc(BYTES), *back = malloc(BYTES);
    for (int i = 0; i < BYTES; i++)
        buf[i] = (char)(i * 7 + rank);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "mpit_probe: cannot open %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_write_at_all(fh, (MPI_Offset)rank * BYTES, buf, BYTES, MPI_BYTE, MPI_STATUS_IGNORE);

    /* read back while the file is open: the I/O components' variables exist now */
    if (rank == 0) {
        int n = 0;
        MPI_T_cvar_get_num(&n);
        printf("{");
        int first = 1;
        for (int a = 2; a < argc; a++)
            for (int i = 0; i < n; i++) {
                char cname[256], desc[16];
                int name_len = sizeof cname, desc_len = sizeof desc, verbosity, bind, scope;
                MPI_Datatype type;
                MPI_T_enum enumtype;
                if (MPI_T_cvar_get_info(i, cname, &name_len, &verbosity, &type, &enumtype, desc,
                                        &desc_len, &bind, &scope) == MPI_SUCCESS &&
                    strcmp(cname, argv[a]) == 0) {
                    if (print_cvar(i, argv[a], first))
                        first = 0;
                    break;
                }
            }
        printf("}\n");
        fflush(stdout);
    }
    MPI_File_read_at_all(fh, (MPI_Offset)rank * BYTES, back, BYTES, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    int bad = memcmp(buf, back, BYTES) != 0, anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && anybad)
        fprintf(stderr, "mpit_probe: data read back differs\n");
    free(buf);
    free(back);
    MPI_T_finalize();
    MPI_Finalize();
    return anybad;
}
