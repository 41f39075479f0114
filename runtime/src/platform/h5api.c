#include "platform/h5api.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static iot_h5_api api;
static int api_ok;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static hid_t class_id(const char *global)
{
    /* RTLD_DEFAULT first: an executable that uses H5P_FILE_ACCESS has its own copy of the
     * variable (a copy relocation), and that copy is the one HDF5 writes to. */
    hid_t *id = dlsym(RTLD_DEFAULT, global);
    if (!id)
        id = iot_find_symbol(global);
    return id ? *id : H5I_INVALID_HID;
}

static int resolved; /* resolve() has run (set last, with release order) */

int iot_h5_seen(unsigned v[3], int *parallel)
{
    if (!__atomic_load_n(&resolved, __ATOMIC_ACQUIRE) || !api_ok || !api.version[0])
        return 0;
    memcpy(v, api.version, sizeof api.version);
    *parallel = api.parallel;
    return 1;
}

static void resolve_once(void);

static void resolve(void)
{
    resolve_once();
    __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

static void resolve_once(void)
{
#define IOT_H5_RESOLVE(f) api.f = (__typeof__(api.f))iot_find_symbol(#f);
    IOT_H5_FUNCS(IOT_H5_RESOLVE)
#undef IOT_H5_RESOLVE
    if (!api.H5open || !api.H5Pcreate || !api.H5Pcopy || !api.H5Pclose || !api.H5Eget_auto2 ||
        !api.H5Eset_auto2)
        return;
    if (api.H5open() < 0)
        return;
    api.cls_fapl = class_id("H5P_CLS_FILE_ACCESS_ID_g");
    api.cls_dcpl = class_id("H5P_CLS_DATASET_CREATE_ID_g");
    api.cls_fcpl = class_id("H5P_CLS_FILE_CREATE_ID_g");
    api.cls_dapl = class_id("H5P_CLS_DATASET_ACCESS_ID_g");
    api.cls_dxpl = class_id("H5P_CLS_DATASET_XFER_ID_g");
    __typeof__(&H5get_libversion) ver = (__typeof__(ver))iot_find_symbol("H5get_libversion");
    if (!ver || ver(&api.version[0], &api.version[1], &api.version[2]) < 0)
        memset(api.version, 0, sizeof api.version);
    api.parallel = api.H5Pget_fapl_mpio && api.H5Pset_dxpl_mpio && api.H5Pget_dxpl_mpio;
    api_ok = api.cls_fapl >= 0 && api.cls_dcpl >= 0 && api.cls_dapl >= 0 && api.cls_dxpl >= 0;
}

int iot_h5_at_least(unsigned major, unsigned minor, unsigned release)
{
    pthread_once(&api_once, resolve);
    const unsigned *v = api.version;
    if (v[0] != major)
        return v[0] > major;
    return v[1] != minor ? v[1] > minor : v[2] >= release;
}

int iot_h5_latest_format(void)
{
    pthread_once(&api_once, resolve);
    const unsigned *v = api.version;
    if (v[0] >= 2)
        return 5 + (int)v[1]; /* a later 2.x would add formats the same way */
    return v[1] >= 8 ? (int)(v[1] - 8) / 2 + 1 : 1;
}

/* The file drivers known by name, and where each one's id is found (resolved once). */
static const char *const driver_names[] = {"sec2",   "core",     "mpio",  "subfiling", "ioc",
                                           "stdio",  "family",   "log",   "multi",     "direct",
                                           "mirror", "splitter", "onion", "ros3",      "hdfs"};
#define IOT_N_DRIVERS (sizeof driver_names / sizeof driver_names[0])
static const hid_t *driver_var[IOT_N_DRIVERS];
static hid_t (*driver_init[IOT_N_DRIVERS])(void);
static pthread_once_t drivers_once = PTHREAD_ONCE_INIT;

static void find_drivers(void)
{
    for (size_t i = 0; i < IOT_N_DRIVERS; i++) {
        char sym[64], upper[32];
        const char *name = driver_names[i];
        size_t n = strlen(name);
        for (size_t k = 0; k <= n && k < sizeof upper; k++)
            upper[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 'a' + 'A' : name[k]);
        snprintf(sym, sizeof sym, "H5FD_%s_id_g", upper); /* 1.14 and later: set by H5open */
        driver_var[i] = iot_find_symbol(sym);
        snprintf(sym, sizeof sym, "H5FD_%s_init", name); /* 1.8 to 1.12: returns the id */
        if (!driver_var[i])
            driver_init[i] = (hid_t(*)(void))iot_find_symbol(sym);
    }
}

const char *iot_h5_driver_name(hid_t driver)
{
    if (driver < 0 || !iot_h5())
        return "unknown";
    pthread_once(&drivers_once, find_drivers);
    for (size_t i = 0; i < IOT_N_DRIVERS; i++) {
        hid_t id = driver_var[i] ? *driver_var[i] : driver_init[i] ? driver_init[i]() : -1;
        if (id >= 0 && id == driver)
            return driver_names[i];
    }
    return "other";
}

const iot_h5_api *iot_h5(void)
{
    pthread_once(&api_once, resolve);
    return api_ok ? &api : NULL;
}

const iot_h5_api *iot_h5_real(void)
{
    pthread_once(&api_once, resolve);
    return &api;
}

void iot_h5_quiet_begin(iot_h5_quiet *q)
{
    api.H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    api.H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void iot_h5_quiet_end(const iot_h5_quiet *q)
{
    api.H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

void iot_h5_failure_keep(iot_h5_failure *f)
{
    f->err = errno;
    f->stack = api.H5Eget_current_stack ? api.H5Eget_current_stack() : H5I_INVALID_HID;
}

void iot_h5_failure_give_back(iot_h5_failure *f)
{
    if (f->stack >= 0 && api.H5Eset_current_stack) /* it also closes the kept copy */
        api.H5Eset_current_stack(f->stack);
    f->stack = H5I_INVALID_HID;
    errno = f->err;
}

typedef struct {
    char *buf;
    size_t len;
} describe_ctx;

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data)
{
    describe_ctx *d = data;
    if (n == 0)
        snprintf(d->buf, d->len, "%s: %s", e->func_name ? e->func_name : "?",
                 e->desc && e->desc[0] ? e->desc : "failed");
    return 0;
}

void iot_h5_failure_describe_and_drop(iot_h5_failure *f, char *buf, size_t len)
{
    buf[0] = '\0';
    if (f->stack < 0)
        return;
    describe_ctx d = {buf, len};
    if (api.H5Ewalk2)
        api.H5Ewalk2(f->stack, H5E_WALK_UPWARD, innermost, &d);
    if (api.H5Eclose_stack)
        api.H5Eclose_stack(f->stack);
    f->stack = H5I_INVALID_HID;
    errno = f->err;
}
