/* Symbols found at run time: the next definition after this library, or one in any loaded
 * object. */
#include "platform/symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

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
