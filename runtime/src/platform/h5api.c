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
