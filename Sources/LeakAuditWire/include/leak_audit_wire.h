// The record stream between an audited process and `leak-audit`, version 1.
//
// leak-audit creates an anonymous shared file (memfd), sizes it, and names it to the target in the
// environment variable LEAK_AUDIT_CHANNEL. The target maps it and appends records
// with no system call per record; because the mapping is shared, every committed record survives
// the target trapping, aborting or being killed. docs/record-format.md describes the layout.
//
// Layout: a header of LA_WIRE_HEADER_SIZE bytes, then a ring of `slot_capacity` 32-byte slots
// (a power of two). A writer reserves consecutive slot indices with one atomic add on `next_slot`,
// waits until the reader has consumed the ring lap it would overwrite, fills the slots at
// index % slot_capacity, and commits each by storing its first word (the tag) last, with release
// ordering. The reader zeroes each slot's tag once decoded and publishes its progress in
// `consumed_slot`, so pages are reused rather than faulted in fresh. A slot whose tag's kind (its
// low 8 bits) is zero is reserved but not yet written (or was torn by the target's death); a blob's
// writer marks its slots with its process index meanwhile (LA_RESERVATION_MARK). The slot index is
// the global order of events.
#ifndef LEAK_AUDIT_WIRE_H
#define LEAK_AUDIT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LA_WIRE_MAGIC 0x3154494455414B4CULL /* "LKAUDIT1" little-endian */
#define LA_WIRE_VERSION 1u
#define LA_WIRE_HEADER_SIZE 4096u
#define LA_WIRE_SLOT_SIZE 32u
/// "<leak-audit's pid>:<descriptor>:<run token in hex>": the target opens /proc/<pid>/fd/<descriptor>
/// (and checks the header's run_token), which works
/// through intermediate processes that close inherited descriptors (`swift test` does) and only
/// for the same user's processes; the descriptor itself is close-on-exec, never inherited.
#define LA_WIRE_ENV_CHANNEL "LEAK_AUDIT_CHANNEL"

/// Header flags, set by the target.
enum {
    /// The shim mapped the channel and wrote its module map.
    LA_FLAG_ATTACHED = 1u << 0,
    /// Records were dropped: the reader was gone, or one record was larger than the ring.
    LA_FLAG_OVERFLOW = 1u << 1,
    /// The Swift runtime is linked statically, so deallocations cannot be observed.
    LA_FLAG_STATIC_RUNTIME = 1u << 2,
    /// More distinct stacks than the stack table holds; later allocations carry LA_STACK_NONE.
    LA_FLAG_STACK_TABLE_FULL = 1u << 3,
    /// More distinct types than the type table holds; later types are not tracked.
    LA_FLAG_TYPE_TABLE_FULL = 1u << 4,
    /// The ring was full and leak-audit had gone: nothing more is written.
    LA_FLAG_READER_GONE = 1u << 5,
    /// More than LA_WIRE_MAX_PROCESSES processes tried to attach; the later ones were not audited.
    LA_FLAG_TOO_MANY_PROCESSES = 1u << 6,
    /// A process linking LeakMonitor attached (not only the preloaded library, which attaches to
    /// name tests even where nothing is tracked).
    LA_FLAG_INSTRUMENTED = 1u << 7,
    /// A shim found this channel's magic but another LA_WIRE_VERSION, and did not attach. The
    /// magic, version and flags fields keep their offsets in every version so that this works.
    LA_FLAG_VERSION_MISMATCH = 1u << 31,
};

