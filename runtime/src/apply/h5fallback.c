/* The fail-safe of every HDF5 call a setting reaches: the attempt with the control file's
 * lists under a quiet error stack, the application's own call when HDF5 refuses it, the
 * runtime's list copies closed without touching the application's error stack, and the
 * withdrawn settings and outcomes said and kept in the file's profile record. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "apply/effect_hdf5.h"
#include "apply/h5fallback.h"
#include "capture/capture.h"
#include "core/core.h"

/* The fail-safe of every call a setting reaches: with settings injected, the attempt is made
 * with HDF5's error printing off (its failure is the runtime's, not the application's); if it
 * fails, the application's own call follows, and its outcome, error stack and errno are what
 * the application sees. why receives HDF5's reason when the settings were withdrawn and the
 * application's call succeeded; it stays empty otherwise. */
hid_t with_fallback(const iot_h5_api *real, h5_call call, const void *args, int injected, char *why,
                    size_t wlen)
{
    why[0] = '\0';
    if (!injected)
        return call(real, args, 1);
    int err = errno;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t id = call(real, args, 0);
    iot_h5_quiet_end(&quiet);
    if (id >= 0)
        return id;
    iot_h5_failure first;
    iot_h5_failure_keep(&first);
    iot_h5_failure_describe_and_drop(&first, why, wlen);
    errno = err;
    id = call(real, args, 1);
    if (id < 0)
        why[0] = '\0'; /* not the settings: the application's own call fails as well */
    else
        errno = err;
    return id;
}

/* Closes the runtime's copies of property lists; after a failed call its error stack and
 * errno survive the H5Pclose calls. */
void close_copies(const iot_h5_api *real, hid_t result, const hid_t *copies, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= copies[i] >= 0;
    if (!any)
        return;
    iot_h5_failure kept;
    if (result < 0)
        iot_h5_failure_keep(&kept);
    for (int i = 0; i < n; i++)
        if (copies[i] >= 0)
            real->H5Pclose(copies[i]);
    if (result < 0)
        iot_h5_failure_give_back(&kept);
}

/* One line on stderr (rank 0 of the file's communicator) and a note in the file's profile
 * record: which settings were withdrawn from a call and why. */
void say_withdrawn(const char *call, const char *file, const char *object, const char *settings,
                   const char *why, int leader, int rec)
{
    char line[1024];
    snprintf(line, sizeof line,
             "%s %s%s%s: HDF5 refused it with the control file's %s (%s): withdrawn, the "
             "application's own settings used",
             call, file, object ? ":" : "", object ? object : "", settings, why);
    if (leader)
        iot_warn_once(line, "%s", line);
    if (rec < 0)
        return;
    /* the profile's record, as for MPI-IO hints: one entry per setting of the list
     * ("name=value, name=value" or a bare name) */
    char reason[640], names[1024];
    snprintf(reason, sizeof reason, "%s%s%s: %s", call, object ? " " : "", object ? object : "",
             why);
    snprintf(names, sizeof names, "%s", settings);
    char *save = NULL;
    for (char *item = strtok_r(names, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        item += strspn(item, " ");
        char *eq = strchr(item, '=');
        if (eq)
            *eq = '\0';
        iot_rec_withdraw_at(rec, item, eq ? eq + 1 : "", reason);
    }
}

/* Of a note "OBJECT: name=value NOT applied: why [origin]" (or NOT in effect), the part after
 * the object's name; NULL for a note that names no object. */
static const char *after_object(const char *line, size_t len)
{
    const char *mark = NULL, *from = NULL;
    for (const char *m = line; (m = strstr(m, " NOT ")) && m < line + len; m++)
        if (!strncmp(m, " NOT applied: ", 14) || !strncmp(m, " NOT in effect: ", 16)) {
            mark = m;
            break;
        }
    for (const char *q = line; mark && (q = strstr(q, ": ")) && q < mark; q += 2)
        from = q + 2;
    return from;
}

/* Whether list holds a note that says rest (after_object) of another object: one dataset per
 * reason is named, so that a file of many datasets leaves room for its other notes (the
 * counts, dataset_settings, say how many a setting missed). */
static int said_of_another(const char *list, const char *rest)
{
    size_t n = strlen(rest);
    for (const char *l = list; *l;) {
        size_t len = strcspn(l, "\n");
        const char *r = after_object(l, len);
        if (r && (size_t)(l + len - r) == n && !strncmp(r, rest, n))
            return 1;
        l += len + (l[len] == '\n');
    }
    return 0;
}

/* Lines of an outcome into a list of the file's record, once each (notes of an object: once per
 * reason, said_of_another). */
static void merge_lines(char *into, size_t size, const char *lines)
{
    for (const char *line = lines; *line;) {
        size_t len = strcspn(line, "\n");
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)len, line);
        const char *rest = after_object(one, strlen(one));
        if (!rest || !said_of_another(into, rest))
            iot_outcome_add(into, size, one);
        line += len + (line[len] == '\n');
    }
}

