/* The runtime's control-file parser and matcher, without the runtime, for the shared test
 * vectors (tests/vectors) that hold C and Python to the same reading:
 *   iotune-parse FILE...               the normalised JSON of `iotune check --json FILE`, one
 *                                      line per file
 *   iotune-parse --match               reads "file|dataset TAB pattern TAB path" lines and
 *                                      prints 1 or 0 per line (an empty pattern is none, a
 *                                      missing path is none)
 *   iotune-parse --effective FILE NAME [DATASET]
 *                                      the settings in force for file NAME (and a dataset in
 *                                      it) as {"name": "value"}
 *   iotune-parse --costs               reads "name TAB value TAB elem TAB memory TAB disk"
 *                                      lines (a budget, -1 unknown) and prints "cost TAB 0|1"
 *                                      per line: the bytes the setting costs, and whether the
 *                                      runtime withdraws it (tests/vectors/costs/cases.json) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/printable.h"
#include "config/bounds.h"
#include "config/json.h"
#include "config/settings.h"

static int n_errors;

/* The overrides, printed after the settings: the errors stream out as they come. */
typedef struct {
    int line;
    char *element, *value;
} override;
static override overrides[IOT_MAX_SETTINGS];
static int n_overrides;

static char *copy(const char *text)
{
    return text ? strdup(text) : NULL;
}

/* Text from the input on stderr as every message shows it (base/printable.h). */
static void fputs_printable(const char *text)
{
    size_t len = IOT_PRINTABLE_MAX(strlen(text));
    char *buf = malloc(len);
    if (buf)
        fputs(iot_printable(text, buf, len), stderr);
    free(buf);
}

static void print_problem(int first, int line, const char *element, const char *value)
{
    printf("%s{\"line\": ", first ? "" : ", ");
    if (line > 0)
        printf("%d", line);
    else
        fputs("null", stdout);
    fputs(", \"element\": ", stdout);
    iot_json_string(stdout, element);
    fputs(", \"value\": ", stdout);
    iot_json_string(stdout, value);
    putchar('}');
}

static void on_error(void *ctx, int line, const char *element, const char *value,
                     const char *message, int kind)
{
    if (kind != IOT_DIAG_OVERRIDE)
        print_problem(!n_errors++, line, element, value);
    else if (n_overrides < IOT_MAX_SETTINGS)
        overrides[n_overrides++] = (override){line, copy(element), copy(value)};
    /* the form of the Python side's Problem.format(), escaped as it escapes */
    fputs_printable((const char *)ctx);
    if (line > 0)
        fprintf(stderr, ":%d", line);
    if (element) {
        char shown[IOT_SHOWN_MAX];
        fputs(": <", stderr);
        fputs_printable(iot_name_shown(element, shown));
        fputs(">", stderr);
    }
    fputs(": ", stderr);
    fputs_printable(message);
    fputs("\n", stderr);
}

static void on_error_quiet(void *ctx, int line, const char *element, const char *value,
                           const char *message, int kind)
{
    if (kind == IOT_DIAG_OVERRIDE) /* --effective asks what wins: an override is its answer */
        return;
    fputs_printable((const char *)ctx);
    char shown[IOT_SHOWN_MAX];
    fprintf(stderr, ":%d: <", line);
    fputs_printable(iot_name_shown(element ? element : "", shown));
    fputs(">: ", stderr);
    fputs_printable(message);
    fputs("\n", stderr);
}

static int parse(const char *path)
{
    iot_settings s;
    n_errors = n_overrides = 0;
    fputs("{\"errors\": [", stdout);
    iot_settings_load(path, &s, on_error, (void *)path);
    fputs("], \"settings\": ", stdout);
    iot_json_settings(stdout, &s);
    fputs(", \"overrides\": [", stdout);
    for (int i = 0; i < n_overrides; i++) {
        print_problem(i == 0, overrides[i].line, overrides[i].element, overrides[i].value);
        free(overrides[i].element);
        free(overrides[i].value);
    }
    putchar(']');
    printf(", \"fatal\": %s}\n", s.fatal ? "true" : "false");
    iot_settings_free(&s);
    return 0;
}

