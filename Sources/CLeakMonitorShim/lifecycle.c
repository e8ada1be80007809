// A process's life under leak-audit: at start-up the constructor notes LEAK_AUDIT_CHANNEL and
// decides, by what the process is (process_role.c), whether it attaches now, later (when it first
// tracks something) or never; attaching maps the channel (channel.c), announces the process,
// writes its module map (modules.c) and routes the runtime through the hooks (runtime_hooks.c).
// The Swift processes that never attach are counted in the channel's header, so that the report
// can tell them apart from processes that ran no Swift code. At exit nothing needs writing: every
// record is written as it happens, so a crash loses nothing, and the channel's mapping ends with
// the process. Only when leak-audit asks who holds the instances still alive (`--retainers`) does
// an exiting process wait while leak-audit copies its memory (la_lifecycle_exit).
#include "shim_internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

bool leakaudit_is_under_leak_audit(void) {
    return __atomic_load_n(&la_state()->lifecycle.under_leak_audit, __ATOMIC_ACQUIRE);
}

void la_lifecycle_attach_locked(la_process_state *state) {
    if (state->lifecycle.attach_attempted || state->lifecycle.channel_spec[0] == '\0') return;
    state->lifecycle.attach_attempted = true;
    // Only the user's processes are audited, not the toolchain's or SwiftPM's (process_role.c).
    if (la_process_role_locked(state) != LA_ROLE_AUDITED) return;
    if (!la_channel_map_locked(state, state->lifecycle.channel_spec)) return;
    la_process_announce_locked(state, 0);
    la_modules_sync();
    if (!la_hooks_install()) la_channel_set_flag(LA_FLAG_STATIC_RUNTIME);
    la_channel_set_flag(LA_FLAG_ATTACHED);
}

/// Counts this process in the header's `watched_processes` (`skipped` false), so that leak-audit
/// can tell a watched run where no type matched from one where no Swift code ran at all, or in
/// `skipped_processes` (`skipped` true): a Swift process of SwiftPM's or a build helper, which the
/// report mentions as not audited. Maps only the header page; the process takes no index.
static void la_lifecycle_count(const la_process_state *state, bool skipped) {
    la_wire_header *header = la_channel_map_header(state->lifecycle.channel_spec);
    if (header == NULL) return;
    if (header->magic == LA_WIRE_MAGIC && header->version == LA_WIRE_VERSION) {
        __atomic_fetch_add(skipped ? &header->skipped_processes : &header->watched_processes, 1, __ATOMIC_RELEASE);
    }
    la_channel_unmap_header(header);
}

/// True when this copy of the shim is the one leak-audit preloads (libLeakAuditPreload.so) rather
/// than one linked into the program through LeakMonitor.
static bool la_is_preload_copy(void) {
    const char *image = la_image_name_of((const void *)&la_is_preload_copy);
    return image != NULL && strstr(image, "libLeakAuditPreload") != NULL;
}

