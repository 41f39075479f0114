/* Injected collective-buffering "disable" hints withdrawn at a handle's ordered calls
 * (ordered.h). */
#include "apply/ordered.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture.h"
#include "core/core.h"

#define HANDLES 256 /* open handles with such a hint at once (few programs have any) */

static const char *const keys[2] = {"romio_cb_write", "romio_cb_read"};
static const char *const words[4] = {"automatic", "automatic", "enable", "disable"};

typedef struct {
    MPI_File fh;
    int risk; /* bit k: keys[k]=disable injected; bits 2+2k: the application's own (words) */
    char name[160];
} handle;

static handle open_handles[HANDLES];
static int used; /* slots in use, for the common case of none: one branch per call */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int word_code(const char *v)
{
    for (int i = 1; i < 4; i++)
        if (strcmp(v, words[i]) == 0)
            return i;
    return 0;
}

static int risk_of(const iot_mpiio_hints *h, MPI_Info app)
{
    int risk = 0;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < h->n; i++) {
            const iot_entry *e = h->hint[i];
            int gone =
                h->withdrawn && (!h->withdrawn_one || strcmp(e->name, h->withdrawn_one) == 0);
            if (!gone && strcmp(e->name, keys[k]) == 0 && strcmp(e->value.text, "disable") == 0)
                risk |= 1 << k;
        }
        char v[32];
        int flag = 0;
        if ((risk >> k & 1) && app != MPI_INFO_NULL &&
            MPI_Info_get(app, keys[k], (int)sizeof v - 1, v, &flag) == MPI_SUCCESS && flag)
            risk |= word_code(v) << (2 + 2 * k);
    }
    return risk;
}

void iot_ordered_opened(MPI_File fh, const char *filename, const iot_mpiio_hints *h, MPI_Info app)
{
    int risk = filename ? risk_of(h, app) : 0;
    if (!risk)
        return;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < HANDLES && open_handles[i].risk)
        i++;
    if (i < HANDLES) {
        open_handles[i] = (handle){.fh = fh, .risk = risk};
        snprintf(open_handles[i].name, sizeof open_handles[i].name, "%s", filename);
        __atomic_add_fetch(&used, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&lock);
    if (i == HANDLES) /* cannot be followed: the hint must not stay on an ordered call */
        iot_warn_once("ordered-full",
                      "more than %d files open with romio_cb_write or "
                      "romio_cb_read=disable: %s is not followed at ordered calls",
                      HANDLES, filename);
}

/* The slot of fh, or -1 (lock held). */
static int slot_of(MPI_File fh)
{
    for (int i = 0; i < HANDLES; i++)
        if (open_handles[i].risk && open_handles[i].fh == fh)
            return i;
    return -1;
}

void iot_ordered_call(MPI_File fh, int is_write)
{
    if (!__atomic_load_n(&used, __ATOMIC_RELAXED))
        return;
    int k = is_write ? 0 : 1;
    pthread_mutex_lock(&lock);
    int i = slot_of(fh), risk = i >= 0 ? open_handles[i].risk : 0;
    char name[sizeof open_handles[0].name] = "";
    if (risk >> k & 1) {
        memcpy(name, open_handles[i].name, sizeof name);
        open_handles[i].risk &= ~(1 << k);
        if (!(open_handles[i].risk & 3)) { /* nothing left to withdraw */
            open_handles[i].risk = 0;
            __atomic_sub_fetch(&used, 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&lock);
    if (!(risk >> k & 1))
        return;
    const char *own = words[risk >> (2 + 2 * k) & 3];
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, keys[k], own);
    PMPI_File_set_info(fh, info); /* collective: every rank of the file is in this call */
    MPI_Info_free(&info);
    const char *why = is_write ? "MPI_File_write_ordered: ROMIO orders the records wrongly with "
                                 "collective buffering disabled"
                               : "MPI_File_read_ordered: ROMIO reads the wrong records with "
                                 "collective buffering disabled";
    iot_rec_withdraw(name, IOT_L_MPIIO, keys[k], "disable", why);
    iot_warn_once(is_write ? "ordered-write" : "ordered-read",
                  "%s: %s=disable withdrawn at the first ordered call (%s); %s=%s again", name,
                  keys[k], why, keys[k], own);
}

void iot_ordered_closing(MPI_File fh)
{
    if (!__atomic_load_n(&used, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    int i = slot_of(fh);
    if (i >= 0) {
        open_handles[i].risk = 0;
        __atomic_sub_fetch(&used, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&lock);
}
