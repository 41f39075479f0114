/* Text from outside (a control file's names and values, file and dataset names) made safe for
 * a terminal before a message shows it: the one definition of the runtime's escaping
 * (iotune.outputs.printable on the Python side, word for word). */
#ifndef IOTUNE_PRINTABLE_H
#define IOTUNE_PRINTABLE_H

#include <stddef.h>

/* Copies text into buf (len bytes, NUL-terminated) with what a terminal could act on, or what
 * could forge or reorder a line, escaped: \n \r \t; other C0 controls, DEL and the C1
 * controls U+0080..U+009F as \xHH; each byte that is not part of valid UTF-8 as \xHH; the
 * line and paragraph separators U+2028, U+2029 and the bidirectional marks, embeddings,
 * overrides and isolates (U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) as \uHHHH.
 * Backslashes and every other character are kept. An escape or character that does not fit
 * is left out whole. Returns buf. */
const char *iot_printable(const char *text, char *buf, size_t len);

/* text as one word of a command line to paste into bash when iot_printable would escape some
 * of it: $'...' with the bytes of each such character as \xHH, and \ and ' escaped, so that
 * the word is printable and bash reads back exactly text (iotune.outputs.shell_word, word for
 * word); NULL when nothing in text would be escaped. A character that does not fit in len is
 * left out whole. Returns buf. */
const char *iot_shell_ansi(const char *text, char *buf, size_t len);

/* The length of the valid UTF-8 character at s (1 to 4), or 0 when s does not start one:
 * overlong forms, surrogates, beyond U+10FFFF and cut sequences are not valid, as for
 * Python's strict decoder. The one definition for the runtime. */
int iot_utf8_length(const unsigned char *s);

/* The room iot_printable (and iot_shell_ansi, with 3 more) may need for n bytes of text (each
 * byte at most 4). */
#define IOT_PRINTABLE_MAX(n) (4 * (n) + 1)

#endif
