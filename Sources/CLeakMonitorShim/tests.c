// Naming the test that allocated each tracked instance. XCTest runs one test at a time: its
// observer (LeakAuditTestObserver, which the preloaded copy loads into test bundles) sets the
// current test and records each test's phases. Swift Testing runs tests in parallel tasks: the
// observer registers a resolver that names the calling task's test. Either way, every allocation
// record carries the test's id, and leak-audit reads the phases to tell which instances outlived
// the test that made them.
#include "shim_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/// FNV-1a, 32 bits, of a test's name.
static uint32_t la_test_name_hash(const char *name, size_t length) {
    uint32_t hash = 2166136261u;
    for (size_t index = 0; index < length; index++) hash = (hash ^ (uint8_t)name[index]) * 16777619u;
    return hash;
}

uint32_t leakaudit_test_intern(const char *name, size_t name_length) {
    la_process_state *state = la_state();
    uint32_t hash = la_test_name_hash(name, name_length);
    pthread_mutex_lock(&state->slow_lock);
    la_lifecycle_attach_locked(state);
    uint32_t id = LA_TEST_NONE;
    for (uint32_t index = 0; index < state->tests.count; index++) {
        const la_test_name *known = &state->tests.names[index];
        if (known->hash == hash && known->length == name_length && memcmp(known->bytes, name, name_length) == 0) {
            id = index;
            break;
        }
    }
    if (id == LA_TEST_NONE && state->tests.count < LA_TEST_NONE - 1) {
        la_test_name *grown = realloc(state->tests.names, (state->tests.count + 1) * sizeof *grown);
        // All the name's bytes, even past a NUL in it: they are compared to `name_length` bytes.
        char *copy = malloc(name_length + 1);
        if (copy != NULL) {
            memcpy(copy, name, name_length);
            copy[name_length] = '\0';
        }
        if (grown != NULL && copy != NULL) {
            state->tests.names = grown;
            id = state->tests.count++;
            grown[id] = (la_test_name){.bytes = copy, .length = name_length, .hash = hash};
            la_channel_blob(LA_BLOB_TEST, id, 0, name, name_length);
        } else {
            free(copy);
            if (grown != NULL) state->tests.names = grown;
        }
    }
    pthread_mutex_unlock(&state->slow_lock);
    return id;
}

void leakaudit_test_event(uint32_t test_id, uint32_t phase) {
    if (phase == LA_TEST_SETTLED) {
        leakaudit_test_settled(&test_id, 1);
        return;
    }
    if (test_id == LA_TEST_NONE || phase < LA_TEST_STARTED || phase > LA_TEST_SKIPPED) return;
    la_channel_event(la_state(), LA_SLOT_TEST, (uint8_t)phase, test_id, 0, 0, 0);
}

void leakaudit_test_settled(const uint32_t *test_ids, size_t count) {
    if (test_ids == NULL) return;
    la_process_state *state = la_state();
    bool recorded = false;
    for (size_t index = 0; index < count; index++) {
        if (test_ids[index] == LA_TEST_NONE) continue;
        la_channel_event(state, LA_SLOT_TEST, LA_TEST_SETTLED, test_ids[index], 0, 0, 0);
        recorded = true;
    }
    // Who holds what the tests left is looked for now, while it is still there: the thread that
    // settles them waits while leak-audit copies the process (when something is left), once for
    // them all. Not once the process ends: no later test can replace what they left, and the
    // walk at exit, which follows, explains it.
    if (recorded && state->lifecycle.retainers && !__atomic_load_n(&state->tests.exiting, __ATOMIC_ACQUIRE)) {
        la_channel_await_heap_walk(false, false);
    }
}

void leakaudit_test_exiting(void) {
    la_process_state *state = la_state();
    __atomic_store_n(&state->tests.exiting, true, __ATOMIC_RELEASE);
    // A settling thread may already wait for a walk, which leak-audit holds while the last walk's
    // length has not passed: it goes on at once, without a copy.
    la_channel_mark_ending(state);
}

void leakaudit_test_set_exit_hook(void (*hook)(void)) {
    __atomic_store_n(&la_state()->tests.exit_hook, hook, __ATOMIC_RELEASE);
}

bool leakaudit_test_finished_left_alive(void) { return la_channel_finished_tests_left_alive(); }

/// Sets one of the tests' part's flags that the process record reports, once, and writes the
/// record again with it.
static void la_tests_announce_flag(la_process_state *state, bool *flag) {
    pthread_mutex_lock(&state->slow_lock);
    if (!*flag) {
        *flag = true;
        la_process_announce_locked(state, 0);
    }
    pthread_mutex_unlock(&state->slow_lock);
}

void leakaudit_test_xctest_started(void) {
    la_process_state *state = la_state();
    la_tests_announce_flag(state, &state->tests.xctest_started);
}

void leakaudit_test_swift_testing_skips_observed(void) {
    // Called at the end of the run, once the observer has sent the tests Swift Testing skipped.
    la_process_state *state = la_state();
    la_tests_announce_flag(state, &state->tests.swift_testing_skips_observed);
}

void leakaudit_test_set_current(uint32_t test_id) {
    __atomic_store_n(&la_state()->tests.current, test_id, __ATOMIC_RELEASE);
}

void leakaudit_test_set_resolver(uint32_t (*resolver)(void)) {
    __atomic_store_n(&la_state()->tests.resolver, resolver, __ATOMIC_RELEASE);
}

