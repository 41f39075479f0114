#include "h5api.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

typedef struct {
    const char *name;
    void *found;
} search_ctx;

static int self_marker;

/* Is sym defined in this library (one of our wrappers)? */
static int is_self(void *sym)
{
    Dl_info a, b;
    return dladdr(sym, &a) && dladdr(&self_marker, &b) && a.dli_fbase == b.dli_fbase;
}

static int search_object(struct dl_phdr_info *info, size_t size, void *data)
{
    search_ctx *ctx = data;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    void *handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return 0;
    void *sym = dlsym(handle, ctx->name);
    dlclose(handle);
    if (sym && !is_self(sym))
        ctx->found = sym;
    return ctx->found != NULL;
}

void *iot_find_symbol(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    if (sym)
        return sym;
    search_ctx ctx = {name, NULL};
    dl_iterate_phdr(search_object, &ctx);
    return ctx.found;
}

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

static void resolve(void)
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
    api.cls_dapl = class_id("H5P_CLS_DATASET_ACCESS_ID_g");
    api.cls_dxpl = class_id("H5P_CLS_DATASET_XFER_ID_g");
    api.parallel = api.H5Pget_fapl_mpio && api.H5Pset_dxpl_mpio && api.H5Pget_dxpl_mpio;
    api_ok = api.cls_fapl >= 0 && api.cls_dcpl >= 0 && api.cls_dapl >= 0 && api.cls_dxpl >= 0;
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
