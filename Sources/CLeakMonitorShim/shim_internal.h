// Declarations shared by the shim's C files; not part of its interface (include/leak_monitor_shim.h
// is). One section per file, in the order a process meets them: it starts and attaches
// (lifecycle.c), learns what it is (process_role.c), maps the channel (channel.c), writes its
// module map (modules.c), routes the runtime through its hooks (runtime_hooks.c), decides what to
// watch (watch.c), tracks instances (registry.c) with their stacks (stacks.c) and tests (tests.c).
// A section holds that file's types, its part of the process state and its functions, in the
// file's order; the last section (process_state.c) puts the parts together into the one state.
#ifndef LEAK_MONITOR_SHIM_INTERNAL_H
#define LEAK_MONITOR_SHIM_INTERNAL_H

#include "hash_set.h"
#include "leak_audit_wire.h"
#include "leak_monitor_shim.h"
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LA_HIDDEN __attribute__((visibility("hidden")))

/// Everything the shim keeps in this process (process_state.c, at the end of this header).
typedef struct la_process_state la_process_state;

/// The file name part of a path: what follows its last slash.
static inline const char *la_base_name(const char *path) {
    const char *slash = __builtin_strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

// lifecycle.c — start-up, attaching, and counting the processes that do not attach ----------------

/// lifecycle.c's part of the state: whether leak-audit started this process, what the process is,
/// and how far attaching got.
typedef struct la_lifecycle_state {
    bool constructed;        // atomic: the first constructor (at start-up) has run
    bool under_leak_audit;   // atomic: LEAK_AUDIT_CHANNEL was set, attached or not
    bool attach_attempted;   // the channel was mapped, or trying failed for good
    uint32_t role;           // LA_ROLE_*, decided once under the slow lock (process_role.c)
    char channel_spec[64];   // LEAK_AUDIT_CHANNEL's value, for an attach deferred until needed
    bool retainers;          // LEAK_AUDIT_WATCH asked for `retainers`: wait for heap walks
    bool exit_walk_started;  // atomic: one copy of the shim has begun the exit walk
    bool exit_walk;          // LEAK_AUDIT_WATCH asked for `exit-walk`: wait for a heap walk at exit only
    uint32_t unreachable;    // LA_UNREACHABLE_*: LEAK_AUDIT_WATCH's `unreachable` or `unreachable-default`
    bool links_monitor;      // a copy of the shim that LeakMonitor brought (not the preloaded one) constructed
} la_lifecycle_state;

/// Whether a process reports the objects nothing reaches at exit (LEAK_AUDIT_WATCH).
enum {
    LA_UNREACHABLE_NO = 0,       // neither line
    LA_UNREACHABLE_ALWAYS = 1,   // `unreachable`: every audited Swift process
    LA_UNREACHABLE_DEFAULT = 2,  // `unreachable-default`: those that link no LeakMonitor
};

/// Maps the channel now if this process is under leak-audit, is audited and has not tried yet,
/// then announces the process, writes its module map and installs the hooks. Caller holds the
/// slow lock.
LA_HIDDEN void la_lifecycle_attach_locked(la_process_state *state);

/// Defined only in the preloaded library (preload.c): in a toolchain program, takes leak-audit's
/// variables out of the environment and gives them back to the programs it starts, so that
/// SwiftPM's manifest cache, keyed on the environment, serves audited runs as it serves plain ones.
LA_HIDDEN __attribute__((weak)) void la_environment_hide(void);

// process_role.c — which processes of a run are audited -------------------------------------------

/// What a process of the run is: only LA_ROLE_AUDITED processes attach or watch.
enum {
    LA_ROLE_UNKNOWN = 0,
    /// The user's program, test bundle or anything else that is not one of the roles below.
    LA_ROLE_AUDITED,
    /// A program of the Swift toolchain itself (the driver, swift-build, swift-frontend…).
    LA_ROLE_TOOLCHAIN,
    /// A SwiftPM manifest or plugin process (PackageDescription or PackagePlugin loaded).
    LA_ROLE_PACKAGE_MANIFEST_OR_PLUGIN,
    /// Started by a toolchain program and not a test process: a macro plugin, a build tool.
    LA_ROLE_BUILD_HELPER,
    /// A test bundle started only to list its tests (`--dump-tests-json`, `--list-tests`), as
    /// `swift test --filter` does first: it runs no test.
    LA_ROLE_TEST_LISTING,
};

/// True when XCTest or Swift Testing is loaded: a test bundle.
LA_HIDDEN bool la_process_is_test_process(void);
/// What this process is (LA_ROLE_*): a toolchain program, a SwiftPM manifest or plugin, a build
/// helper, or a process to audit.
LA_HIDDEN uint32_t la_process_role(void);
/// The cached role of this process. Caller holds the slow lock.
LA_HIDDEN uint32_t la_process_role_locked(la_process_state *state);
/// True when the main program itself needs the Swift runtime (not only the preloaded library).
LA_HIDDEN bool la_main_program_is_swift(void);
/// Writes this process's blob (pid, command line, LA_PROCESS_* flags): right after it attaches.
/// Caller holds the slow lock.
LA_HIDDEN void la_process_announce_locked(la_process_state *state, uint32_t flags);

// channel.c — the writing end of the record channel -----------------------------------------------

/// channel.c's part of the state: the mapped ring. Every record reads all four fields, so they
/// sit together.
typedef struct la_channel_state {
    la_wire_header *header;
    uint8_t *slots;          // non-NULL once attached (atomic)
    uint64_t slot_capacity;
    uint64_t process_tag;    // this process's index, placed at tag bits 16..23
    pthread_mutex_t walk_lock;  // one heap-walk request at a time (zero is PTHREAD_MUTEX_INITIALIZER)
    uint32_t walk_requests;     // heap-walk requests made, under walk_lock
    // How this process tells that leak-audit is still there (la_channel_reader_status): the
    // channel's descriptor in leak-audit's /proc, and the memfd it named when the process attached.
    char reader_descriptor_path[48];
    uint64_t reader_device;
    uint64_t reader_inode;
} la_channel_state;

/// True once the record channel is mapped (inline, at the end of this header).
static inline bool la_channel_active(const la_process_state *state);
/// The mapped ring (acquire), or NULL while none is: la_channel_active's answer, for a caller that
/// writes an event after asking (la_channel_event_in).
static inline uint8_t *la_channel_mapped_slots(const la_process_state *state);
/// Sets header flag bits.
LA_HIDDEN void la_channel_set_flag(uint32_t flag);
/// The slow end of `la_channel_reserve`, out of line: waits for the reader to free the places in
/// the ring of the `count` slots from `first` (the index its atomic add returned), or, once
/// leak-audit is gone, counts the record dropped and returns UINT64_MAX.
LA_HIDDEN uint64_t la_channel_await_room(la_process_state *state, uint64_t first, uint64_t count);
/// Counts a record that will never be written (leak-audit is gone, or the record is larger than
/// the ring).
LA_HIDDEN void la_channel_drop(la_process_state *state);
/// The slot with index `index`, in the mapped ring (inline, at the end of this header).
static inline uint64_t *la_channel_slot(const la_process_state *state, uint64_t index);
/// Reserves `count` consecutive slot indices of the mapped ring (at most its capacity: the caller
/// drops a larger record) and returns the first, once the reader has freed their places;
/// UINT64_MAX when the record cannot be written. Inline (at the end of this header): every event
/// reserves one slot.
static inline uint64_t la_channel_reserve(la_process_state *state, uint64_t count);
/// Appends one event slot (alloc, dealloc or test), waiting for room in the ring; drops it, and
/// counts it, only when leak-audit is gone. `subkind` goes to tag bits 8..15; the record's time
/// word is put where its kind carries one (leak_audit_wire.h), over what the caller passed there.
/// Inline (at the end of this header): every tracked allocation and deallocation writes one, and
/// each call site's constant `kind` leaves only its own branch. `state` is la_state(), which the
/// caller has at hand.
static inline void la_channel_event(la_process_state *state, uint8_t kind, uint8_t subkind, uint32_t id, uint64_t word1,
                                    uint64_t word2, uint64_t word3);
/// Appends a blob (type, stack or module record).
LA_HIDDEN void la_channel_blob(uint8_t blob_kind, uint64_t id, uint64_t value, const void *payload, size_t length);
/// Maps the header page of the channel named `spec` (LEAK_AUDIT_CHANNEL's "<pid>:<fd>:<token>"), without
/// taking a process index; NULL when it cannot be had. The caller checks its magic and version.
LA_HIDDEN la_wire_header *la_channel_map_header(const char *spec);
/// Unmaps a header page that la_channel_map_header returned.
LA_HIDDEN void la_channel_unmap_header(la_wire_header *header);
/// LEAK_AUDIT_WATCH's lines, read from the channel the variable `spec` names (its header's
/// `watch_offset` and `watch_length`), NUL-terminated, in memory the caller frees; NULL when the
/// channel cannot be opened, is another run's, or holds no lines.
LA_HIDDEN char *la_channel_read_watch(const char *spec);
/// Maps the whole ring of the channel named `spec`, checks its layout, and takes this process's
/// index in it; true when records can be written from now on. Caller holds the slow lock.
LA_HIDDEN bool la_channel_map_locked(la_process_state *state, const char *spec);
/// Whether leak-audit is still there for an attached process (la_channel_reader_status).
enum {
    LA_READER_ALIVE = 0,
    /// Closed the channel at the end of its run, or an earlier leak-audit that does not supervise
    /// is gone: the process runs on, writing nothing more.
    LA_READER_ENDED,
    /// Gone before the end of its run (killed): the process must not run on unsupervised.
    LA_READER_DIED,
};
/// Whether leak-audit is still there: its /proc still holds the channel's descriptor, naming the
/// memfd this process mapped. A zombie leak-audit (whose descriptors are closed) or another
/// process that got its pid is gone, unlike with kill(pid, 0). A system call; never on the way of
/// a record.
LA_HIDDEN uint32_t la_channel_reader_status(la_process_state *state);
/// Ends this process (SIGKILL), with one line on standard error that says leak-audit is gone: what
/// an attached process does when la_channel_reader_status says LA_READER_DIED.
LA_HIDDEN __attribute__((noreturn)) void la_channel_reader_died(la_process_state *state);
/// Asks leak-audit to walk this process's heap (at exit, or after a test settled; at exit, with
/// `unreachable`, to report the objects nothing reaches too) and waits until it answers, at most
/// LA_WIRE_WALK_TIMEOUT_MS, and not once leak-audit is gone. Does nothing unattached.
LA_HIDDEN void la_channel_await_heap_walk(bool at_exit, bool unreachable);
/// Marks this process's walk request (LA_WALK_ENDING): it has begun to end, and a request its
/// tests' settling made is answered without a copy; the walk at exit follows.
LA_HIDDEN void la_channel_mark_ending(la_process_state *state);
/// Asks leak-audit whether the tests that finished and have not settled still have instances
/// alive that its report judges, and waits for the answer (as la_channel_await_heap_walk waits);
/// true when they do, or when it cannot tell (unattached, no answer).
LA_HIDDEN bool la_channel_finished_tests_left_alive(void);

// modules.c — the module map: which images are loaded where ---------------------------------------

#define LA_MAX_MODULES 2048

typedef struct la_known_module {
    uintptr_t start;
    uintptr_t end;
} la_known_module;

/// modules.c's part of the state: the images already written. Guarded by the slow lock.
typedef struct la_modules_state {
    la_known_module known[LA_MAX_MODULES];
    int count;
} la_modules_state;

/// True when `address` lies in an image already written. Caller holds the slow lock.
LA_HIDDEN bool la_modules_contain(uintptr_t address);
/// Writes a module record for every loaded image not written before. Caller holds the slow lock.
LA_HIDDEN void la_modules_sync(void);

// runtime_hooks.c — routing the Swift runtime's entry points through the shim's hooks -------------

#define LA_MAX_PATCHED_IMAGES 2048

typedef void *(*la_alloc_fn)(const void *metadata, size_t size, size_t align_mask);
typedef void (*la_destroy_fn)(void *object);
typedef void (*la_dealloc_partial_fn)(void *object, const void *metadata, size_t size, size_t align_mask);
typedef void (*la_set_deallocating_fn)(void *object);
typedef void (*la_task_local_push_fn)(const void *key, void *value, const void *value_type);
typedef void (*la_task_local_pop_fn)(void);

/// runtime_hooks.c's part of the state: the runtime's real entry points, which the hooks forward
/// to (set before any table entry points at a hook), and the images already routed (guarded by
/// the slow lock).
typedef struct la_hooks_state {
    bool checked;
    bool usable;  // atomic
    la_dealloc_partial_fn real_dealloc_partial;
    la_set_deallocating_fn real_set_deallocating;  // NULL: objects freed inline die unseen
    la_alloc_fn real_alloc;
    la_task_local_push_fn real_task_local_push;
    la_task_local_pop_fn real_task_local_pop;
    uint32_t patched_slot_count;  // table entries routed through a hook: 0 in a process without Swift code
    int patched_image_count;
    uintptr_t patched_images[LA_MAX_PATCHED_IMAGES];
} la_hooks_state;

/// A dynamic-section pointer as an address: glibc stores most already relocated; the vDSO's are
/// not, and anything below the load bias is still an offset.
LA_HIDDEN uintptr_t la_dynamic_pointer(const struct dl_phdr_info *info, uintptr_t value);
/// The dynamic section of a loaded image, or NULL when it has none.
LA_HIDDEN const ElfW(Dyn) *la_dynamic_section(const struct dl_phdr_info *info);
/// Routes Swift Testing's (libTesting's) task-local pushes and pops through the test-scope hooks.
/// Caller holds the slow lock. Returns false when libTesting is not loaded or has no such entries;
/// `*every_entry` says whether every push and pop entry of libTesting reaches the hooks (none left
/// to another interposer or unwritable), both kinds found.
LA_HIDDEN bool la_hooks_install_test_scopes(bool *every_entry);
/// Looks up the runtime's entry points once; false when they cannot be routed (a static
/// runtime). Caller holds the slow lock.
LA_HIDDEN bool la_hooks_check(void);
/// Routes swift_deallocPartialClassInstance (and, when allocations are watched, swift_allocObject)
/// of every loaded image through the shim's hooks, once per image. Caller holds the slow lock.
/// Returns false when they cannot be routed.
LA_HIDDEN bool la_hooks_install(void);
/// The path of the loaded image that holds `address` ("" for the main program), or NULL when none
/// does. Unlike dladdr, it looks for no symbol, which in libswiftCore costs a scan of tens of
/// thousands.
LA_HIDDEN const char *la_image_name_of(const void *address);
/// Points the destroy function of type `type_id`'s metadata, which the runtime calls when an
/// instance's last strong reference goes, at the shim's hook, which records the death and calls
/// the type's own function. Caller holds the slow lock, after the type's map entry is in. False
/// when the metadata has no destroy function or its word could not be written.
LA_HIDDEN bool la_hooks_route_destroy_locked(la_process_state *state, int32_t type_id);

// watch.c — budget patterns and the census (LEAK_AUDIT_WATCH) -------------------------------------

#define LA_ALLOC_DECISIONS (1u << 17)

/// A `budget` item of LEAK_AUDIT_WATCH.
typedef struct la_budget_pattern {
    char *pattern;
    int64_t max;
} la_budget_pattern;

/// watch.c's part of the state: what LEAK_AUDIT_WATCH asks for, and what the allocation hook
/// decided per class metadata (a type id, or -1: not tracked at allocation).
typedef struct la_watch_state {
    bool parsed;
    bool allocations;  // any budget pattern, or census here: hook swift_allocObject
    bool census;       // census every class of this process
    int budget_pattern_count;
    la_budget_pattern *budget_patterns;
    int stackless_pattern_count;
    char **stackless_patterns;  // `no-stacks` items: classes the census takes without their stacks
    uint32_t decision_count;
    la_metadata_entry decisions[LA_ALLOC_DECISIONS];
} la_watch_state;

/// Reads LEAK_AUDIT_WATCH once. Caller holds the slow lock.
LA_HIDDEN void la_watch_parse_locked(la_process_state *state);
/// Stops the allocation hook tracking `metadata`: its code claimed the type, and validate
/// counts it from now on. Caller holds the slow lock.
LA_HIDDEN void la_watch_forget_locked(la_process_state *state, const void *metadata);
/// Where `metadata` goes in the decision table: its hash from bit 40 up.
static inline uint64_t la_decision_hash(const void *metadata) { return la_hash_pointer((uintptr_t)metadata) >> 40; }
/// The cached decision for `metadata`: a type id, -1 (not tracked at allocation), or -2 when
/// there is none yet. Inline (at the end of this header): the allocation hook asks it for every
/// Swift heap object.
static inline int32_t la_watch_cached(const la_process_state *state, const void *metadata);
/// Decides whether the allocation hook tracks instances of `metadata`, a class it has no cached
/// decision for (la_watch_cached gave -2), and caches the decision: a type id, or -1.
LA_HIDDEN int32_t la_watch_decide(la_process_state *state, const void *metadata);

// registry.c — tracked types and instances --------------------------------------------------------

#define LA_MAX_TYPES 16384
#define LA_TYPE_MAP_CAPACITY (LA_MAX_TYPES * 2)

typedef struct la_type {
    const void *metadata;
    int64_t live;  // atomic
    int64_t peak;  // atomic
    int64_t max;
    char *name;
    size_t name_length;
    uint32_t budget_source;  // LA_BUDGET_*; changes only under the slow lock (atomic reads)
    uint32_t pattern_index;
    uint32_t flags;          // LA_TYPE_*
    la_destroy_fn original_destroy;  // what its metadata's destroy word held before the shim's hook
} la_type;

/// registry.c's part of the state: the types, the map from metadata to type id, and the set of
/// tracked objects.
typedef struct la_registry_state {
    int32_t type_total;  // atomic; ids below it are complete
    la_type types[LA_MAX_TYPES];
    la_metadata_entry type_map[LA_TYPE_MAP_CAPACITY];
    void *address_root;  // atomic; the tracked objects' bitmap, mapped at the first insertion (registry.c)
} la_registry_state;

/// Where `metadata` goes in the type map: the top 32 bits of its hash.
static inline uint64_t la_type_map_hash(const void *metadata) { return la_hash_pointer((uintptr_t)metadata) >> 32; }
/// The id of the type whose metadata is `metadata`, or -1; takes no lock. Inline (at the end of
/// this header): validate and every tracked death ask it.
static inline int32_t la_type_lookup_in(const la_process_state *state, const void *metadata);
/// Registers a type under the slow lock; returns its id (the existing one for known metadata), or
/// -1 when the table is full.
LA_HIDDEN int32_t la_type_register_locked(la_process_state *state, const void *metadata, const char *name,
                                          size_t name_length, int64_t max, uint32_t budget_source,
                                          uint32_t pattern_index, uint32_t flags);
/// Adds `object` to the live set and records its allocation; false when it was already tracked
/// (unless `fresh_allocation`: the allocator just returned it, so any earlier object there is gone).
LA_HIDDEN bool la_registry_track(la_process_state *state, const void *object, int32_t type_id, const void *entry_frame,
                                 bool fresh_allocation, int64_t *live_after);
/// Forgets `object`, an instance of tracked type `type_id` about to be freed, and records its
/// deallocation if it was tracked.
LA_HIDDEN void la_registry_on_dealloc(la_process_state *state, const void *object, int32_t type_id);
/// The destroy function of every tracked type's metadata (registry.c, with the registry's inline
/// paths it takes). Exported under a recognisable name, so that a copy of the shim can tell another
/// copy's hook (in a library loaded with RTLD_LOCAL, with a registry of its own) from a lazy stub.
__attribute__((visibility("default"))) void leakaudit_hook_destroy(void *object);

// stacks.c — allocation backtraces, captured and interned -----------------------------------------

/// Deepest backtrace captured per allocation.
#define LA_MAX_FRAMES LA_WIRE_MAX_FRAMES
#define LA_STACK_TABLE_CAPACITY (1u << 18)
/// How many stacks a process records before its table's pages are all made at once
/// (MADV_POPULATE_WRITE, 6 MiB). A probe reads an entry before the insert writes it, and a page
/// first read maps the kernel's zero page: each page then took two faults, the second copying it
/// and flushing the TLB of every CPU that ran one of the process's threads (GraphQL's suite, some
/// 1,500 pages: about 60 ms of its 1.08 s). A process with fewer stacks pays neither the pages
/// nor the call.
#define LA_STACK_TABLE_PREFAULT 256u
/// The table taken on when the first one is full (a large suite's: GRDB's 2,777 tests made more
/// than its 196,608 stacks), mapped only then: a process with fewer stacks pays nothing for it.
#define LA_STACK_OVERFLOW_CAPACITY (1u << 20)

typedef struct la_stack_entry {
    uint64_t hash;  // atomic; 0 = empty. Published last, so readers see id and frames.
    uint32_t id;
    uint32_t frame_count;
    const uintptr_t *frames;  // complemented (~address): a heap block no search reads as a reference
} la_stack_entry;

/// stacks.c's part of the state: every distinct stack written so far, read without locking and
/// added to under the slow lock.
typedef struct la_stacks_state {
    uint32_t total;
    /// LA_STACK_OVERFLOW_CAPACITY entries, NULL until the first table is full; atomic.
    la_stack_entry *overflow;
    la_stack_entry table[LA_STACK_TABLE_CAPACITY];
} la_stacks_state;


/// A stack this thread captured, in the table, and how it was walked: a thread that allocates in a
/// loop captures the same stack again and again, and a walk that compares it as it goes needs no
/// hash, no copy and no probe. Pointers, not a copy: initial-exec TLS of a library that is dlopen'd
/// (a test bundle) comes out of a small reserve. Entries are never removed or changed once published.
typedef struct la_recent_stack {
    const la_stack_entry *stack;
    /// The frame the walk that found it started from (NULL when that frame was not on the
    /// thread's stack), and the highest frame that walk could read.
    const void *entry_frame;
    const uintptr_t *walk_end;
} la_recent_stack;

/// Recent stacks kept per thread, one per hint (a tracked type's id) modulo their number: a loop
/// that allocates two tracked types (a request's context, and on a cache miss a cache entry) from
/// two places finds each one's stack where it left it, where one last stack for all was replaced
/// at every change of type and each change took the full capture, hash and probe. A power of two.
#define LA_RECENT_STACKS 4

/// The thread's recent stacks, by hint (la_stack_capture).
extern LA_HIDDEN __thread __attribute__((tls_model("initial-exec"))) la_recent_stack la_thread_recent_stacks[LA_RECENT_STACKS];

/// la_stack_capture's way for what its inline way does not find; `hint` as la_stack_capture's.
LA_HIDDEN uint32_t la_stack_capture_and_intern(const void *entry_frame, uint32_t hint);

/// The frame that `frame` saved, or NULL where the walk must stop: each step must move up the
/// same stack, which stops the walk at code without frame pointers (glibc's start-up frames) or
/// garbage. The next frame must lie above this one (so the walk ends), at most at `last`, and be
/// aligned (this one is: once on the stack, always on it).
static inline const uintptr_t *la_walk_next(const uintptr_t *frame, const uintptr_t *last) {
    const uintptr_t *next = (const uintptr_t *)frame[0];
    bool moves_up = next > frame && next <= last;
    return moves_up && ((uintptr_t)next & (sizeof(uintptr_t) - 1)) == 0 ? next : NULL;
}

/// Walks from `*frame` (on the thread's stack, bounded by `last`) comparing each return address
/// with `known`'s (kept complemented, stacks.c), and stops at the first difference: true when the walk is `known` to its end,
/// by the same steps as a capture (no interned frame is 0, where a stack ends), so that its id is
/// the capture's. Otherwise `*count` frames matched and `*frame` is where the walk stopped.
static inline __attribute__((always_inline)) bool la_walk_matches(const la_stack_entry *known,
                                                                  const uintptr_t **frame, const uintptr_t *last,
                                                                  uint32_t *count) {
    const uintptr_t *addresses = known->frames, *walked = *frame;
    uint32_t expected = known->frame_count, matched = 0;
    while (matched < expected && walked[1] == ~addresses[matched]) {
        matched++;
        walked = la_walk_next(walked, last);
        if (walked == NULL) break;
    }
    *frame = walked;
    *count = matched;
    // Both ended together, or matched to the deepest capture, where the walk cuts both.
    return matched == expected && (walked == NULL || walked[1] == 0 || matched == LA_MAX_FRAMES);
}

/// Captures the backtrace above `entry_frame` (the exported entry point's own frame, taken with
/// __builtin_frame_address(0), which forces that function to keep a frame pointer even where the
/// shim is built without them) and returns its stack id (LA_STACK_NONE when unavailable). `hint`
/// picks the thread's recent stack to compare with first (the tracked type's id; any number for
/// other callers): it changes what is compared, never the id. Inline where it is most often
/// asked: from the frame the recent stack's walk started from, that walk's bounds hold, and a
/// stack that matches it to its end is that stack. Anything else takes la_stack_capture_and_intern.
static inline uint32_t la_stack_capture(const void *entry_frame, uint32_t hint) {
    const la_recent_stack *recent = &la_thread_recent_stacks[hint & (LA_RECENT_STACKS - 1)];
    const la_stack_entry *previous = recent->stack;
    if (previous != NULL && entry_frame == recent->entry_frame) {
        const uintptr_t *frame = (const uintptr_t *)entry_frame;
        uint32_t count = 0;
        if (la_walk_matches(previous, &frame, recent->walk_end, &count)) return previous->id;
    }
    return la_stack_capture_and_intern(entry_frame, hint);
}

// tests.c — naming the test that allocated each tracked instance ----------------------------------

/// A test's name as leakaudit_test_intern keeps it: its length and hash are compared before its
/// bytes, so that finding a name costs no strlen of every name known (a run of 900 Swift Testing
/// tests interned each with a strlen of all those before it: 400,000 of them, 12 ms).
typedef struct la_test_name {
    char *bytes;  // NUL-terminated
    size_t length;
    uint32_t hash;  // FNV-1a of the bytes
} la_test_name;

/// Swift concurrency's entry points (Swift's calling convention): the calling thread's running
/// task, if any, and a task's 64-bit id, never reused within a process.
typedef __attribute__((swiftcall)) void *(*la_current_task_fn)(void);
typedef __attribute__((swiftcall)) uint64_t (*la_task_id_fn)(void *task);

/// tests.c's part of the state: what LEAK_AUDIT_WATCH's `tests` line asked for (watch.c parses
/// it), the test observer, and the running test.
typedef struct la_tests_state {
    bool requested;        // `tests` line: attribute allocations to tests
    bool installed;        // the observer was loaded (or found unnecessary)
    bool observer_loaded;  // the observer's install function ran in this test bundle
    bool scopes_observed;  // Swift Testing's task-local entries were routed through the hooks
    bool xctest_started;   // XCTest's run started (its observer heard the test bundle start)
    bool swift_testing_skips_observed;  // the observer sent the skipped tests of Swift Testing's report
    uint32_t grace_ms;     // `tests` line: grace after each test
    bool exiting;          // atomic: the process ends (leakaudit_test_exiting): settling walks no more
    void (*exit_hook)(void);  // atomic: the observer's end of the run, called once before the exit walk
    uint32_t current;      // atomic; LA_TEST_NONE when no test runs
    uint32_t (*resolver)(void);  // atomic
    // Swift Testing's test scopes: the probe names the calling task's running test (not a suite),
    // and is asked around each task-local push and pop of Swift Testing's own code (told when it
    // is just after a push).
    uint32_t (*scope_probe)(bool after_push);        // atomic
    void (*scope_changed)(uint32_t test, uint32_t phase);  // atomic
    // The resolver's answer is kept by each thread for the task it last asked about (la_test_tag),
    // while no push or pop the hooks route happened since: the only way a task's test changes
    // (a child task, which inherits its parent's, has an id of its own). Bumped around each.
    uint64_t scope_generation;          // atomic
    la_current_task_fn current_task;    // atomic; set once the scopes are observed
    la_task_id_fn task_id;              // set before current_task
    la_test_name *names;   // guarded by the slow lock; by id
    uint32_t count;
} la_tests_state;

/// The test to attribute an allocation on this thread to, plus one (0: none).
LA_HIDDEN uint64_t la_test_tag(la_process_state *state);
/// Loads the test observer into a test bundle's process when `tests` was requested. Caller holds
/// the slow lock.
LA_HIDDEN void la_tests_install_locked(la_process_state *state);
/// Called by the task-local hooks with the probe's answers before and after a push or pop: tells
/// the observer which test finished and which started, if any changed.
LA_HIDDEN void la_test_scope_around(uint32_t before, uint32_t after);
/// Called by the task-local hooks before and after each push or pop: the answers each thread
/// keeps for a task are asked again.
LA_HIDDEN void la_test_scopes_changed(la_process_state *state);

// process_state.c — the one state of the process, shared by every copy of the shim ----------------

/// Everything the shim keeps, in one place per process: each file's part, and the lock that
/// serialises their slow paths.
///
/// LeakMonitor is a static library, so a process can hold several copies of the shim (the
/// executable and a shared library can each link one), and the dynamic linker may bind one
/// copy's calls to another copy's exported functions. Every copy therefore finds this state
/// through one exported symbol looked up in the global scope (la_state), so that all copies
/// share one registry, one channel and one set of hooks. Zero-initialised, so it lives in .bss
/// and costs memory only for the pages touched: the small parts come first, the large tables
/// last. Its layout is private to one build of the shim; process_state.c versions the symbol.
struct la_process_state {
    pthread_mutex_t slow_lock;  // serialises every slow path; all-zero is PTHREAD_MUTEX_INITIALIZER
    la_lifecycle_state lifecycle;
    la_channel_state channel;
    la_tests_state tests;
    la_hooks_state hooks;
    la_watch_state watch;
    la_modules_state modules;
    la_registry_state registry;
    la_stacks_state stacks;
};

/// This copy's pointer to the process's one shim state, once resolved.
extern LA_HIDDEN la_process_state *la_resolved_state;
/// Finds the process's one shim state in the global scope (see la_process_state).
LA_HIDDEN la_process_state *la_state_resolve(void);

/// The process's one shim state, or NULL before this copy found it: for a hook whose common way must
/// call nothing (the caller takes its slow way, which calls la_state).
static inline la_process_state *la_state_if_resolved(void) {
    return __atomic_load_n(&la_resolved_state, __ATOMIC_ACQUIRE);
}

/// The process's one shim state; inline, since every hook and validate asks for it.
static inline la_process_state *la_state(void) {
    la_process_state *state = la_state_if_resolved();
    return __builtin_expect(state != NULL, 1) ? state : la_state_resolve();
}

// Inline hot paths ---------------------------------------------------------------------------------
//
// What every tracked allocation or deallocation runs, inline so that it costs no call: they read
// the process state, so they follow its definition.

static inline __attribute__((always_inline)) int32_t la_watch_cached(const la_process_state *state,
                                                                       const void *metadata) {
    return la_metadata_value(state->watch.decisions, LA_ALLOC_DECISIONS - 1, la_decision_hash(metadata), metadata, -2);
}

static inline __attribute__((always_inline)) int32_t la_type_lookup_in(const la_process_state *state,
                                                                         const void *metadata) {
    return la_metadata_value(state->registry.type_map, LA_TYPE_MAP_CAPACITY - 1, la_type_map_hash(metadata), metadata, -1);
}

static inline uint8_t *la_channel_mapped_slots(const la_process_state *state) {
    return __atomic_load_n(&state->channel.slots, __ATOMIC_ACQUIRE);
}

static inline bool la_channel_active(const la_process_state *state) { return la_channel_mapped_slots(state) != NULL; }

/// Slot `index` of a ring of `capacity` slots (a power of two) mapped at `slots`.
static inline __attribute__((always_inline)) uint64_t *la_ring_slot(uint8_t *slots, uint64_t capacity, uint64_t index) {
    return (uint64_t *)(slots + (index & (capacity - 1)) * LA_WIRE_SLOT_SIZE);
}

static inline __attribute__((always_inline)) uint64_t *la_channel_slot(const la_process_state *state,
                                                                         uint64_t index) {
    return la_ring_slot(state->channel.slots, state->channel.slot_capacity, index);
}

/// la_channel_reserve with the channel's header and capacity already read: `*first` is the first
/// index, and false says the record cannot be written. A bool rather than UINT64_MAX, so that an
/// inlined caller tests only what the slow ways return.
static inline __attribute__((always_inline)) bool la_channel_reserve_in(la_process_state *state, la_wire_header *header,
                                                                        uint64_t capacity, uint64_t count,
                                                                        uint64_t *first) {
    if (__builtin_expect(__atomic_load_n(&header->flags, __ATOMIC_RELAXED) & LA_FLAG_READER_GONE, 0)) {
        la_channel_drop(state);
        return false;
    }
    // A full ring means leak-audit has fallen a whole ring behind: the writer waits for it (the
    // run slows down, nothing is lost), unless leak-audit is gone, in which case nothing more is
    // written and nothing waits again.
    *first = __atomic_fetch_add(&header->next_slot, count, __ATOMIC_RELAXED);
    if (__builtin_expect(*first + count > __atomic_load_n(&header->consumed_slot, __ATOMIC_ACQUIRE) + capacity, 0)) {
        *first = la_channel_await_room(state, *first, count);
        return *first != UINT64_MAX;
    }
    return true;
}

static inline __attribute__((always_inline)) uint64_t la_channel_reserve(la_process_state *state, uint64_t count) {
    uint64_t first = UINT64_MAX;
    return la_channel_reserve_in(state, state->channel.header, state->channel.slot_capacity, count, &first)
        ? first : UINT64_MAX;
}

/// Writes an event into slot `index` of the ring mapped at `slots` (of `capacity` slots), which the
/// caller reserved: its tag last, so that a reader that sees the tag sees the words.
static inline __attribute__((always_inline)) void la_channel_write_event(la_process_state *state, uint8_t *slots,
                                                                          la_wire_header *header, uint64_t capacity,
                                                                          uint64_t index, uint8_t kind, uint8_t subkind,
                                                                          uint32_t id, uint64_t word1, uint64_t word2,
                                                                          uint64_t word3) {
    uint64_t tag = (uint64_t)kind | ((uint64_t)subkind << 8) | state->channel.process_tag | ((uint64_t)id << 32);
    // The time word (LA_TIME_*) goes where each kind has room for it, and where a reader that
    // predates time words ignores it.
    uint64_t time = LA_TIME_STAMPED | (__atomic_load_n(&header->clock_ms, __ATOMIC_RELAXED) & LA_TIME_MASK);
    if (kind == LA_SLOT_ALLOC) {
        word2 = (word2 & 0xFFFFFFFFu) | time << 32;
    } else if (kind == LA_SLOT_DEALLOC) {
        word2 = time;
    } else if (kind == LA_SLOT_TEST) {
        word1 = time;
    }
    uint64_t *slot = la_ring_slot(slots, capacity, index);
    slot[1] = word1;
    slot[2] = word2;
    slot[3] = word3;
    __atomic_store_n(&slot[0], tag, __ATOMIC_RELEASE);
}

/// la_channel_event for a channel whose ring the caller found mapped at `slots`
/// (la_channel_mapped_slots). What the write needs is read before the slot is reserved: the
/// reservation's atomic add would make the compiler read it again.
static inline __attribute__((always_inline)) void la_channel_event_in(la_process_state *state, uint8_t *slots,
                                                                       uint8_t kind, uint8_t subkind, uint32_t id,
                                                                       uint64_t word1, uint64_t word2, uint64_t word3) {
    la_wire_header *header = state->channel.header;
    uint64_t capacity = state->channel.slot_capacity;
    uint64_t index = 0;
    if (!la_channel_reserve_in(state, header, capacity, 1, &index)) return;
    la_channel_write_event(state, slots, header, capacity, index, kind, subkind, id, word1, word2, word3);
}

static inline __attribute__((always_inline)) void la_channel_event(la_process_state *state, uint8_t kind,
                                                                    uint8_t subkind, uint32_t id, uint64_t word1,
                                                                    uint64_t word2, uint64_t word3) {
    uint8_t *slots = la_channel_mapped_slots(state);
    if (slots != NULL) la_channel_event_in(state, slots, kind, subkind, id, word1, word2, word3);
}

#endif
