/* libFuzzer harness: one parameter value, as iot_value_parse reads the text of an element.
 * The input is "NAME LF TEXT": NAME chooses the parameter (a name the registry does not know
 * is an MPI-IO hint: a plain string), TEXT (up to a NUL) is the value. Checks: a value taken is
 * within the registry's bounds and its fixed-size fields, its normalised text reads back as itself;
 * a value refused comes with a message. */
#include "check.h"
#include "config/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > IOT_CONFIG_MAX_BYTES)
        return 0;
    char *name = malloc(size + 1);
    if (!name)
        return 0;
    memcpy(name, data, size);
    name[size] = '\0';
    char *text = strchr(name, '\n');
    if (!text) {
        free(name);
        return 0;
    }
    *text++ = '\0';
    const iot_param_def *def = NULL;
    for (int p = 0; p < IOT_P_COUNT && !def; p++)
        if (strcmp(iot_params[p].name, name) == 0)
            def = &iot_params[p];
    iot_value v;
    char err[400];
    err[0] = '\0';
    int rc = def ? iot_value_parse(def, text, &v, err, sizeof err)
                 : iot_value_parse_string(text, &v, err, sizeof err);
    CHECK(rc == 0 || rc == -1);
    if (rc) {
        CHECK(err[0] != '\0');
        CHECK_TERMINATED(err);
    } else {
        CHECK_TERMINATED(v.text);
        CHECK(v.n >= 0 && v.n <= IOT_MAX_DIMS);
        if (def && def->type != IOT_T_STRING && def->type != IOT_T_BOOL && def->type != IOT_T_ENUM)
            for (int i = 0; i < v.n; i++) {
                double x = def->type == IOT_T_DOUBLE ? v.d : (double)v.v[i];
                CHECK(x >= def->min && x <= def->max);
            }
        iot_value again;
        int rc2 = def ? iot_value_parse(def, v.text, &again, err, sizeof err)
                      : iot_value_parse_string(v.text, &again, err, sizeof err);
        if (rc2)
            fprintf(stderr, "\"%s\" -> \"%s\" does not read back: %s\n", text, v.text, err);
        CHECK(rc2 == 0);
        CHECK(strcmp(again.text, v.text) == 0);
        CHECK(again.n == v.n);
        CHECK(memcmp(again.v, v.v, sizeof v.v) == 0);
    }
    free(name);
    return 0;
}
