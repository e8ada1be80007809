// Which processes of a run are audited. `leak-audit run swift test` starts, besides the test
// bundle, the Swift toolchain's own programs (the driver, swift-build, the compilers), SwiftPM's
// manifest and plugin processes, and build helpers (macro plugins, build-tool executables). They
// are Swift programs too, and every one of them inherits the channel and the preloaded library;
// none of them is the user's code under test. They are told apart by what they are, never by
// their file names, which users share (`swift-logPackageTests.xctest`):
// - a toolchain program lives in the toolchain's bin directory: the `bin` beside the
//   `lib/swift/<os>/libswiftCore.so` this process runs on, when it holds `swift-frontend`;
// - a manifest or a plugin has SwiftPM's PackageDescription or PackagePlugin library loaded;
// - a build helper was started by a toolchain program and is not a test process (neither
//   XCTest nor Swift Testing is loaded). `swift test` starts the test bundle itself, so the
//   bundle is a test process started by a toolchain program and is audited;
// - a test bundle started with `--dump-tests-json` or `--list-tests` only lists its tests
//   (`swift test --filter` does that first) and runs none.
#include "shim_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// The directory part of `path` (no trailing slash), written into `out`; false when it has none.
static bool la_directory_of(const char *path, char *out, size_t capacity) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return false;
    size_t length = (size_t)(slash - path);
    if (length + 1 > capacity) return false;
    memcpy(out, path, length);
    out[length] = '\0';
    return true;
}

/// The toolchain's bin directory, resolved, into `out`; false when this process does not run on
/// a toolchain's runtime (a runtime copied elsewhere, say).
static bool la_toolchain_bin(char *out, size_t capacity) {
    void *runtime = dlsym(RTLD_DEFAULT, "swift_retain");
    Dl_info info;
    if (runtime == NULL || dladdr(runtime, &info) == 0 || info.dli_fname == NULL) return false;
    char library[PATH_MAX];
    if (realpath(info.dli_fname, library) == NULL) return false;
    // <prefix>/lib/swift/<os>/libswiftCore.so → <prefix>/bin
    char *cut = strstr(library, "/lib/swift/");
    if (cut == NULL || strstr(cut, "/libswiftCore.so") == NULL) return false;
    *cut = '\0';
    if (snprintf(out, capacity, "%s/bin", library) >= (int)capacity) return false;
    char compiler[PATH_MAX];
    if (snprintf(compiler, sizeof compiler, "%s/swift-frontend", out) >= (int)sizeof compiler) return false;
    return access(compiler, X_OK) == 0;
}

/// True when the program behind `/proc/<pid>/exe` lies directly in `directory`.
static bool la_program_lies_in(const char *exe_link, const char *directory) {
    char program[PATH_MAX], program_directory[PATH_MAX];
    if (realpath(exe_link, program) == NULL) return false;
    return la_directory_of(program, program_directory, sizeof program_directory)
        && strcmp(program_directory, directory) == 0;
}

static int la_find_package_api(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    bool *found = context;
    const char *name = info->dlpi_name;
    if (name == NULL) return 0;
    const char *base = strrchr(name, '/');
    base = base != NULL ? base + 1 : name;
    if (strncmp(base, "libPackageDescription.so", 24) == 0 || strncmp(base, "libPackagePlugin.so", 19) == 0) {
        *found = true;
        return 1;
    }
    return 0;
}

bool la_process_is_test_process(void) {
    return dlsym(RTLD_DEFAULT, "$s6XCTest0A17ObservationCenterC6sharedACvgZ") != NULL
        || dlsym(RTLD_DEFAULT, "$s7Testing4TestV7currentACSgvgZ") != NULL;
}