/* What reached a file or dataset (and what did not), kept in the file's profile record. */
void keep_outcome(int rec, const iot_h5_outcome *out)
{
    if (rec < 0 || (!out->applied[0] && !out->notes[0]) || !iot_lock())
        return;
    iot_file_rec *r = iot_rec(rec);
    merge_lines(r->h5applied, sizeof r->h5applied, out->applied);
    merge_lines(r->h5notes, sizeof r->h5notes, out->notes);
    iot_unlock();
}

/* Whether lines holds the line "name=value" of entry e. */
static int holds(const char *lines, const iot_entry *e)
{
    char want[IOT_NAME_MAX + IOT_VALUE_TEXT_MAX + 2];
    size_t n = (size_t)snprintf(want, sizeof want, "%s=%s", e->name, e->value.text);
    for (const char *l = lines; (l = strstr(l, want)); l += n)
        if ((l == lines || l[-1] == '\n') && (l[n] == '\n' || l[n] == '\0'))
            return 1;
    return 0;
}

/* One more dataset name was meant for in list (lines "name\tN\tM"), reached or not; a list
 * too full for a new line stays as it was. */
static void count_line(char *list, size_t size, const char *name, int reached)
{
    char out[sizeof((iot_file_rec *)0)->h5dsets], one[128];
    size_t used = 0, n = strlen(name);
    int found = 0;
    out[0] = '\0';
    for (const char *l = list; *l;) {
        size_t len = strcspn(l, "\n");
        snprintf(one, sizeof one, "%.*s", (int)len, l);
        long got = 0, of = 0;
        if (!found && strncmp(one, name, n) == 0 && one[n] == '\t' &&
            sscanf(one + n, "%ld %ld", &got, &of) == 2) {
            snprintf(one, sizeof one, "%s\t%ld\t%ld", name, got + reached, of + 1);
            found = 1;
        }
        used += (size_t)snprintf(out + used, sizeof out - used, "%s%s", used ? "\n" : "", one);
        if (used >= sizeof out)
            return; /* no room: the counts stay as they were */
        l += len + (l[len] == '\n');
    }
    if (!found)
        used += (size_t)snprintf(out + used, sizeof out - used, "%s%s\t%d\t1", used ? "\n" : "",
                                 name, reached);
    if (used < size && used < sizeof out)
        memcpy(list, out, used + 1);
}

void keep_dataset_counts(int rec, const iot_file_settings *rules, const char *dset, int creating,
                         const iot_h5_outcome *out)
{
    if (rec < 0 || !iot_lock())
        return;
    iot_file_rec *r = iot_rec(rec);
    for (int p = 0; p < IOT_P_COUNT; p++) {
        int t = iot_params[p].target;
        if (t != IOT_TARGET_DAPL && (t != IOT_TARGET_DCPL || !creating))
            continue;
        const iot_entry *e = iot_resolved_for(rules, p, dset);
        if (!e || (p == IOT_P_CHUNK_SIZE && iot_resolved_for(rules, IOT_P_CHUNK, dset)))
            continue; /* chunk wins over chunk_size (apply_hdf5_dataset.c) */
        count_line(r->h5dsets, sizeof r->h5dsets, e->name, holds(out->applied, e));
    }
    iot_unlock();
}
