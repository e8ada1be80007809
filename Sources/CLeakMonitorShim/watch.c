// Watching types that never opted in: budget patterns and the census (LEAK_AUDIT_WATCH). The
// allocation hook asks, once per class metadata, whether its type matches a pattern (or the census
// takes every class here), registers it if so, and caches the answer in a lock-free table; after
// that an allocation costs one probe of that table, and a tracked one the same as a validate.
#include "shim_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void la_watch_parse_lines_locked(la_process_state *state, const char *spec);

void la_watch_parse_locked(la_process_state *state) {
    if (state->watch.parsed) return;
    state->watch.parsed = true;
    const char *spec = getenv(LA_WIRE_ENV_WATCH);
    if (spec == NULL || *spec == '\0') return;
    // The toolchain's programs, SwiftPM's manifests and plugins and build helpers are Swift
    // programs too, but not the user's: they watch nothing (process_role.c).
    if (la_process_role_locked(state) != LA_ROLE_AUDITED) return;
    // Lines too long for the environment are in the channel's file.
    char *owned = NULL;
    if (strcmp(spec, LA_WIRE_WATCH_IN_CHANNEL) == 0) {
        owned = la_channel_read_watch(state->lifecycle.channel_spec);
        if (owned == NULL) return;
        spec = owned;
    }
    la_watch_parse_lines_locked(state, spec);
    free(owned);
    state->watch.allocations = state->watch.budget_pattern_count > 0 || state->watch.census;
}

/// Parses LEAK_AUDIT_WATCH's lines (`spec`); an allocation failure ends the parse where it is.
static void la_watch_parse_lines_locked(la_process_state *state, const char *spec) {
    int capacity = 0;
    int stackless_capacity = 0;
    for (const char *line = spec; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
        if (length > 7 && strncmp(line, "budget ", 7) == 0) {
            char *after = NULL;
            errno = 0;
            long long max = strtoll(line + 7, &after, 10);
            if (errno == 0 && after != line + 7 && *after == ' ' && after < line + length) {
                if (state->watch.budget_pattern_count == capacity) {
                    capacity = capacity == 0 ? 8 : capacity * 2;
                    la_budget_pattern *grown = realloc(state->watch.budget_patterns, (size_t)capacity * sizeof *grown);
                    if (grown == NULL) return;
                    state->watch.budget_patterns = grown;
                }
                size_t pattern_length = (size_t)(line + length - (after + 1));
                char *pattern = strndup(after + 1, pattern_length);
                if (pattern == NULL) return;
                state->watch.budget_patterns[state->watch.budget_pattern_count++] =
                    (la_budget_pattern){.pattern = pattern, .max = max < 0 ? 0 : max};
            }
        } else if (length > 10 && strncmp(line, "no-stacks ", 10) == 0) {
            if (state->watch.stackless_pattern_count == stackless_capacity) {
                stackless_capacity = stackless_capacity == 0 ? 32 : stackless_capacity * 2;
                char **grown = realloc(state->watch.stackless_patterns, (size_t)stackless_capacity * sizeof *grown);
                if (grown == NULL) return;
                state->watch.stackless_patterns = grown;
            }
            char *pattern = strndup(line + 10, length - 10);
            if (pattern == NULL) return;
            state->watch.stackless_patterns[state->watch.stackless_pattern_count++] = pattern;
        } else if (length > 6 && strncmp(line, "tests ", 6) == 0) {
            long grace = strtol(line + 6, NULL, 10);
            state->tests.requested = true;
            state->tests.current = LA_TEST_NONE;
            state->tests.grace_ms = grace < 0 ? 0 : (uint32_t)grace;
        } else if (length >= 6 && strncmp(line, "census", 6) == 0) {
            state->watch.census = true;
        } else if (length == 9 && strncmp(line, "retainers", 9) == 0) {
            state->lifecycle.retainers = true;
        } else if (length == 9 && strncmp(line, "exit-walk", 9) == 0) {
            state->lifecycle.exit_walk = true;
        } else if (length == 11 && strncmp(line, "unreachable", 11) == 0) {
            state->lifecycle.unreachable = LA_UNREACHABLE_ALWAYS;
        } else if (length == 19 && strncmp(line, "unreachable-default", 19) == 0) {
            if (state->lifecycle.unreachable == LA_UNREACHABLE_NO) state->lifecycle.unreachable = LA_UNREACHABLE_DEFAULT;
        }
        line = end != NULL ? end + 1 : line + length;
    }
}

typedef struct la_type_name_pair {
    const char *data;
    uintptr_t length;
} la_type_name_pair;

