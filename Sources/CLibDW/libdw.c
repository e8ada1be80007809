#include "leakaudit_libdw.h"

#include <dlfcn.h>
#include <stdio.h>

bool leakaudit_libdw_open(const char *library, leakaudit_libdw *functions, char *failure,
                          size_t capacity) {
    // Lazy binding: libdw's own calls into libelf and libz are bound when first made.
    void *handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        const char *message = dlerror();
        snprintf(failure, capacity, "%s", message != NULL ? message : library);
        return false;
    }
#define LEAKAUDIT_LIBDW_LOAD(name)                                                                 \
    if ((functions->name = (__typeof__(name) *)dlsym(handle, #name)) == NULL) {                   \
        snprintf(failure, capacity, "%s has no function %s", library, #name);                      \
        return false;                                                                              \
    }
    LEAKAUDIT_LIBDW_FUNCTIONS(LEAKAUDIT_LIBDW_LOAD)
#undef LEAKAUDIT_LIBDW_LOAD
    return true;
}
