/* The runtime's messages on stderr: every line goes out through iot_printable, so that no
 * text from outside (a control file's names and values, file or dataset names) reaches the
 * terminal raw. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/printable.h"

static void put_line(const char *prefix, const char *text, size_t n)
{
    char raw[2304], shown[IOT_PRINTABLE_MAX(sizeof raw)]; /* the longest header: 2200 */
    snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw ? n : sizeof raw - 1), text);
    fprintf(stderr, "%s%s\n", prefix, iot_printable(raw, shown, sizeof shown));
}

void iot_log(const char *fmt, ...)
{
    int saved = errno; /* the application may read errno after the wrapped call */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    put_line("iotune: ", line, strlen(line));
    errno = saved;
}

void iot_log_block(const char *header, const char *lines)
{
    int saved = errno;
    put_line("iotune: ", header, strlen(header));
    while (lines && *lines) {
        size_t n = strcspn(lines, "\n");
        put_line("iotune:   ", lines, n);
        lines += n + (lines[n] == '\n');
    }
    errno = saved;
}
