// Allocation backtraces: a frame-pointer walk (about 20 ns; Swift code keeps frame pointers in
// SwiftPM builds) bounded by the thread's stack, interned so that each distinct stack is written
// to the channel once and an allocation record carries only its 32-bit id.
#include "shim_internal.h"

#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14's value, for C libraries whose headers predate it
#endif

// Each table is filled to three quarters at most, so that a probe always ends at an empty entry.
#define LA_STACK_TABLE_LIMIT (LA_STACK_TABLE_CAPACITY / 4 * 3)
#define LA_STACK_OVERFLOW_LIMIT (LA_STACK_OVERFLOW_CAPACITY / 4 * 3)

// The calling thread's stack, found once per thread. The initial-exec model reads them at a fixed
// offset from the thread pointer: in the preloaded copy of the shim (a shared library) the default
// model called __tls_get_addr at each access, about 30 instructions per captured stack.
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t la_thread_stack_low;
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t la_thread_stack_high;
static __thread __attribute__((tls_model("initial-exec"))) bool la_thread_stack_known;
// The thread's recent stacks, where their walks started and how far they could read
// (shim_internal.h).
__thread __attribute__((tls_model("initial-exec"))) la_recent_stack la_thread_recent_stacks[LA_RECENT_STACKS];

/// The stack pointer the main thread started with, which glibc's start-up code keeps (weak: a C
/// library without it leaves its address NULL).
extern void *__libc_stack_end __attribute__((weak));

/// The main thread's stack without pthread_getattr_np, which finds it by reading and parsing
/// /proc/self/maps (about 200,000 instructions and a file read, in every process): no frame lies
/// above the stack pointer the thread started with, and the stack grows down at most its limit.
/// False when that cannot be had (another thread, no `__libc_stack_end`, no finite limit).
static bool la_main_thread_stack_bounds(void) {
    if (&__libc_stack_end == NULL || __libc_stack_end == NULL || getpid() != (pid_t)syscall(SYS_gettid)) return false;
    struct rlimit limit;
    uintptr_t high = (uintptr_t)__libc_stack_end;
    if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= high) return false;
    la_thread_stack_low = high - (uintptr_t)limit.rlim_cur;
    la_thread_stack_high = high;
    return true;
}

/// Finds the calling thread's stack once; pthread_getattr_np reads /proc/self/maps for the main
/// thread, far too slow to repeat per capture.
static void la_thread_stack_bounds(void) {
    la_thread_stack_known = true;
    if (la_main_thread_stack_bounds()) return;
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
    void *low = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attributes, &low, &size) == 0) {
        la_thread_stack_low = (uintptr_t)low;
        la_thread_stack_high = (uintptr_t)low + size;
    }
    pthread_attr_destroy(&attributes);
}

/// The first frame of a walk from `frame`, the frame of the shim's entry point, or NULL when it
/// does not lie on the thread's stack; `*last` is the highest frame the walk may read.
static inline const uintptr_t *la_walk_start(const uintptr_t *frame, const uintptr_t **last) {
    if (!la_thread_stack_known) la_thread_stack_bounds();
    uintptr_t low = la_thread_stack_low, high = la_thread_stack_high;
    if (high == 0) {
        low = (uintptr_t)frame;
        high = low + (8u << 20);
    }
    *last = (const uintptr_t *)(high - 2 * sizeof(uintptr_t));
    bool on_stack = (uintptr_t)frame >= low && frame <= *last && ((uintptr_t)frame & (sizeof(uintptr_t) - 1)) == 0;
    return on_stack ? frame : NULL;
}

/// Walks on from `frame` (NULL: the walk has ended), after the `count` return addresses already
/// in `frames`, and hashes all of them into `*hash`, never 0 (which marks an empty table entry).
static int la_capture_from(const uintptr_t *frame, const uintptr_t *last, uintptr_t *frames, int count,
                           bool *truncated, uint64_t *hash) {
    uint64_t mixed = 0xcbf29ce484222325ull;
    for (int index = 0; index < count; index++) mixed = (mixed ^ frames[index]) * 0x100000001b3ull;
    *truncated = false;
    while (frame != NULL) {
        uintptr_t return_address = frame[1];
        if (return_address == 0) break;
        if (count == LA_MAX_FRAMES) {
            *truncated = true;
            break;
        }
        frames[count++] = return_address;
        mixed = (mixed ^ return_address) * 0x100000001b3ull;
        frame = la_walk_next(frame, last);
    }
    // The steps above leave the low bits, which pick the table entry, depending on low bits only.
    mixed = (mixed ^ (mixed >> 32) ^ (uint64_t)count) * 0x9E3779B97F4A7C15ull;
    *hash = (mixed ^ (mixed >> 29)) | 1;
    return count;
}