/// The channel's first page. Fields marked atomic are accessed with __atomic builtins.
typedef struct la_wire_header {
    uint64_t magic;          ///< LA_WIRE_MAGIC, written by leak-audit.
    uint32_t version;        ///< LA_WIRE_VERSION, written by leak-audit.
    uint32_t slot_size;      ///< LA_WIRE_SLOT_SIZE, written by leak-audit.
    uint64_t slot_capacity;  ///< Slots in the ring (a power of two), written by leak-audit.
    uint64_t next_slot;      ///< atomic: slot indices reserved so far by the target.
    uint32_t flags;          ///< atomic: LA_FLAG_* bits.
    int32_t attached_pid;    ///< atomic: the pid of the first process that attached, 0 before.
    uint64_t dropped;        ///< atomic: records that were not written.
    uint64_t consumed_slot;  ///< atomic: every index below it is decoded; written by leak-audit.
    int32_t reader_pid;      ///< leak-audit's pid, so that a writer waiting on a full ring can
                             ///< tell a slow reader from a dead one.
    uint32_t attached_processes;  ///< atomic: processes that attached; each takes the next index.
    uint32_t watched_processes;   ///< atomic: Swift processes whose allocations the preloaded
                                  ///< library watched (LEAK_AUDIT_WATCH), attached or not.
    uint32_t skipped_processes;   ///< atomic: Swift processes of the run that are not the user's
                                  ///< (SwiftPM manifests and plugins, build helpers) and were
                                  ///< therefore neither watched nor attached.
    uint32_t forked_processes;    ///< atomic: children an attached process forked without exec;
                                  ///< each stopped writing (its records would be its parent's).
    uint64_t run_token;           ///< A random number of this run, written by leak-audit before
                                  ///< the magic; LEAK_AUDIT_CHANNEL carries it, and a writer whose
                                  ///< variable names another (left from another run) stays out.
    uint64_t clock_ms;            ///< atomic: milliseconds since leak-audit created the channel, as
                                  ///< leak-audit last published them (each time it reads the ring:
                                  ///< at least every few milliseconds). Writers copy it into the
                                  ///< time word of their records (LA_TIME_*).
    uint32_t reader_lifecycle;    ///< atomic: LA_READER_* bits, written by leak-audit.
    uint32_t reserved1;           ///< zero.
    uint64_t watch_offset;        ///< Where LEAK_AUDIT_WATCH's lines lie in the channel's file when
                                  ///< the variable is LA_WIRE_WATCH_IN_CHANNEL (after the ring);
                                  ///< 0 otherwise. Written by leak-audit before `magic`.
    uint64_t watch_length;        ///< Their length in bytes; written by leak-audit before `magic`.
} la_wire_header;

/// Bits of la_wire_header.reader_lifecycle: what an attached process does when leak-audit is gone.
enum {
    /// Set before the magic by a leak-audit that marks its normal end (LA_READER_CLOSED): an
    /// attached process that finds it gone without that mark ends itself, rather than run on
    /// unsupervised. Without this bit (an earlier leak-audit) a process only stops writing.
    LA_READER_SUPERVISES = 1u << 0,
    /// leak-audit stopped reading on purpose (the run is over): a process still attached runs on,
    /// detached, and writes nothing more. Set before leak-audit closes the channel.
    LA_READER_CLOSED = 1u << 1,
};

/// How often an attached process checks that leak-audit is still there, when leak-audit
/// supervises it (a thread of the shim's; the waits on leak-audit check as they wait).
#define LA_WIRE_READER_CHECK_MS 100u

/// A record's time word: LA_TIME_STAMPED, and in the bits of LA_TIME_MASK the low bits of the
/// header's `clock_ms` when the record was written. A word without LA_TIME_STAMPED (a writer that
/// predates time words) says nothing of time. Where each slot kind carries it: see LA_SLOT_*.
#define LA_TIME_STAMPED 0x80000000u
#define LA_TIME_MASK 0x7FFFFFFFu

/// Processes of one run that can attach: the index is 8 bits of a tag.
#define LA_WIRE_MAX_PROCESSES 256u

/// A process's heap walks (`--retainers`), one handshake per process index, at
/// LA_WIRE_WALKS_OFFSET in the header page. A process asks when it is about to exit, and (naming
/// tests) each time a test settles: it stores the request's number (1, 2, …; with
/// LA_WALK_AT_EXIT set when it exits) in `requested` and waits on `answered` (a shared futex
/// word) until it holds that number, while leak-audit stops its threads and copies its memory (or
/// decides that nothing needs it). One request at a time per process. A process waits at most
/// LA_WIRE_WALK_TIMEOUT_MS per request, and not at all once leak-audit is gone (or a zombie, or
/// its pid another process's: the writer tests the channel's descriptor in leak-audit's /proc).
typedef struct la_wire_walk {
    uint32_t requested;  ///< atomic: the request's number, | LA_WALK_AT_EXIT (| LA_WALK_UNREACHABLE), or
                         ///< | LA_WALK_GRACE_QUESTION (| LA_WALK_ENDING); written by the target.
    uint32_t answered;   ///< atomic futex word: the number of the last request answered (with
                         ///< LA_WALK_GRACE_NEEDED for a question whose answer is yes).
} la_wire_walk;

