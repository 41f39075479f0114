/* libFuzzer harness: name matching (match.c) as the runtime does it at every open: a
 * FileName=/VariableName= pattern (at most what the parser takes, IOT_PATTERN_MAX - 1 bytes)
 * against a file name or dataset path the application gives (at most PATH_MAX). The input is
 * "pattern TAB path"; without a TAB the path is NULL (file level, no dataset). Checks: no
 * crash, no hang (libFuzzer's -timeout), an empty pattern matches everything, a pattern
 * without wildcards matches itself. */
#include <limits.h>

#include "check.h"
#include "config/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > IOT_PATTERN_MAX + PATH_MAX)
        return 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *pattern = buf, *path = strchr(buf, '\t');
    if (path)
        *path++ = '\0';
    if (strlen(pattern) < IOT_PATTERN_MAX && (!path || strlen(path) < PATH_MAX)) {
        int f = iot_match_file(pattern, path ? path : "");
        int d = iot_match_dataset(pattern, path);
        CHECK(f == 0 || f == 1);
        CHECK(d == 0 || d == 1);
        if (!*pattern)
            CHECK(f == 1 && d == 1);
        const char *stripped = iot_strip_romio_prefix(pattern);
        CHECK(stripped >= pattern && stripped <= pattern + strlen(pattern));
        /* no wildcard, no ROMIO prefix, an absolute name: it names itself */
        if (pattern[0] == '/' && !strpbrk(pattern, "*?[\\"))
            CHECK(iot_match_file(pattern, pattern) == 1 &&
                  iot_match_dataset(pattern, pattern) == 1);
    }
    free(buf);
    return 0;
}
