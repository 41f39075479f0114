/* When fill_time=never keeps the data a dataset's unwritten elements read back. */
#ifndef IOTUNE_FILL_GUARD_H
#define IOTUNE_FILL_GUARD_H

#include "apply/resolve.h"
#include "platform/h5api.h"

/* Why fill_time=never could change what the dataset (of file f, path dset, creation list dcpl
 * as tuned so far) reads back where the application writes nothing, then what would let it apply
 * ("why; it applies ..."), or NULL when it cannot. */
const char *iot_fill_never_unsafe(const iot_file_info *f, const char *dset, hid_t dcpl);

#endif
