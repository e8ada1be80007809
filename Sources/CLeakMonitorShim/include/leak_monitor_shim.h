// The capture side of leak-audit, linked into the audited process through LeakMonitor.
//
// It keeps the registry of tracked instances (per dynamic type: live and peak counts, and the set of
// tracked object addresses), captures raw allocation backtraces, observes a tracked type's
// deallocations by routing its metadata's destroy function (and the runtime's
// swift_deallocPartialClassInstance) through hooks, and, when leak-audit started the process,
// appends every event to the shared record channel (see leak_audit_wire.h).
// Every exported symbol starts with `leakaudit_`.
#ifndef LEAK_MONITOR_SHIM_H
#define LEAK_MONITOR_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if __has_feature(nullability)
#pragma clang assume_nonnull begin
#endif

// Types and their budgets (registry.c) ------------------------------------------------------------

/// Live and peak counts of one tracked type.
typedef struct leakaudit_type_counts {
    int64_t live;
    int64_t peak;
    int64_t max;
} leakaudit_type_counts;

/// Returns the id of the type whose metadata is `metadata`, or -1 when it is not registered yet.
int32_t leakaudit_type_lookup(const void *metadata);

/// Registers a type by its metadata, report name and budget; returns its id, or -1 when the type
/// table is full. Registering the same metadata twice returns the first id.
int32_t leakaudit_type_register(const void *metadata, const char *name, size_t name_length, int64_t max);

/// Makes the code's report name and budget the type's, replacing a pattern's or the census's.
void leakaudit_type_claim(int32_t type_id, const char *name, size_t name_length, int64_t max);

/// Number of registered types; ids run from 0 to this value minus one.
int32_t leakaudit_type_count(void);

/// Reads the counts of type `type_id`; returns false for an unknown id.
bool leakaudit_type_counts_get(int32_t type_id, leakaudit_type_counts *out);

/// Returns the report name of type `type_id` (not NUL-terminated) and its length, or NULL.
const char *_Nullable leakaudit_type_name(int32_t type_id, size_t *length);

/// Sets every type's peak to its current live count.
void leakaudit_reset_peaks(void);

// Tracking instances (registry.c) -----------------------------------------------------------------

/// Result of leakaudit_track.
typedef struct leakaudit_track_result {
    /// Instances of the type alive after this one was added.
    int64_t live;
    /// The type's budget as registered.
    int64_t max;
    /// False when the object was already tracked (validate called twice on one instance, or the
    /// allocation hook tracked it for a budget pattern).
    bool inserted;
    /// True when the type's budget came from a pattern or the census: call leakaudit_type_claim so
    /// that the budget declared in code wins.
    bool claim_needed;
} leakaudit_track_result;

/// Records that `object`, an instance of type `type_id`, passed validation: adds it to the live
/// set, captures its allocation backtrace and appends an allocation record when attached.
leakaudit_track_result leakaudit_track(const void *object, int32_t type_id);

/// Result of leakaudit_track_registered: two words, returned in registers.
typedef struct leakaudit_fast_track_result {
    /// 0 when the object is tracked (or already was) within its type's budget; the type's live
    /// count when that went over the budget; -1 when the caller must take the slow way
    /// (leakaudit_type_lookup, leakaudit_type_register, leakaudit_track): the object's type is
    /// not registered yet, or its budget came from a pattern or the census.
    int64_t live_over_budget;
    /// The object given: validate hands its rare ways the result alone, so that it keeps nothing of
    /// its own across the call.
    const void *object;
} leakaudit_fast_track_result;

/// validate's common way, in one call: leakaudit_track for `object` under the type its first word
/// (its metadata) names, when that type is registered with the budget its code declares.
leakaudit_fast_track_result leakaudit_track_registered(const void *object);

// Tests (tests.c) ---------------------------------------------------------------------------------

/// Returns the id of the test named `name` in this process, recording the name the first time;
/// LA_TEST_NONE when it cannot be recorded.
uint32_t leakaudit_test_intern(const char *name, size_t name_length);

/// Records a phase (LA_TEST_STARTED, _FINISHED, _SETTLED, _SKIPPED) of test `test_id`; a settled
/// test as leakaudit_test_settled records it.
void leakaudit_test_event(uint32_t test_id, uint32_t phase);

