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
    const char *image = runtime != NULL ? la_image_name_of(runtime) : NULL;
    char library[PATH_MAX];
    if (image == NULL || realpath(image, library) == NULL) return false;
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
    if (info->dlpi_name == NULL) return 0;
    const char *base = la_base_name(info->dlpi_name);
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

/// This process's command line, its arguments separated by NUL bytes, into `out` (at most
/// `capacity - 1` bytes, cut there, and always NUL-terminated); returns its length without the
/// last argument's terminator. 0 when /proc cannot tell.
static size_t la_command_line(char *out, size_t capacity) {
    size_t length = 0;
    FILE *file = fopen("/proc/self/cmdline", "re");
    if (file != NULL) {
        length = fread(out, 1, capacity - 1, file);
        fclose(file);
    }
    if (length > 0 && out[length - 1] == '\0') length--;
    out[length] = '\0';
    return length;
}

/// The argument after `argument` in a command line of `length` bytes, or NULL after the last.
static const char *la_next_argument(const char *arguments, size_t length, const char *argument) {
    const char *next = argument + strlen(argument) + 1;
    return next <= arguments + length ? next : NULL;
}

/// True when this process's arguments ask a test bundle only to list its tests.
static bool la_lists_tests_only(void) {
    char arguments[4096];
    size_t length = la_command_line(arguments, sizeof arguments);
    // The program's own name is skipped.
    for (const char *argument = la_next_argument(arguments, length, arguments); argument != NULL;
         argument = la_next_argument(arguments, length, argument)) {
        if (strcmp(argument, "--dump-tests-json") == 0 || strcmp(argument, "--list-tests") == 0) return true;
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
    if (state->lifecycle.role == LA_ROLE_UNKNOWN) state->lifecycle.role = la_process_role();
    return state->lifecycle.role;
}

static int la_find_swift_runtime_need(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    bool *needs = context;
    const ElfW(Dyn) *dynamic = la_dynamic_section(info);
    if (dynamic == NULL) return 1;
    const char *strings = NULL;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        if (entry->d_tag == DT_STRTAB) strings = (const char *)la_dynamic_pointer(info, entry->d_un.d_ptr);
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
    char command_line[LA_WIRE_MAX_COMMAND_LINE + 1];
    size_t length = la_command_line(command_line, sizeof command_line);
    if (la_process_is_test_process()) {
        flags |= LA_PROCESS_TEST_BUNDLE;
        for (const char *argument = command_line; argument != NULL;
             argument = la_next_argument(command_line, length, argument)) {
            const char *value = la_next_argument(command_line, length, argument);
            if (strcmp(argument, "--testing-library") == 0 && value != NULL && strcmp(value, "swift-testing") == 0) {
                flags |= LA_PROCESS_SWIFT_TESTING;
            }
        }
        bool swift_testing = (flags & LA_PROCESS_SWIFT_TESTING) != 0;
        bool observed =
            swift_testing ? state->tests.scopes_observed
                          : state->tests.installed && state->tests.observer_loaded && state->tests.xctest_started;
        if (observed) flags |= LA_PROCESS_TESTS_OBSERVED;
        if (observed && (!swift_testing || state->tests.swift_testing_skips_observed)) flags |= LA_PROCESS_SKIPS_OBSERVED;
    }
    if (__atomic_load_n(&state->lifecycle.links_monitor, __ATOMIC_ACQUIRE)) flags |= LA_PROCESS_LINKS_MONITOR;
    // The parent's pid in the high half: a test bundle that another test bundle of the run started
    // (a crash test's or an exit test's child) runs tests its parent counts already.
    uint64_t value = (uint64_t)flags | ((uint64_t)(uint32_t)getppid() << 32);
    la_channel_blob(LA_BLOB_PROCESS, (uint64_t)getpid(), value, command_line, length);
}