/// The resolver's last answer on this thread: for which task (its id), while which generation of
/// the test scopes lasted (la_tests_state.scope_generation).
typedef struct la_resolved_test {
    uint64_t task_id;
    uint64_t generation;
    uint32_t test;
    bool valid;
} la_resolved_test;

static __thread __attribute__((tls_model("initial-exec"))) la_resolved_test la_thread_resolved;

void la_test_scopes_changed(la_process_state *state) {
    __atomic_fetch_add(&state->tests.scope_generation, 1, __ATOMIC_ACQ_REL);
}

/// The resolver's answer for the calling task: asked once per task while the test scopes do not
/// change (about 1 µs each: `Test.current`, copied, and its key looked up), the same answer kept
/// by the thread until then. A thread running no task asks every time.
static uint32_t la_test_resolve(la_process_state *state, uint32_t (*resolver)(void)) {
    la_current_task_fn current_task = __atomic_load_n(&state->tests.current_task, __ATOMIC_ACQUIRE);
    void *task = current_task != NULL ? current_task() : NULL;
    if (task == NULL) return resolver();
    uint64_t id = state->tests.task_id(task);
    // Read before the resolver runs: a push or pop meanwhile leaves the answer kept under an
    // older generation, asked again next time.
    uint64_t generation = __atomic_load_n(&state->tests.scope_generation, __ATOMIC_ACQUIRE);
    la_resolved_test *resolved = &la_thread_resolved;
    if (resolved->valid && resolved->task_id == id && resolved->generation == generation) return resolved->test;
    uint32_t test = resolver();
    *resolved = (la_resolved_test){.task_id = id, .generation = generation, .test = test, .valid = true};
    return test;
}

uint64_t la_test_tag(la_process_state *state) {
    uint32_t (*resolver)(void) = __atomic_load_n(&state->tests.resolver, __ATOMIC_ACQUIRE);
    uint32_t test = resolver != NULL ? la_test_resolve(state, resolver) : LA_TEST_NONE;
    if (test == LA_TEST_NONE) test = __atomic_load_n(&state->tests.current, __ATOMIC_ACQUIRE);
    return test == LA_TEST_NONE ? 0 : (uint64_t)test + 1;
}

void la_tests_install_locked(la_process_state *state) {
    if (!state->tests.requested || state->tests.installed) return;
    state->tests.installed = true;
    // Only test bundles: XCTest or Swift Testing already loaded.
    if (dlsym(RTLD_DEFAULT, "$s6XCTest0A17ObservationCenterC6sharedACvgZ") == NULL
        && dlsym(RTLD_DEFAULT, "$s7Testing4TestV7currentACSgvgZ") == NULL) {
        return;
    }
    Dl_info info;
    if (dladdr((void *)&la_tests_install_locked, &info) == 0 || info.dli_fname == NULL) return;
    char path[PATH_MAX];
    const char *slash = strrchr(info.dli_fname, '/');
    size_t directory = slash != NULL ? (size_t)(slash - info.dli_fname) : 0;
    if (directory + sizeof "/libLeakAuditTestObserver.so" >= sizeof path) return;
    memcpy(path, info.dli_fname, directory);
    strcpy(path + directory, "/libLeakAuditTestObserver.so");
    void *observer = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (observer == NULL) return;
    void (*install)(uint32_t) = (void (*)(uint32_t))dlsym(observer, "leakaudit_observer_install");
    if (install == NULL) return;
    install(state->tests.grace_ms);
    state->tests.observer_loaded = true;
    // Swift Testing tells observers nothing: its tests are seen starting and ending through the
    // task-local scopes its runner sets up for each test (tests.c, runtime_hooks.c).
    bool every_entry = false;
    if (__atomic_load_n(&state->tests.scope_probe, __ATOMIC_ACQUIRE) != NULL && la_hooks_check()) {
        state->tests.scopes_observed = la_hooks_install_test_scopes(&every_entry);
    }
    // Only while every push and pop of Swift Testing's library is seen can an answer be kept: a
    // push through an entry another interposer holds would change a task's test unseen.
    if (state->tests.scopes_observed && every_entry) {
        la_task_id_fn task_id = (la_task_id_fn)dlsym(RTLD_DEFAULT, "swift_task_getJobTaskId");
        la_current_task_fn current_task = (la_current_task_fn)dlsym(RTLD_DEFAULT, "swift_task_getCurrent");
        if (task_id != NULL && current_task != NULL) {
            state->tests.task_id = task_id;
            __atomic_store_n(&state->tests.current_task, current_task, __ATOMIC_RELEASE);
        }
    }
}

void leakaudit_test_observe_scopes(uint32_t (*probe)(bool after_push),
                                   void (*changed)(uint32_t test_id, uint32_t phase)) {
    la_process_state *state = la_state();
    __atomic_store_n(&state->tests.scope_changed, changed, __ATOMIC_RELEASE);
    __atomic_store_n(&state->tests.scope_probe, probe, __ATOMIC_RELEASE);
}

void la_test_scope_around(uint32_t before, uint32_t after) {
    if (before == after) return;
    la_process_state *state = la_state();
    void (*changed)(uint32_t, uint32_t) = __atomic_load_n(&state->tests.scope_changed, __ATOMIC_ACQUIRE);
    if (changed == NULL) return;
    if (before != LA_TEST_NONE) changed(before, LA_TEST_FINISHED);
    if (after != LA_TEST_NONE) changed(after, LA_TEST_STARTED);
}