/// True when `entry` holds exactly the `count` return addresses of `frames` (complemented).
static bool la_entry_matches(const la_stack_entry *entry, const uintptr_t *frames, int count) {
    if (entry->frame_count != (uint32_t)count) return false;
    // A few dozen words at most: a loop here costs less than a call to memcmp.
    for (int index = 0; index < count; index++) {
        if (entry->frames[index] != ~frames[index]) return false;
    }
    return true;
}

/// The entry of `table` (of `mask + 1` entries) that holds the `count` return addresses of
/// `frames`, or NULL with `*empty` the first empty entry on the way. A table is never full, so the
/// probe ends.
static la_stack_entry *la_stack_probe(la_stack_entry *table, size_t mask, const uintptr_t *frames, int count,
                                      uint64_t hash, la_stack_entry **empty) {
    for (size_t index = la_probe_first(hash, mask);; index = la_probe_next(index, mask)) {
        la_stack_entry *entry = &table[index];
        uint64_t seen = __atomic_load_n(&entry->hash, __ATOMIC_ACQUIRE);
        if (seen == 0) {
            *empty = entry;
            return NULL;
        }
        if (seen == hash && la_entry_matches(entry, frames, count)) return entry;
    }
}

/// The overflow table, mapped under the slow lock when the first table fills; NULL when the
/// mapping failed. Its pages are touched only as its entries are used.
static la_stack_entry *la_stack_overflow(la_process_state *state) {
    la_stack_entry *overflow = __atomic_load_n(&state->stacks.overflow, __ATOMIC_ACQUIRE);
    if (overflow != NULL) return overflow;
    void *mapping = mmap(NULL, (size_t)LA_STACK_OVERFLOW_CAPACITY * sizeof(la_stack_entry), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping == MAP_FAILED) return NULL;
    __atomic_store_n(&state->stacks.overflow, (la_stack_entry *)mapping, __ATOMIC_RELEASE);
    return mapping;
}

/// Makes the pages of the first table's whole pages at once (LA_STACK_TABLE_PREFAULT). The table
/// lies in .bss at no page boundary, and madvise takes whole pages only (EINVAL otherwise): the
/// pages it starts and ends in are left to be made as they are touched.
static void la_stack_table_populate(la_process_state *state) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)state->stacks.table + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)state->stacks.table + sizeof state->stacks.table) & ~(page - 1);
    if (end > start) (void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
}

/// Adds a stack under the slow lock: writes its record (and any module it reaches that the map does
/// not have yet) before publishing it, so that no allocation record can refer to an unwritten stack.
/// Returns its entry, or NULL when both tables are full or memory ran out. A stack goes into the
/// first table until it holds LA_STACK_TABLE_LIMIT, then into the overflow table.
static const la_stack_entry *la_stack_insert(la_process_state *state, const uintptr_t *frames, int count,
                                             bool truncated, uint64_t hash) {
    // The entry's copy of the frames is made before the lock, which every thread's new stacks and
    // new types take (a parser's recursion makes tens of thousands of stacks, from each thread):
    // freed if another thread added the stack first. It lives in malloc's heap, which leak-audit's
    // search for what holds an object reads word by word: its frames are kept complemented (no
    // return address reads as a reference) and the block's slack past them is cleared (a 16-byte
    // copy gets 24 bytes, whose last word held a freed object's stale address: a Debounce.Inner in
    // OpenCombine's tests read as held by "a malloc block of 24 bytes").
    uintptr_t *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof(uintptr_t));
    if (copy != NULL) {
        memset(copy, 0, malloc_usable_size(copy));
        for (int frame = 0; frame < count; frame++) copy[frame] = ~frames[frame];
    }
    pthread_mutex_lock(&state->slow_lock);
    // Probed again under the lock: another thread may have added the stack since the lookup.
    la_stack_entry *empty = NULL;
    la_stack_entry *result = la_stack_probe(state->stacks.table, LA_STACK_TABLE_CAPACITY - 1, frames, count, hash, &empty);
    if (result == NULL && state->stacks.total >= LA_STACK_TABLE_LIMIT) {
        la_stack_entry *overflow = la_stack_overflow(state);
        empty = NULL;
        if (overflow != NULL) {
            result = la_stack_probe(overflow, LA_STACK_OVERFLOW_CAPACITY - 1, frames, count, hash, &empty);
        }
        if (result == NULL && (overflow == NULL || state->stacks.total >= LA_STACK_TABLE_LIMIT + LA_STACK_OVERFLOW_LIMIT)) {
            la_channel_set_flag(LA_FLAG_STACK_TABLE_FULL);
            empty = NULL;
        }
    }
    bool prefault = false;
    if (result == NULL && empty != NULL && copy != NULL) {
        for (int frame = 0; frame < count; frame++) {
            if (!la_modules_contain(frames[frame])) { la_modules_sync(); break; }
        }
        uint32_t id = state->stacks.total++;
        prefault = id == LA_STACK_TABLE_PREFAULT;
        la_channel_blob(LA_BLOB_STACK, id, truncated ? 1 : 0, frames, (size_t)count * sizeof(uintptr_t));
        empty->id = id;
        empty->frame_count = (uint32_t)count;
        empty->frames = copy;
        __atomic_store_n(&empty->hash, hash, __ATOMIC_RELEASE);
        result = empty;
        copy = NULL;
    }
    pthread_mutex_unlock(&state->slow_lock);
    free(copy);
    // After the lock: lookups and inserts go on meanwhile, the pages' contents unchanged. A kernel
    // older than 5.14 refuses the advice, and the pages are made as they are touched.
    if (prefault) la_stack_table_populate(state);
    return result;
}

