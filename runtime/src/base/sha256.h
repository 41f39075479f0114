/* SHA-256 (FIPS 180-4), for the knowledge base's signature keys: Python's
 * hashlib.sha256 computes the same (kbkey.c, iotune.kb.signature.Signature.key). */
#ifndef IOTUNE_SHA256_H
#define IOTUNE_SHA256_H

#include <stddef.h>

/* The digest of n bytes of data as 64 lowercase hex digits and a NUL in hex. */
void iot_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
