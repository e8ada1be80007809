// The preloaded shared object's own part: the shim's objects are linked in from CLeakMonitorShim
// (SwiftPM links a dependency target's object files, not an archive, so every one of them is in
// the image), and its constructor (la_lifecycle_start, in lifecycle.c) recognises this image by
// name and attaches lazily.
//
// And one thing only this image does, because only it is in the toolchain's processes: it keeps
// leak-audit's variables out of their sight. SwiftPM keys its cache of evaluated manifests on its
// whole environment, so a `swift test` that saw LD_PRELOAD and this run's LEAK_AUDIT_CHANNEL
// would compile and run every manifest of the package graph again, on every audited run (1.6 s
// for a package of 11 manifests). A toolchain program's constructor hides the variables from its
// environment (la_environment_hide), so that SwiftPM sees what a plain run sees, and every
// program it starts gets them back (the exec and posix_spawn functions below), so that the test
// bundle is audited as before.
#define _GNU_SOURCE
#include "leak_audit_preload.h"
#include "leak_audit_wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned leakaudit_preload_wire_version(void) { return LA_WIRE_VERSION; }

extern char **environ;

/// The variables a toolchain program hid, as `NAME=value`, in the order they are given back.
static char *la_hidden_variables[3];
static int la_hidden_count;
/// What `LD_PRELOAD` holds once this library is taken out of it (the user's own libraries), or
/// NULL when it held this library only.
static char *la_user_preload;

/// The C library's functions, found when this library is loaded: a child of `vfork` must not
/// call dlsym.
static int (*la_real_execve)(const char *, char *const[], char *const[]);
static int (*la_real_execvpe)(const char *, char *const[], char *const[]);
static int (*la_real_fexecve)(int, char *const[], char *const[]);
static int (*la_real_posix_spawn)(
    pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[], char *const[]);
static int (*la_real_posix_spawnp)(
    pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[], char *const[]);

__attribute__((constructor(101))) static void la_preload_find_real_functions(void) {
    la_real_execve = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
    la_real_execvpe = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execvpe");
    la_real_fexecve = (int (*)(int, char *const[], char *const[]))dlsym(RTLD_NEXT, "fexecve");
    la_real_posix_spawn = (int (*)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                   const posix_spawnattr_t *, char *const[], char *const[]))dlsym(RTLD_NEXT, "posix_spawn");
    la_real_posix_spawnp = (int (*)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                    const posix_spawnattr_t *, char *const[], char *const[]))dlsym(RTLD_NEXT, "posix_spawnp");
}

/// Saves `name=value` to be given back to the programs this one starts; false when out of memory.
static bool la_environment_save(const char *name, const char *value) {
    size_t name_length = strlen(name), value_length = strlen(value);
    char *entry = malloc(name_length + 1 + value_length + 1);
    if (entry == NULL) return false;
    memcpy(entry, name, name_length);
    entry[name_length] = '=';
    memcpy(entry + name_length + 1, value, value_length + 1);
    la_hidden_variables[la_hidden_count++] = entry;
    return true;
}

/// Called by the shim's constructor (lifecycle.c) in a toolchain program, before main and while
/// the process has one thread: takes leak-audit's variables out of the environment, and this
/// library out of LD_PRELOAD (whose other libraries stay), keeping them for the programs it starts.
__attribute__((visibility("hidden"))) void la_environment_hide(void) {
    if (la_hidden_count != 0) return;
    Dl_info info;
    const char *preload = getenv("LD_PRELOAD");
    if (preload == NULL || dladdr((const void *)&la_environment_hide, &info) == 0 || info.dli_fname == NULL) return;
    // leak-audit puts this library first: a LD_PRELOAD of another shape is left as it is, and so
    // is everything else (hiding only part of the variables would not match a plain run anyway).
    size_t length = strlen(info.dli_fname);
    if (strncmp(preload, info.dli_fname, length) != 0 || (preload[length] != '\0' && preload[length] != ':')) return;
    if (preload[length] == ':' && preload[length + 1] != '\0') {
        la_user_preload = strdup(preload + length + 1);
        if (la_user_preload == NULL) return;
    }
    const char *names[] = {LA_WIRE_ENV_CHANNEL, LA_WIRE_ENV_WATCH, "LD_PRELOAD"};
    for (size_t index = 0; index < sizeof names / sizeof names[0]; index++) {
        const char *value = getenv(names[index]);
        if (value != NULL && !la_environment_save(names[index], value)) break;
    }
    for (int index = 0; index < la_hidden_count; index++) {
        const char *entry = la_hidden_variables[index];
        char name[32];
        size_t name_length = (size_t)(strchr(entry, '=') - entry);
        if (name_length >= sizeof name) continue;
        memcpy(name, entry, name_length);
        name[name_length] = '\0';
        if (strcmp(name, "LD_PRELOAD") == 0 && la_user_preload != NULL) {
            setenv(name, la_user_preload, 1);
        } else {
            unsetenv(name);
        }
    }
}

static size_t la_environment_count(char *const envp[]) {
    size_t count = 0;
    while (envp != NULL && envp[count] != NULL) count++;
    return count;
}

