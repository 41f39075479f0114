/* The runtime's messages on stderr. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void iot_log(const char *fmt, ...)
{
    int saved = errno; /* the application may read errno after the wrapped call */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "iotune: %s\n", line);
    errno = saved;
}

void iot_log_block(const char *header, const char *lines)
{
    fprintf(stderr, "iotune: %s\n", header);
    while (lines && *lines) {
        size_t n = strcspn(lines, "\n");
        fprintf(stderr, "iotune:   %.*s\n", (int)n, lines);
        lines += n + (lines[n] == '\n');
    }
}