/// Where the walk handshakes start in the header page: LA_WIRE_MAX_PROCESSES of them fill its
/// second half.
#define LA_WIRE_WALKS_OFFSET 2048u
/// The longest a process waits for leak-audit to copy its memory.
#define LA_WIRE_WALK_TIMEOUT_MS 30000u
/// The longest a writer waits for room in the ring while leak-audit, alive, retires nothing
/// (consumed_slot does not move): then it drops the record it reserved for (counted in `dropped`),
/// and the slots it reserved stay empty. leak-audit abandons a reservation left empty after a
/// second when others wait behind it, so only a reader that stopped reading makes a writer wait so
/// long.
#define LA_WIRE_ROOM_TIMEOUT_MS 120000u
/// The most rings a writer's reservation can be ahead of `consumed_slot`: one a waiting writer
/// thread, and no run has this many. A writer whose reservation is further ahead (the header's
/// `next_slot` or `consumed_slot` written over) drops its record at once instead of waiting.
#define LA_WIRE_MOST_RINGS_AHEAD ((uint64_t)1 << 32)

/// Set in la_wire_walk.requested when the process asks at exit; the request's number is in the
/// bits below LA_WALK_ENDING.
#define LA_WALK_AT_EXIT 0x80000000u
/// Set with LA_WALK_AT_EXIT when the process asks for the objects nothing reaches to be reported
/// (LEAK_AUDIT_WATCH's `unreachable`, or `unreachable-default` in a process that links no
/// LeakMonitor).
#define LA_WALK_UNREACHABLE 0x40000000u
/// Set alone in la_wire_walk.requested (no LA_WALK_AT_EXIT) when the process asks no walk but a
/// question, at its exit or at the end of XCTest's run: do the tests that finished and have not
/// settled (their grace periods run) still have instances alive that the report judges? leak-audit
/// answers with the request's number in `answered`, with LA_WALK_GRACE_NEEDED set when they do
/// (the process then waits for their grace periods) and clear when they do not (it settles them
/// at once). The request's number is in the bits below LA_WALK_ENDING.
#define LA_WALK_GRACE_QUESTION 0x20000000u
/// Set in la_wire_walk.requested over a request that tests settling made (no LA_WALK_AT_EXIT, no
/// LA_WALK_GRACE_QUESTION), once the process has begun to end: the walk at exit follows and
/// explains what those tests left, so leak-audit answers the request without copying the process
/// (one held until the last walk's length has passed goes on at once). The request's number is in
/// the bits below this one.
#define LA_WALK_ENDING 0x10000000u
/// Set in la_wire_walk.answered, with the number of an LA_WALK_GRACE_QUESTION request: the tests
/// still have instances alive, and their grace periods are waited for.
#define LA_WALK_GRACE_NEEDED 0x80000000u

/// The walk handshake of process `index` in the header page at `header`.
static inline la_wire_walk *la_wire_walk_slot(void *header, uint32_t index) {
    return (la_wire_walk *)((uint8_t *)header + LA_WIRE_WALKS_OFFSET) + index;
}

/// Slot kinds: the low 8 bits of a slot's tag. Zero means "not committed".
enum {
    LA_SLOT_EMPTY = 0,
    /// An instance passed validate: tag[16..23] process index; tag[32..63] type id;
    /// w1 object address; w2[0..31] stack id, w2[32..63] time word; w3 the id of the test running
    /// when it was allocated, plus one (0: none).
    LA_SLOT_ALLOC = 1,
    /// A tracked instance was deallocated: tag[16..23] process index; tag[32..63] type id;
    /// w1 object address; w2 time word.
    LA_SLOT_DEALLOC = 2,
    /// First slot of a blob: tag[8..15] blob kind, tag[16..23] process index, tag[32..63] slots in
    /// the blob (head included); w1 blob id; w2 payload length in bytes; w3 blob-specific value.
    /// Type, stack and module ids, and addresses, are per process.
    LA_SLOT_BLOB_HEAD = 3,
    /// A following slot of a blob: tag[8..31] its index within the blob (1-based);
    /// w1..w3 carry 24 payload bytes.
    LA_SLOT_BLOB_CONT = 4,
    /// A test changed phase: tag[8..15] LA_TEST_*; tag[16..23] process index; tag[32..63] test id;
    /// w1 time word.
    LA_SLOT_TEST = 5,
};

/// A reserved slot not committed yet, marked by its writer once it had room: tag[0..7]
/// LA_SLOT_EMPTY (still not committed), tag[8..15] this value, tag[16..23] the writer's process
/// index, tag[32..63] the slot's index, low 32 bits. A blob's writer marks each of its slots before
/// it writes any (a record of one slot is written within a few stores of its reservation and is
/// not marked), so that leak-audit gives the slots of a writer that died mid-blob up as soon as its
/// process has ended, while other processes write on. What a target writes here is only a hint.
#define LA_RESERVATION_MARK 0x52u

