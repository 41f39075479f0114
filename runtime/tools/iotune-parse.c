/* iotune-parse FILE: parse a control file with the runtime's own parser and print the
 * normalised JSON that the Python package prints for `iotune check --json`. The shared test
 * vectors (tests/vectors) hold both sides to the same reading. */
#include <stdio.h>
#include <stdlib.h>

#include "settings.h"

static const char *layer_names[] = {"hdf5", "mpiio", "fs"};

static void json_string(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

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
    json_string(element);
    fputs(", \"value\": ", stdout);
    json_string(value);
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
    fputs("], \"settings\": [", stdout);
    for (int i = 0; i < s.count; i++) {
        const iot_entry *e = &s.entries[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
        json_string(e->name);
        printf(", \"layer\": \"%s\", \"file\": ", layer_names[e->layer]);
        json_string(e->file_pat[0] ? e->file_pat : NULL);
        fputs(", \"variable\": ", stdout);
        json_string(e->var_pat[0] ? e->var_pat : NULL);
        fputs(", \"value\": ", stdout);
        json_string(e->value.text);
        putchar('}');
    }
    printf("], \"fatal\": %s}\n", s.fatal ? "true" : "false");
    iot_settings_free(&s);
    return 0;
}
