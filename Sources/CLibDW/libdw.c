#include "leakaudit_libdw.h"

#include <dlfcn.h>
#include <stdio.h>

bool leakaudit_libdw_open(const char *library, leakaudit_libdw *functions, char *failure,
                          size_t capacity) {
    // Every symbol bound now: a library libdw needs that lacks one fails here, not by aborting the
    // process halfway through a report. Paid once, by a run that symbolizes.
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
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
