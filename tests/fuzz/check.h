/* What every fuzz harness checks beyond "no crash": a broken promise aborts, so that
 * libFuzzer (and the replay driver under CTest) report it like a crash. */
#ifndef IOTUNE_FUZZ_CHECK_H
#define IOTUNE_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A string field of a fixed size ends inside it. */
#define CHECK_TERMINATED(field) CHECK(memchr((field), '\0', sizeof(field)) != NULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
