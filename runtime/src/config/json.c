#include "config/json.h"

#include "base/printable.h"

const char *const iot_layer_names[] = {"hdf5", "mpiio", "fs"};

void iot_json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = iot_utf8_length(p);
        if (!n) /* a byte of no UTF-8 character (a file name, a knowledge base's study): as
                 * Python's surrogateescape reads it, so the profile stays UTF-8 and
                 * os.fsencode gives the byte back */
            fprintf(f, "\\u%04x", 0xdc00 | *p), n = 1;
        else if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fwrite(p, 1, (size_t)n, f);
        p += n;
    }
    fputc('"', f);
}

void iot_json_settings(FILE *f, const iot_settings *s)
{
    fputc('[', f);
    for (int i = 0; i < s->count; i++) {
        const iot_entry *e = &s->entries[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        iot_json_string(f, e->name);
        fprintf(f, ", \"layer\": \"%s\", \"file\": ", iot_layer_names[e->layer]);
        iot_json_string(f, e->file_pat[0] ? e->file_pat : NULL);
        fputs(", \"variable\": ", f);
        iot_json_string(f, e->var_pat[0] ? e->var_pat : NULL);
        fputs(", \"value\": ", f);
        iot_json_string(f, e->value.text);
        fputc('}', f);
    }
    fputc(']', f);
}
