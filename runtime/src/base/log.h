/* The runtime's messages: one line "iotune: ..." on stderr (callers decide which rank speaks;
 * core.h has the once-per-run warning). */
#ifndef IOTUNE_LOG_H
#define IOTUNE_LOG_H

/* Prints one line "iotune: ..." to stderr, errno kept. */
__attribute__((format(printf, 1, 2))) void iot_log(const char *fmt, ...);

/* Prints a header line and then each line of lines (separated by \n), indented. */
void iot_log_block(const char *header, const char *lines);

#endif
