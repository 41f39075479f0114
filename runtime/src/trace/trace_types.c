/* MPI datatypes described for the trace: a file view's and a transfer's memory layout, as
 * MPI_File_set_view and the data calls meet them (wrap_mpiio.c; trace_types.h). */
#include "trace/trace_types.h"

#include <stdlib.h>

#include "capture/capture.h"
#include "platform/mpitype.h"
#include "trace/trace.h"

/* The most blocks of a filetype the trace describes (a view's text holds about 1,500), and of
 * runs of them for a filetype of more blocks (RUN_BLOCKS at most, flattened to find them). */
#define VIEW_BLOCKS 1024
#define VIEW_RUNS 256
#define RUN_BLOCKS (1 << 18)

/* The view's description for the trace (MPI calls outside the lock): the etype's size, the
 * filetype's blocks (or runs of them), size and extent; interned, so a view set again costs
 * no memory. */
int iot_trace_describe_view(MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                            MPI_Count *size)
{
    static iot_block blocks[VIEW_BLOCKS]; /* set_view is collective: no two threads at once */
    static iot_run runs[VIEW_RUNS];
    MPI_Count esize = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
    PMPI_Type_size_x(etype, &esize);
    PMPI_Type_size_x(filetype, size);
    PMPI_Type_get_extent_x(filetype, &lb, &extent);
    PMPI_Type_get_true_extent_x(filetype, &tlb, &textent);
    int n = iot_type_blocks(filetype, blocks, VIEW_BLOCKS), nruns = -1;
    iot_block *many = n < 0 ? malloc(sizeof *many * RUN_BLOCKS) : NULL;
    if (many) {
        int m = iot_type_blocks(filetype, many, RUN_BLOCKS);
        nruns = m > 0 ? iot_blocks_runs(many, m, runs, VIEW_RUNS) : -1;
        free(many);
    }
    if (!iot_lock())
        return -1;
    int view =
        iot_trace_view(disp, esize > 0 ? (uint64_t)esize : 0, *size > 0 ? (uint64_t)*size : 0, lb,
                       extent, textent, blocks, n, runs, nruns);
    iot_unlock();
    return view;
}

/* The trace's memory layout of a transfer (MPI calls outside the lock): -1 when the datatype
 * is contiguous (the common case costs three type queries), else the pieces of one instance. */
int iot_trace_describe_memory(MPI_Count count, MPI_Datatype type)
{
    MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
    PMPI_Type_size_x(type, &size);
    PMPI_Type_get_true_extent_x(type, &tlb, &textent);
    if (size == textent &&
        (count <= 1 ||
         (PMPI_Type_get_extent_x(type, &lb, &extent) == MPI_SUCCESS && extent == size)))
        return -1;
    static iot_block blocks[VIEW_BLOCKS]; /* under the lock below: one thread at a time */
    if (!iot_lock())
        return -1;
    int n = iot_type_blocks(type, blocks, VIEW_BLOCKS);
    int memory = iot_trace_memory(size > 0 ? (uint64_t)size : 0, blocks, n);
    iot_unlock();
    return memory;
}