/// Test phases carried by LA_SLOT_TEST.
enum {
    /// The test started.
    LA_TEST_STARTED = 1,
    /// The test finished.
    LA_TEST_FINISHED = 2,
    /// The test's grace period after it finished ended: what it allocated and is still alive now
    /// outlived it.
    LA_TEST_SETTLED = 3,
    /// The test was skipped: Swift Testing skipped it without running it (a `.disabled` trait, a
    /// condition that was false), or an XCTest test ended by throwing XCTSkip. Sent before its
    /// LA_TEST_FINISHED, if any.
    LA_TEST_SKIPPED = 4,
};

/// Test id meaning "no test".
#define LA_TEST_NONE 0xFFFFFFFFu

/// Blob kinds, carried in a blob head's tag.
enum {
    /// A tracked type: id = type id; w3 = max (int64); payload = la_wire_type followed by the UTF-8
    /// report name. A type may be defined again with the same id when its budget's source changes
    /// (a pattern's type whose code then calls validate): the later definition wins.
    LA_BLOB_TYPE = 1,
    /// An allocation stack: id = stack id; w3 = 1 if truncated; payload = uint64 return
    /// addresses, innermost first.
    LA_BLOB_STACK = 2,
    /// A loaded ELF image: id = module index; w3 = load bias; payload = la_wire_module followed
    /// by the build-id bytes and the UTF-8 path.
    LA_BLOB_MODULE = 3,
    /// A test of this process: id = test id; payload = its UTF-8 name (`Module.Class/testName`
    /// for XCTest, the test's ID for Swift Testing).
    LA_BLOB_TEST = 4,
    /// The process that took this index, written when it attaches: id = its pid; w3 = LA_PROCESS_*
    /// flags; payload = its command line, arguments separated by NUL bytes (at most
    /// LA_WIRE_MAX_COMMAND_LINE bytes, cut there).
    LA_BLOB_PROCESS = 5,
};

/// Flags of a process blob.
enum {
    /// XCTest or Swift Testing is loaded: a test bundle.
    LA_PROCESS_TEST_BUNDLE = 1u << 0,
    /// A test bundle started to run Swift Testing's tests (`--testing-library swift-testing`), not
    /// XCTest's.
    LA_PROCESS_SWIFT_TESTING = 1u << 1,
    /// Every test this process runs is reported with LA_SLOT_TEST phases (XCTest's observer heard
    /// its run start, or Swift Testing's test scopes are observed), so a test count of 0 means no
    /// test ran.
    LA_PROCESS_TESTS_OBSERVED = 1u << 2,
    /// Every test this process skips is reported with LA_TEST_SKIPPED (XCTest's tests are whenever
    /// its run is observed; Swift Testing's when the observer reads the run's event stream), so a
    /// skipped count of 0 means none was skipped.
    LA_PROCESS_SKIPS_OBSERVED = 1u << 3,
    /// The process links LeakMonitor (not only the preloaded library): the unreachable check by
    /// default (`unreachable-default`) is not for it. A process whose preloaded library attached
    /// first says so again once LeakMonitor's copy has constructed.
    LA_PROCESS_LINKS_MONITOR = 1u << 4,
};

/// Most return addresses a stack blob carries (LeakMonitor's capture stops there): a longer stack
/// is damage, and leak-audit keeps its first (innermost) LA_WIRE_MAX_FRAMES.
#define LA_WIRE_MAX_FRAMES 48u

/// Longest type or test name leak-audit reports, in UTF-8 bytes: a longer one (a `leakReportName`
/// as long as its author likes) is cut there, and the report says so.
#define LA_WIRE_MAX_NAME 4096u

/// Longest command line a process blob carries.
#define LA_WIRE_MAX_COMMAND_LINE 1024u

/// Where a type's budget comes from.
enum {
    /// The type's `max`, declared in code (MemoryLeakMonitorable).
    LA_BUDGET_CODE = 0,
    /// A `--budget` or configuration pattern; la_wire_type.pattern_index says which.
    LA_BUDGET_PATTERN = 1,
    /// None: tracked for the census only.
    LA_BUDGET_NONE = 2,
};