/// Notes LEAK_AUDIT_CHANNEL, if set. Runs before main, single-threaded, in every copy of the shim
/// loaded at start-up (they share one state); a copy in a library loaded later finds the work
/// done and returns without locking (its constructor runs under the dynamic linker's lock, which
/// a thread holding the slow lock may be waiting for). A program linking LeakMonitor attaches at
/// once, so that it is audited even if it never validates; the preloaded copy attaches only when
/// this process first tracks something, so that the many processes a run may start (compilers
/// under `swift test`) do not each take a process index. The variables stay set, or, in the
/// toolchain's programs, hidden and given back to what they start: instrumented processes this
/// one starts attach too.
__attribute__((constructor)) static void la_lifecycle_start(void) {
    la_process_state *state = la_state();
    bool preload = la_is_preload_copy();
    // The preloaded copy's work (the test observer, the hooks) is never skipped: a LeakMonitor
    // copy in a library may have constructed first.
    if (!preload && __atomic_load_n(&state->lifecycle.constructed, __ATOMIC_ACQUIRE)) return;
    const char *value = getenv(LA_WIRE_ENV_CHANNEL);
    if (value == NULL || *value == '\0') {
        __atomic_store_n(&state->lifecycle.constructed, true, __ATOMIC_RELEASE);
        return;
    }
    // Under leak-audit no violation stops the process, whether or not it gets the channel.
    __atomic_store_n(&state->lifecycle.under_leak_audit, true, __ATOMIC_RELEASE);
    // A copy linked through LeakMonitor says so before anything can stop it here: the unreachable
    // check by default (`unreachable-default`) is for processes that link none, whether or not
    // this copy gets the lock below (the preloaded copy's hooks or reader may hold it).
    if (!preload) __atomic_store_n(&state->lifecycle.links_monitor, true, __ATOMIC_RELEASE);
    // At start-up nothing else holds the lock. A copy in a library loaded later runs this under
    // the dynamic linker's lock, which a thread holding the slow lock may be waiting for (dladdr,
    // dl_iterate_phdr): it then leaves attaching to the first type registration.
    if (pthread_mutex_trylock(&state->slow_lock) != 0) return;
    char *spec = state->lifecycle.channel_spec;
    if (spec[0] == '\0' && strlen(value) < sizeof state->lifecycle.channel_spec) strcpy(spec, value);
    uint32_t role = la_process_role_locked(state);
    la_watch_parse_locked(state);
    // SwiftPM must not see leak-audit's variables (preload.c says why); what it starts gets them.
    if (preload && role == LA_ROLE_TOOLCHAIN && la_environment_hide != NULL) la_environment_hide();
    if (role != LA_ROLE_AUDITED) {
        // Not the user's process: nothing is watched or attached. SwiftPM's and the build's Swift
        // processes are counted, so that the report can say they were left out.
        if (preload && role != LA_ROLE_TOOLCHAIN && role != LA_ROLE_TEST_LISTING
            && (role == LA_ROLE_PACKAGE_MANIFEST_OR_PLUGIN || la_main_program_is_swift())) {
            la_lifecycle_count(state, true);
        }
    } else if (!preload) {
        // The preloaded copy may have attached first (a test bundle attaches at once), announcing
        // a process that links no LeakMonitor: it is announced again, saying it does.
        bool attached_before = state->lifecycle.attach_attempted;
        la_lifecycle_attach_locked(state);
        if (attached_before && la_channel_active(state)) la_process_announce_locked(state, 0);
        la_channel_set_flag(LA_FLAG_INSTRUMENTED);
    } else {
        la_tests_install_locked(state);
        if (state->tests.requested && la_process_is_test_process()) {
            // A test bundle attaches at once, so that the report lists it and its test count even
            // when it runs no test or tracks nothing.
            la_lifecycle_attach_locked(state);
        } else if (state->watch.allocations && la_hooks_install() && state->hooks.patched_slot_count > 0) {
            // Allocations are watched from the start; the channel comes when something is tracked.
            // (The preloaded library brings libswiftCore into every process, so only an image that
            // calls the runtime, and so had an entry routed, makes this a Swift process.)
            la_lifecycle_count(state, false);
        }
    }
    // Only the preloaded copy defers: a copy linked through LeakMonitor must still attach.
    if (!preload) __atomic_store_n(&state->lifecycle.constructed, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&state->slow_lock);
}

/// At exit, after the program's atexit handlers and before the process's memory is gone: when
/// leak-audit asked for retaining paths or for the objects nothing reaches, waits while it stops
/// this process's threads and copies its memory (channel.c). Swift runs no destructors for globals
/// at exit, so the heap is still as the program left it. Runs in every copy of the shim; the first
/// does the work. A Swift process asked for its unreachable objects that has not attached yet (it
/// tracked nothing) attaches now.
__attribute__((destructor)) static void la_lifecycle_exit(void) {
    la_process_state *state = la_state();
    uint32_t unreachable = state->lifecycle.unreachable;
    bool checks_unreachable = unreachable == LA_UNREACHABLE_ALWAYS
                              || (unreachable == LA_UNREACHABLE_DEFAULT
                                  && !__atomic_load_n(&state->lifecycle.links_monitor, __ATOMIC_ACQUIRE));
    if (!state->lifecycle.retainers && !state->lifecycle.exit_walk && !checks_unreachable) return;
    if (__atomic_exchange_n(&state->lifecycle.exit_walk_started, true, __ATOMIC_ACQ_REL)) return;
    // The test observer's end of the run first (it says the process ends, leakaudit_test_exiting):
    // the copy is of the process after its last tests' grace periods, with what work they left in
    // flight let go, and those tests are walked in it rather than each as it settles.
    void (*end_of_run)(void) = __atomic_exchange_n(&state->tests.exit_hook, NULL, __ATOMIC_ACQ_REL);
    if (end_of_run != NULL) end_of_run();
    if (checks_unreachable && !la_channel_active(state)) {
        pthread_mutex_lock(&state->slow_lock);
        if (la_main_program_is_swift()) la_lifecycle_attach_locked(state);
        pthread_mutex_unlock(&state->slow_lock);
    }
    la_channel_await_heap_walk(true, checks_unreachable);
}
