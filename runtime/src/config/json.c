#include "config/json.h"

const char *const iot_layer_names[] = {"hdf5", "mpiio", "fs"};

void iot_json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
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