/// True when class `metadata` descends from XCTest's XCTestCase: its superclass chain (class
/// metadata keeps the superclass right after the kind word) holds a class named so.
static bool la_is_xctest_case(const void *metadata, la_type_name_pair (*get_type_name)(const void *, bool)) {
    const void *superclass = ((const void *const *)metadata)[1];
    for (int depth = 0; superclass != NULL && depth < 64; depth++) {
        la_type_name_pair name = get_type_name(superclass, true);
        if (name.length == 17 && memcmp(name.data, "XCTest.XCTestCase", 17) == 0) return true;
        superclass = ((const void *const *)superclass)[1];
    }
    return false;
}

/// Decides, under the slow lock, whether allocations of `metadata` are tracked; returns the type
/// id, or -1. A type whose budget is declared in code is left to validate.
static int32_t la_watch_decide_locked(la_process_state *state, const void *metadata) {
    int32_t existing = la_type_lookup_in(state, metadata);
    if (existing >= 0) {
        uint32_t source = __atomic_load_n(&state->registry.types[existing].budget_source, __ATOMIC_ACQUIRE);
        return source == LA_BUDGET_CODE ? -1 : existing;
    }
    // Class metadata: kind 0 without Objective-C interop, an isa pointer with it. Boxes, closure
    // contexts and other heap objects have small non-zero kinds and no type name to give.
    uintptr_t kind = *(const uintptr_t *)metadata;
    if (kind != 0 && kind <= 0x7FF) return -1;
    static la_type_name_pair (*get_type_name)(const void *, bool);
    if (get_type_name == NULL) get_type_name = (la_type_name_pair(*)(const void *, bool))dlsym(RTLD_DEFAULT, "swift_getTypeName");
    if (get_type_name == NULL) return -1;
    la_type_name_pair name = get_type_name(metadata, true);
    if (name.data == NULL) return -1;
    // The standard library's classes (array and dictionary storage, string storage…) are also
    // allocated inside libswiftCore, whose calls to the runtime are direct and never reach the
    // allocation hook: their counts would be partial, so they are not watched at all.
    if (name.length > 6 && memcmp(name.data, "Swift.", 6) == 0) return -1;
    uint32_t flags = state->tests.requested && la_is_xctest_case(metadata, get_type_name) ? LA_TYPE_XCTEST_CASE : 0;
    for (int index = 0; index < state->watch.budget_pattern_count; index++) {
        const la_budget_pattern *pattern = &state->watch.budget_patterns[index];
        if (la_wire_glob_matches(pattern->pattern, name.data, name.length)) {
            return la_type_register_locked(state, metadata, name.data, name.length, pattern->max, LA_BUDGET_PATTERN,
                                           (uint32_t)index, flags);
        }
    }
    if (state->watch.census) {
        // The toolchain's classes, unless the census shows them: the report folds them into a
        // count, and shows no stack of theirs.
        for (int index = 0; index < state->watch.stackless_pattern_count; index++) {
            if (la_wire_glob_matches(state->watch.stackless_patterns[index], name.data, name.length)) {
                flags |= LA_TYPE_NO_STACKS;
                break;
            }
        }
        return la_type_register_locked(state, metadata, name.data, name.length, INT64_MAX, LA_BUDGET_NONE, 0, flags);
    }
    return -1;
}

void la_watch_forget_locked(la_process_state *state, const void *metadata) {
    la_metadata_entry *entry =
        la_metadata_find(state->watch.decisions, LA_ALLOC_DECISIONS - 1, la_decision_hash(metadata), metadata);
    // Only the decision changes: a claimed type is tracked by validate, never at allocation.
    if (entry != NULL) __atomic_store_n(&entry->type_id, -1, __ATOMIC_RELEASE);
}

static __thread __attribute__((tls_model("initial-exec"))) bool la_in_watch_slow_path;

int32_t la_watch_decide(la_process_state *state, const void *metadata) {
    // The runtime may allocate while naming a type: those allocations are not ours to judge.
    if (la_in_watch_slow_path) return -1;
    la_in_watch_slow_path = true;
    pthread_mutex_lock(&state->slow_lock);
    int32_t type_id = la_watch_cached(state, metadata);
    if (type_id == -2) {
        type_id = la_watch_decide_locked(state, metadata);
        // A full table stops caching (three quarters keeps probes short): decisions are made
        // again each time, which is slow but still right.
        if (state->watch.decision_count < LA_ALLOC_DECISIONS / 4 * 3) {
            la_metadata_insert(state->watch.decisions, LA_ALLOC_DECISIONS - 1, la_decision_hash(metadata), metadata,
                               type_id);
            state->watch.decision_count++;
        }
    }
    pthread_mutex_unlock(&state->slow_lock);
    la_in_watch_slow_path = false;
    return type_id;
}
