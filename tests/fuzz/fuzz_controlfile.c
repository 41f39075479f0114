/* libFuzzer harness: any bytes as a control file's text, through the runtime's parser
 * (iot_settings_parse: xmldoc.c, settings.c, values.c) and matcher (match.c), as the runtime
 * reads IOTUNE_CONFIG. Beyond memory errors and undefined behaviour it checks what the
 * runtime relies on: one report per problem, a fatal reading has no settings, every setting
 * is within its fixed-size fields, every normalised value reads back as itself, and matching
 * returns settings of the parameter asked for. */
#include "base/printable.h"
#include "check.h"
#include "config/json.h"
#include "config/settings.h"

static int n_reports;

static void on_report(void *ctx, int line, const char *element, const char *value,
                      const char *message, int fatal)
{
    n_reports++;
    CHECK(line >= 0);
    CHECK(message && *message);
    /* every string handed out is read to its end (ASan: within its allocation) */
    size_t n = strlen(message) + (element ? strlen(element) : 0) + (value ? strlen(value) : 0);
    CHECK(n > 0);
    /* as a message shows them: nothing left that a terminal acts on */
    const char *texts[] = {message, element ? element : "", value ? value : ""};
    for (int i = 0; i < 3; i++) {
        char shown[IOT_PRINTABLE_MAX(256)];
        for (const unsigned char *c =
                 (const unsigned char *)iot_printable(texts[i], shown, sizeof shown);
             *c; c++)
            CHECK(*c >= 0x20 && *c != 0x7F && !(c[0] == 0xC2 && c[1] < 0xA0));
    }
}

static void check_entry(const iot_entry *e)
{
    CHECK_TERMINATED(e->name);
    CHECK_TERMINATED(e->file_pat);
    CHECK_TERMINATED(e->var_pat);
    CHECK_TERMINATED(e->value.text);
    CHECK(e->line >= 1);
    CHECK(e->param >= -1 && e->param < IOT_P_COUNT);
    CHECK(e->value.n >= 0 && e->value.n <= IOT_MAX_DIMS);
    /* the normalised value is a fixed point: read again, it is the same value */
    iot_value again;
    char err[400];
    int rc = e->param >= 0
                 ? iot_value_parse(&iot_params[e->param], e->value.text, &again, err, sizeof err)
                 : iot_value_parse_string(e->value.text, &again, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s=\"%s\" does not read back: %s\n", e->name, e->value.text, err);
    CHECK(rc == 0);
    CHECK(strcmp(again.text, e->value.text) == 0);
    /* VariableName= only on a dataset setting */
    CHECK(e->var_pat[0] == '\0' ||
          (e->param >= 0 && iot_params[e->param].scope == IOT_SCOPE_DATASET));
}

typedef struct {
    const iot_settings *s;
    int n;
    const char *keys[64];
} hint_count;

static void on_hint(void *ctx, const iot_entry *e)
{
    hint_count *h = ctx;
    CHECK(e >= h->s->entries && e < h->s->entries + h->s->count);
    CHECK(e->param < 0 || iot_params[e->param].target == IOT_TARGET_HINT);
    /* one entry per key: the winner */
    for (int i = 0; i < h->n && i < 64; i++)
        CHECK(strcmp(h->keys[i], e->name) != 0);
    if (h->n < 64)
        h->keys[h->n] = e->name;
    h->n++;
}

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *files[] = {"/scratch/run/out_0001.h5", "out.h5", "lustre:/p/x.nc"};
    static const char *datasets[] = {NULL, "/g/temperature"};
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    iot_settings s;
    n_reports = 0;
    int problems = iot_settings_parse((const char *)data, size, &s, on_report, NULL);
    CHECK(problems == n_reports);
    CHECK(s.count >= 0 && s.count <= IOT_MAX_SETTINGS);
    if (s.fatal)
        CHECK(s.count == 0 && problems == 1);
    for (int i = 0; i < s.count; i++)
        check_entry(&s.entries[i]);
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        for (size_t d = 0; d < sizeof datasets / sizeof *datasets; d++)
            for (int p = 0; p < IOT_P_COUNT; p++) {
                const iot_entry *e = iot_settings_find(&s, p, files[f], datasets[d]);
                CHECK(!e || e->param == p);
            }
        hint_count h = {&s, 0, {0}};
        iot_settings_each_hint(&s, files[f], on_hint, &h);
        CHECK(h.n <= s.count);
    }
    if (devnull)
        iot_json_settings(devnull, &s);
    iot_settings_free(&s);
    return 0;
}
