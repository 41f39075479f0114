#include "apply/resolve.h"

#include <stdlib.h>
#include <string.h>

#include "core/core.h"

iot_file_settings *iot_resolve(const iot_settings *s, const char *file)
{
    if (!s || !file || s->count == 0)
        return NULL;
    int n = 0;
    char *match = calloc((size_t)s->count, 1);
    if (!match)
        return NULL;
    for (int i = 0; i < s->count; i++) /* the one match of the file's name against the rules */
        n += match[i] = (char)iot_match_file(s->entries[i].file_pat, file);
    iot_file_settings *fs = n ? calloc(1, sizeof *fs) : NULL;
    size_t len = strlen(file) + 1;
    char *name = fs ? malloc(len) : NULL;
    iot_entry *entries = name ? malloc((size_t)n * sizeof *entries) : NULL;
    if (!entries) {
        free(match);
        free(name);
        free(fs);
        return NULL;
    }
    for (int i = 0, k = 0; i < s->count; i++)
        if (match[i])
            entries[k++] = s->entries[i]; /* in document order: the later still wins a tie */
    free(match);
    fs->name = memcpy(name, file, len);
    fs->set = (iot_settings){.count = n, .entries = entries};
    /* every entry of the set matches the file: finding in it never looks at other rules */
    for (int p = 0; p < IOT_P_COUNT; p++)
        fs->file[p] = iot_settings_find(&fs->set, p, file, NULL);
    return fs;
}

void iot_resolved_free(iot_file_settings *fs)
{
    if (!fs)
        return;
    free(fs->set.entries);
    free((char *)fs->name);
    free(fs);
}

const iot_entry *iot_resolved_for(const iot_file_settings *fs, int param, const char *dataset)
{
    if (!fs)
        return NULL;
    return dataset ? iot_settings_find(&fs->set, param, fs->name, dataset) : fs->file[param];
}

/* The files open with settings, by name: an entry per file, counted per open and dropped at
 * its last close, so any number of files can be open at once. */
typedef struct {
    char *name;
    iot_file_info info;
    int opens;
} file_entry;
static file_entry *files;
static int nfiles, capfiles;

static file_entry *find_file(const char *name)
{
    for (int i = 0; i < nfiles; i++)
        if (strcmp(files[i].name, name) == 0)
            return &files[i];
    return NULL;
}

void iot_files_remember(const char *name, const iot_file_info *info)
{
    file_entry *e = find_file(name);
    if (!e && nfiles == capfiles) {
        int cap = capfiles ? 2 * capfiles : 16;
        file_entry *grown = realloc(files, (size_t)cap * sizeof *grown);
        if (!grown) {
            iot_warn_once("files-oom", "out of memory: dataset settings of %s are not applied",
                          name);
            iot_resolved_free(info->rules);
            return;
        }
        files = grown;
        capfiles = cap;
    }
    if (!e) {
        char *copy = strdup(name);
        if (!copy) {
            iot_resolved_free(info->rules);
            return;
        }
        e = &files[nfiles++];
        *e = (file_entry){copy, *info, 0};
    }
    if (e->info.rules != info->rules) { /* opened again: the same name has the same rules */
        iot_file_settings *keep = e->info.rules ? e->info.rules : info->rules;
        iot_resolved_free(keep == info->rules ? e->info.rules : info->rules);
        e->info = *info;
        e->info.rules = keep;
    }
    e->info.mpio = info->mpio;
    e->info.leader = info->leader;
    e->info.tuned = info->tuned;
    if (e->opens > 0 || e->info.fresh < 0) /* opened again, or freed in: never fresh again */
        e->info.fresh = e->info.fresh < 0 ? -1 : 0;
    else
        e->info.fresh = info->fresh;
    e->opens++;
}

void iot_files_forget(const char *name)
{
    file_entry *e = find_file(name);
    if (!e || --e->opens > 0)
        return;
    free(e->name);
    iot_resolved_free(e->info.rules);
    *e = files[--nfiles];
}

iot_file_info iot_files_lookup(const char *name)
{
    const file_entry *e = find_file(name);
    if (e)
        return e->info;
    iot_file_info unknown = {0, iot_world_rank() == 0, NULL, 0, 0};
    return unknown;
}

void iot_files_space_freed(void)
{
    for (int i = 0; i < nfiles; i++)
        files[i].info.fresh = -1;
}