/// Flags of a type, in the high 16 bits of la_wire_type.budget_source.
enum {
    /// A subclass of XCTest's XCTestCase: XCTest keeps one instance per test until the run ends.
    LA_TYPE_XCTEST_CASE = 1u << 0,
    /// Taken by the census without stacks (a `no-stacks` pattern of LEAK_AUDIT_WATCH): its
    /// allocations carry LA_STACK_NONE.
    LA_TYPE_NO_STACKS = 1u << 1,
};

/// Fixed part of a type blob's payload.
typedef struct la_wire_type {
    uint32_t budget_source;  ///< LA_BUDGET_* in the low 16 bits, LA_TYPE_* flags in the high 16.
    uint32_t pattern_index;  ///< For LA_BUDGET_PATTERN: the pattern's position in LEAK_AUDIT_WATCH.
} la_wire_type;

/// The environment variable with what to watch besides instrumented types, one item per line:
/// `budget <max> <pattern>` (a type name where `*` matches any run of characters and `?` one), and
/// `census <path>` (census every class, in every process but the Swift toolchain's own programs;
/// <path> is the target's, for information), `tests <grace milliseconds>` (name the test that
/// allocated each instance, in test bundles, with LA_SLOT_TEST events), and `retainers` (an
/// attached process waits at exit until leak-audit has copied its memory: la_wire_walk).
#define LA_WIRE_ENV_WATCH "LEAK_AUDIT_WATCH"
/// LEAK_AUDIT_WATCH's value when its lines are too long for the environment (the kernel takes at
/// most 128 KiB a string): they are in the channel's file, at the header's `watch_offset`.
#define LA_WIRE_WATCH_IN_CHANNEL "@channel"
/// The most bytes of watch lines a writer reads from the channel.
#define LA_WIRE_MAX_WATCH_BYTES (64u << 20)

/// Fixed part of a module blob's payload.
typedef struct la_wire_module {
    uint64_t start;          ///< Lowest runtime address of the image's PT_LOAD segments.
    uint64_t end;            ///< One past the highest.
    uint32_t build_id_size;  ///< Bytes of build-id that follow.
    uint32_t path_size;      ///< Bytes of path that follow the build-id.
} la_wire_module;

/// Stack id meaning "no stack was recorded".
#define LA_STACK_NONE 0xFFFFFFFFu
/// Payload bytes carried by one continuation slot.
#define LA_WIRE_CONT_PAYLOAD 24u

/// Atomically loads a 64-bit word of the shared mapping with acquire ordering.
static inline uint64_t la_wire_load_acquire_u64(const void *address) {
    return __atomic_load_n((const uint64_t *)address, __ATOMIC_ACQUIRE);
}

/// Atomically stores a 64-bit word of the shared mapping with release ordering.
static inline void la_wire_store_release_u64(void *address, uint64_t value) {
    __atomic_store_n((uint64_t *)address, value, __ATOMIC_RELEASE);
}

/// Atomically stores a 32-bit word of the shared mapping with release ordering.
static inline void la_wire_store_release_u32(void *address, uint32_t value) {
    __atomic_store_n((uint32_t *)address, value, __ATOMIC_RELEASE);
}

/// Atomically loads a 32-bit word of the shared mapping with acquire ordering.
static inline uint32_t la_wire_load_acquire_u32(const void *address) {
    return __atomic_load_n((const uint32_t *)address, __ATOMIC_ACQUIRE);
}

/// Whether a type name (or, for suppressions, a function name or file path) of `length` bytes
/// matches `pattern`, a NUL-terminated budget pattern as LEAK_AUDIT_WATCH carries it: `*` matches
/// any run of characters, `?` one character (a UTF-8 lead byte and its continuation bytes), and
/// everything else itself. (Not fnmatch: `[` is common in type names, `[Swift.Int]`, and must match
/// itself.) The shim matches budgets with it and leak-audit matches suppressions with it, so both
/// sides read a pattern the same way.
static inline bool la_wire_glob_matches(const char *pattern, const char *text, size_t length) {
    const char *star = NULL;
    size_t star_text = 0, position = 0;
    while (position < length) {
        if (*pattern == '*') {
            star = pattern++;
            star_text = position;
        } else if (*pattern == '?') {
            pattern++;
            position++;
            while (position < length && ((unsigned char)text[position] & 0xC0) == 0x80) position++;
        } else if (*pattern != '\0' && *pattern == text[position]) {
            pattern++;
            position++;
        } else if (star != NULL) {
            pattern = star + 1;
            position = ++star_text;
        } else {
            return false;
        }
    }
    while (*pattern == '*') pattern++;
    return *pattern == '\0';
}

#endif