/// The table's entry for the `count` return addresses in `frames`, added when missing; NULL when
/// it could not be added. The lookup takes no lock: entries are never removed or moved once
/// published, and the overflow table, once mapped, stays.
static const la_stack_entry *la_stack_intern(const uintptr_t *frames, int count, bool truncated, uint64_t hash) {
    la_process_state *state = la_state();
    la_stack_entry *empty = NULL;
    const la_stack_entry *entry =
        la_stack_probe(state->stacks.table, LA_STACK_TABLE_CAPACITY - 1, frames, count, hash, &empty);
    if (entry != NULL) return entry;
    la_stack_entry *overflow = __atomic_load_n(&state->stacks.overflow, __ATOMIC_ACQUIRE);
    if (overflow != NULL) {
        entry = la_stack_probe(overflow, LA_STACK_OVERFLOW_CAPACITY - 1, frames, count, hash, &empty);
        if (entry != NULL) return entry;
    }
    return la_stack_insert(state, frames, count, truncated, hash);
}

/// Makes `entry` the thread's recent stack for `hint`, found by a walk from `entry_frame` (NULL:
/// not on the stack, which no inline comparison may start from) that could read up to `last`.
static uint32_t la_remember_stack(uint32_t hint, const la_stack_entry *entry, const void *entry_frame,
                                  const uintptr_t *last) {
    la_recent_stack *recent = &la_thread_recent_stacks[hint & (LA_RECENT_STACKS - 1)];
    recent->stack = entry;
    recent->entry_frame = entry_frame;
    recent->walk_end = last;
    return entry->id;
}

uint32_t la_stack_capture_and_intern(const void *entry_frame, uint32_t hint) {
    const uintptr_t *last = NULL;
    const uintptr_t *frame = la_walk_start(entry_frame, &last);
    const void *walk_start = frame;
    uintptr_t frames[LA_MAX_FRAMES];
    uint32_t count = 0;
    const la_stack_entry *previous = la_thread_recent_stacks[hint & (LA_RECENT_STACKS - 1)].stack;
    if (previous != NULL && frame != NULL) {
        if (la_walk_matches(previous, &frame, last, &count)) return la_remember_stack(hint, previous, walk_start, last);
        // The matching prefix is not walked again: the capture goes on from where they parted.
        for (uint32_t index = 0; index < count; index++) frames[index] = ~previous->frames[index];
    }
    bool truncated = false;
    uint64_t hash = 0;
    count = (uint32_t)la_capture_from(frame, last, frames, (int)count, &truncated, &hash);
    const la_stack_entry *entry = la_stack_intern(frames, (int)count, truncated, hash);
    if (entry == NULL) return LA_STACK_NONE;
    return la_remember_stack(hint, entry, walk_start, last);
}

uint32_t leakaudit_stack_capture(void) { return la_stack_capture(__builtin_frame_address(0), 0); }

void leakaudit_stack_table_bounds(const void *_Nullable *_Nonnull start, size_t *length) {
    la_process_state *state = la_state();
    *start = state->stacks.table;
    *length = sizeof state->stacks.table;
}

uint32_t leakaudit_stack_capture_synthetic(const uintptr_t *return_addresses, uint32_t count) {
    // Frame records on this function's stack, each pointing at the next and the last at none: the
    // same records at the same addresses for every call from one call site.
    enum { capacity = LA_MAX_FRAMES + 8 };
    uintptr_t records[2 * capacity];
    uint32_t used = count < capacity ? count : capacity;
    for (uint32_t index = 0; index < used; index++) {
        records[2 * index] = index + 1 < used ? (uintptr_t)&records[2 * (index + 1)] : 0;
        records[2 * index + 1] = return_addresses[index];
    }
    return used == 0 ? LA_STACK_NONE : la_stack_capture(records, 0);
}