/// True when `entry` is `name=…` for the name of `variable` (`NAME=value`).
static bool la_same_name(const char *entry, const char *variable) {
    size_t length = (size_t)(strchr(variable, '=') - variable);
    return strncmp(entry, variable, length + 1) == 0;
}

/// Writes into `merged` (room for `count` + la_hidden_count + 1 pointers) the environment
/// `envp` of `count` entries with the hidden variables given back: one it lacks is added, and a
/// LD_PRELOAD that is still the user's own is replaced by the one leak-audit set. A variable the
/// program set itself stays as it set it. Allocates nothing (a child of vfork may call this).
static char *const *la_environment_restored(char *const envp[], size_t count, char **merged) {
    size_t used = 0;
    bool present[3] = {false, false, false};
    for (size_t index = 0; index < count; index++) {
        const char *entry = envp[index];
        bool replaced = false;
        for (int hidden = 0; hidden < la_hidden_count; hidden++) {
            if (!la_same_name(entry, la_hidden_variables[hidden])) continue;
            present[hidden] = true;
            if (strncmp(entry, "LD_PRELOAD=", 11) == 0 && la_user_preload != NULL
                && strcmp(entry + 11, la_user_preload) == 0) {
                merged[used++] = la_hidden_variables[hidden];
                replaced = true;
            }
        }
        if (!replaced) merged[used++] = (char *)entry;
    }
    for (int hidden = 0; hidden < la_hidden_count; hidden++) {
        if (!present[hidden]) merged[used++] = la_hidden_variables[hidden];
    }
    merged[used] = NULL;
    return merged;
}

/// Runs `call` with `envp` as given, or, when this process hid leak-audit's variables, with them
/// given back (on the stack: nothing is allocated).
#define LA_WITH_ENVIRONMENT(envp, call)                                                           \
    do {                                                                                          \
        if (la_hidden_count == 0) {                                                               \
            char *const *la_environment = (envp);                                                 \
            return call;                                                                          \
        }                                                                                         \
        size_t la_count = la_environment_count(envp);                                             \
        char *la_merged[la_count + 4];                                                            \
        char *const *la_environment = la_environment_restored((envp), la_count, la_merged);       \
        return call;                                                                              \
    } while (0)

int execve(const char *path, char *const argv[], char *const envp[]) {
    if (la_real_execve == NULL) la_preload_find_real_functions();
    if (la_real_execve == NULL) return errno = ENOSYS, -1;
    LA_WITH_ENVIRONMENT(envp, la_real_execve(path, argv, la_environment));
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    if (la_real_execvpe == NULL) la_preload_find_real_functions();
    if (la_real_execvpe == NULL) return errno = ENOSYS, -1;
    LA_WITH_ENVIRONMENT(envp, la_real_execvpe(file, argv, la_environment));
}

int fexecve(int descriptor, char *const argv[], char *const envp[]) {
    if (la_real_fexecve == NULL) la_preload_find_real_functions();
    if (la_real_fexecve == NULL) return errno = ENOSYS, -1;
    LA_WITH_ENVIRONMENT(envp, la_real_fexecve(descriptor, argv, la_environment));
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    if (la_real_posix_spawn == NULL) la_preload_find_real_functions();
    if (la_real_posix_spawn == NULL) return ENOSYS;
    LA_WITH_ENVIRONMENT(envp, la_real_posix_spawn(pid, path, actions, attributes, argv, la_environment));
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    if (la_real_posix_spawnp == NULL) la_preload_find_real_functions();
    if (la_real_posix_spawnp == NULL) return ENOSYS;
    LA_WITH_ENVIRONMENT(envp, la_real_posix_spawnp(pid, file, actions, attributes, argv, la_environment));
}

/// How many arguments follow `first` up to the NULL that ends them, that included.
static size_t la_count_arguments(const char *first, va_list list) {
    size_t count = 0;
    if (first == NULL) return 0;
    while (va_arg(list, char *) != NULL) count++;
    return count + 1;
}

/// In a function called like `execl`: starts `list` and collects the arguments, from `first` to
/// the NULL that ends them, into a NULL-terminated `argv` on the stack, leaving `list` after
/// that NULL (where `execle`'s environment follows). The caller ends `list`.
#define LA_EXECL_ARGUMENTS(first, list, argv)                    \
    va_list list, la_copy;                                       \
    va_start(list, first);                                       \
    va_copy(la_copy, list);                                      \
    size_t la_count = la_count_arguments(first, la_copy);        \
    va_end(la_copy);                                             \
    char *argv[la_count + 1];                                    \
    argv[0] = (char *)(first);                                   \
    for (size_t la_index = 1; la_index <= la_count; la_index++) { \
        argv[la_index] = va_arg(list, char *);                   \
    }

int execl(const char *path, const char *first, ...) {
    LA_EXECL_ARGUMENTS(first, list, argv);
    va_end(list);
    return execve(path, argv, environ);
}

int execlp(const char *file, const char *first, ...) {
    LA_EXECL_ARGUMENTS(first, list, argv);
    va_end(list);
    return execvpe(file, argv, environ);
}

int execle(const char *path, const char *first, ...) {
    LA_EXECL_ARGUMENTS(first, list, argv);
    char *const *envp = va_arg(list, char *const *);
    va_end(list);
    return execve(path, argv, envp);
}
