/* iotune-parse FILE: parse a control file with the runtime's own parser and print the
 * normalised JSON that the Python package prints for `iotune check --json`. The shared test
 * vectors (tests/vectors) hold both sides to the same reading. */
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "settings.h"

static int n_errors;

static void on_error(void *ctx, int line, const char *element, const char *value,
                     const char *message, int fatal)
{
    printf("%s{\"line\": ", n_errors++ ? ", " : "");
    if (line > 0)
        printf("%d", line);
    else
        fputs("null", stdout);
    fputs(", \"element\": ", stdout);
    iot_json_string(stdout, element);
    fputs(", \"value\": ", stdout);
    iot_json_string(stdout, value);
    putchar('}');
    fprintf(stderr, "%s:%d: <%s>: %s\n", (const char *)ctx, line, element ? element : "", message);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: iotune-parse CONTROL_FILE.xml\n");
        return 2;
    }
    iot_settings s;
    fputs("{\"errors\": [", stdout);
    iot_settings_load(argv[1], &s, on_error, argv[1]);
    fputs("], \"settings\": ", stdout);
    iot_json_settings(stdout, &s);
    printf(", \"fatal\": %s}\n", s.fatal ? "true" : "false");
    iot_settings_free(&s);
    return 0;
}