static int match(void)
{
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *kind = line, *pattern = strchr(kind, '\t'), *path = NULL;
        if (!pattern)
            return fprintf(stderr, "iotune-parse: bad line \"%s\"\n", line), 2;
        *pattern++ = '\0';
        if ((path = strchr(pattern, '\t')))
            *path++ = '\0';
        int file = strcmp(kind, "file") == 0;
        if (file && !path)
            return fprintf(stderr, "iotune-parse: a file needs a path\n"), 2;
        printf("%d\n", file ? iot_match_file(pattern, path) : iot_match_dataset(pattern, path));
    }
    return 0;
}

typedef struct {
    int n;
    const iot_settings *s;
    const char *file;
} effective_out;

static void print_pair(effective_out *o, const char *name, const char *value)
{
    fputs(o->n++ ? ", " : "", stdout);
    iot_json_string(stdout, name);
    fputs(": ", stdout);
    iot_json_string(stdout, value);
}

/* Hints come from iot_settings_each_hint (what MPI-IO gets); a registry hint must agree
 * with iot_settings_find, or it shows up a second time under "each_hint:NAME". */
static void on_hint(void *ctx, const iot_entry *e)
{
    effective_out *o = ctx;
    const iot_entry *found =
        e->param >= 0 ? iot_settings_find(o->s, e->param, o->file, NULL) : NULL;
    if (e->param < 0) {
        print_pair(o, e->name, e->value.text);
    } else if (found != e) {
        char key[IOT_NAME_MAX + 16];
        snprintf(key, sizeof key, "each_hint:%s", e->name);
        print_pair(o, key, e->value.text);
    }
}

static int effective(const char *path, const char *file, const char *dataset)
{
    iot_settings s;
    iot_settings_load(path, &s, on_error_quiet, (void *)path);
    effective_out o = {0, &s, file};
    putchar('{');
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_settings_find(&s, p, file, dataset);
        if (e)
            print_pair(&o, e->name, e->value.text);
    }
    iot_settings_each_hint(&s, file, on_hint, &o);
    puts("}");
    iot_settings_free(&s);
    return 0;
}

static int costs(void)
{
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *f[5];
        int n = 0;
        for (char *c = line; n < 5 && c; n++) {
            f[n] = c;
            if ((c = strchr(c, '\t')))
                *c++ = '\0';
        }
        if (n != 5)
            return fprintf(stderr, "iotune-parse: bad line\n"), 2;
        int param = -1;
        for (int p = 0; p < IOT_P_COUNT; p++)
            if (strcmp(iot_params[p].name, f[0]) == 0)
                param = p;
        iot_value v;
        char err[400], why[800];
        if (param < 0 || iot_value_parse(&iot_params[param], f[1], &v, err, sizeof err))
            return fprintf(stderr, "iotune-parse: %s=%s: not a value\n", f[0], f[1]), 2;
        iot_budget b = {.memory = atof(f[3]), .disk = atof(f[4])};
        snprintf(b.memory_what, sizeof b.memory_what, "vectors");
        snprintf(b.disk_what, sizeof b.disk_what, "vectors");
        double cost = iot_cost(param, &v, atof(f[2]));
        why[0] = '\0';
        int out = iot_bounds_exceeds(param, f[0], v.text, cost, &b, why, sizeof why);
        printf("%.17g\t%d\t%s\n", cost, out, why);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--costs") == 0)
        return costs();
    if (argc == 2 && strcmp(argv[1], "--match") == 0)
        return match();
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--effective") == 0)
        return effective(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
    if (argc >= 2 && argv[1][0] != '-') {
        for (int i = 1; i < argc; i++)
            parse(argv[i]);
        return 0;
    }
    fprintf(stderr, "usage: iotune-parse CONTROL_FILE.xml...\n"
                    "       iotune-parse --match < CASES\n"
                    "       iotune-parse --effective CONTROL_FILE.xml FILE [DATASET]\n"
                    "       iotune-parse --costs < CASES\n");
    return 2;
}