/// True when this process's arguments ask a test bundle only to list its tests.
static bool la_lists_tests_only(void) {
    char arguments[4096];
    FILE *file = fopen("/proc/self/cmdline", "re");
    if (file == NULL) return false;
    size_t length = fread(arguments, 1, sizeof arguments - 1, file);
    fclose(file);
    arguments[length] = '\0';
    // Arguments are NUL-separated; the program's own name is skipped.
    for (size_t index = strlen(arguments) + 1; index < length; index += strlen(arguments + index) + 1) {
        if (strcmp(arguments + index, "--dump-tests-json") == 0 || strcmp(arguments + index, "--list-tests") == 0) return true;
    }
    return false;
}

uint32_t la_process_role(void) {
    char toolchain_bin[PATH_MAX];
    bool has_toolchain = la_toolchain_bin(toolchain_bin, sizeof toolchain_bin);
    if (has_toolchain && la_program_lies_in("/proc/self/exe", toolchain_bin)) return LA_ROLE_TOOLCHAIN;
    bool package_api = false;
    dl_iterate_phdr(la_find_package_api, &package_api);
    if (package_api) return LA_ROLE_PACKAGE_MANIFEST_OR_PLUGIN;
    bool test_process = la_process_is_test_process();
    if (test_process && la_lists_tests_only()) return LA_ROLE_TEST_LISTING;
    if (has_toolchain && !test_process) {
        char parent[64];
        snprintf(parent, sizeof parent, "/proc/%d/exe", (int)getppid());
        if (la_program_lies_in(parent, toolchain_bin)) return LA_ROLE_BUILD_HELPER;
    }
    return LA_ROLE_AUDITED;
}

uint32_t la_process_role_locked(la_process_state *state) {
    if (state->role == LA_ROLE_UNKNOWN) state->role = la_process_role();
    return state->role;
}

static int la_find_swift_runtime_need(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    bool *needs = context;
    const ElfW(Dyn) *dynamic = NULL;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        if (info->dlpi_phdr[index].p_type == PT_DYNAMIC) {
            dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[index].p_vaddr);
        }
    }
    if (dynamic == NULL) return 1;
    const char *strings = NULL;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        if (entry->d_tag == DT_STRTAB) {
            uintptr_t value = entry->d_un.d_ptr;
            strings = (const char *)(value < info->dlpi_addr ? value + info->dlpi_addr : value);
        }
    }
    if (strings == NULL) return 1;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        if (entry->d_tag == DT_NEEDED && strncmp(strings + entry->d_un.d_val, "libswiftCore.so", 15) == 0) {
            *needs = true;
        }
    }
    return 1;  // the main program comes first: nothing else to look at
}

bool la_main_program_is_swift(void) {
    bool needs = false;
    dl_iterate_phdr(la_find_swift_runtime_need, &needs);
    return needs;
}

void la_process_announce_locked(la_process_state *state, uint32_t flags) {
    char command_line[LA_WIRE_MAX_COMMAND_LINE];
    size_t length = 0;
    FILE *file = fopen("/proc/self/cmdline", "re");
    if (file != NULL) {
        length = fread(command_line, 1, sizeof command_line, file);
        fclose(file);
    }
    // The arguments are NUL-terminated: drop the last terminator, keep the separators.
    if (length > 0 && command_line[length - 1] == '\0') length--;
    if (la_process_is_test_process()) {
        flags |= LA_PROCESS_TEST_BUNDLE;
        for (size_t index = 0; index + 1 < length; index++) {
            if ((index == 0 || command_line[index - 1] == '\0')
                && strcmp(command_line + index, "--testing-library") == 0) {
                size_t value = index + strlen("--testing-library") + 1;
                if (value < length && strncmp(command_line + value, "swift-testing", length - value) == 0
                    && strlen(command_line + value) == strlen("swift-testing")) {
                    flags |= LA_PROCESS_SWIFT_TESTING;
                }
            }
        }
        bool swift_testing = (flags & LA_PROCESS_SWIFT_TESTING) != 0;
        bool observed = swift_testing ? state->test_scopes_observed : state->tests_installed && state->test_observer_loaded;
        if (observed) flags |= LA_PROCESS_TESTS_OBSERVED;
    }
    la_channel_blob(LA_BLOB_PROCESS, (uint64_t)getpid(), flags, command_line, length);
}