/// Records that the `count` tests `test_ids` settled (their grace periods over) and, when
/// leak-audit looks for who holds what tests leave (`--retainers`), waits once while it copies the
/// process: one heap walk for them all.
void leakaudit_test_settled(const uint32_t *test_ids, size_t count);

/// Says that the process is ending: the tests that settle from now on (the last ones, whose grace
/// periods it waits for at its end) are not walked as they settle. The walk at exit, which comes
/// after them, explains what they left, in one copy.
void leakaudit_test_exiting(void);

/// Sets the observer's end of the run (the rest of Swift Testing's event stream read, the last
/// tests' grace periods waited for), which the walk at exit calls first, once, so that the process
/// is copied after those, not before: a Swift Testing run ends with exit(), and this library's
/// destructor runs before the observer's atexit handler. NULL removes it.
void leakaudit_test_set_exit_hook(void (*_Nullable hook)(void));

/// True when the tests that finished and have not settled (their grace periods still run) have
/// instances alive that leak-audit's report judges, or when that cannot be told: the process then
/// waits for their grace periods before it exits; false when nothing of theirs is left to release,
/// and they can settle at once. Asks leak-audit, and waits for its answer.
bool leakaudit_test_finished_left_alive(void);

/// Says that XCTest's run started (the observer heard the test bundle start): from then on every
/// XCTest test of this process is reported, and the process says so again (its process record).
/// A bundle whose own main never starts XCTest's run is then audited as a program, not as a test
/// run in which no test ran.
void leakaudit_test_xctest_started(void);

/// Says that every test Swift Testing skipped in this process was reported (LA_TEST_SKIPPED): the
/// observer read its JUnit report whole at the end of the run. The process says so again (its
/// process record, LA_PROCESS_SKIPS_OBSERVED); a run that never ends (a crash) never says it, and
/// its skipped tests are unknown.
void leakaudit_test_swift_testing_skips_observed(void);

/// Sets the test that allocations are attributed to when no resolver names one (XCTest runs one
/// test at a time), or LA_TEST_NONE.
void leakaudit_test_set_current(uint32_t test_id);

/// Sets a function that returns the test of the calling task (Swift Testing runs tests in
/// parallel tasks), or LA_TEST_NONE; NULL removes it.
void leakaudit_test_set_resolver(uint32_t (*_Nullable resolver)(void));

/// Observes Swift Testing's tests starting and ending (it has no observer API): around every
/// task-local push and pop made by Swift Testing's own library, `probe` names the calling task's
/// running test (a test function, never a suite) or returns LA_TEST_NONE (`after_push` is true
/// when it is asked just after a push), and when the answer changes `changed` is told that the old
/// test finished (LA_TEST_FINISHED) and the new one started (LA_TEST_STARTED). Call it from the
/// test observer's install function.
void leakaudit_test_observe_scopes(uint32_t (*probe)(bool after_push),
                                   void (*changed)(uint32_t test_id, uint32_t phase));

// This process under leak-audit (lifecycle.c, channel.c, runtime_hooks.c) -------------------------

/// True when leak-audit started this process and the record channel is mapped.
bool leakaudit_is_attached(void);

/// True when leak-audit started this process tree, even if another process owns the channel.
bool leakaudit_is_under_leak_audit(void);

/// True when deallocations are observed, so live counts go down; false when the Swift runtime is
/// linked statically (or its entry points could not be found).
bool leakaudit_observes_deallocations(void);

// Allocation backtraces (stacks.c) ----------------------------------------------------------------

/// Captures the calling thread's backtrace above this call, as every tracked allocation does when
/// attached, and returns its stack id: the same id for the same return addresses (down to the
/// deepest capture), another for any other stack; LA_STACK_NONE (0xFFFFFFFF) when the table is
/// full. For tests and diagnostics.
uint32_t leakaudit_stack_capture(void);

/// leakaudit_stack_capture of a made-up stack: `count` return addresses (at most 56), in frame
/// records this function builds on its own stack. Calls from one call site build them at the same
/// addresses, as a loop's allocations do. For tests.
uint32_t leakaudit_stack_capture_synthetic(const uintptr_t *return_addresses, uint32_t count);

/// Where the process's first stack table lies (`*start`, `*length` bytes): the memory whose pages
/// are all made at once when the process holds its 257th stack. For tests.
void leakaudit_stack_table_bounds(const void *_Nullable *_Nonnull start, size_t *length);

#if __has_feature(nullability)
#pragma clang assume_nonnull end
#endif

#endif
