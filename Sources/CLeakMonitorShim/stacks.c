// Allocation backtraces: a frame-pointer walk (about 20 ns; Swift code keeps frame pointers in
// SwiftPM builds) bounded by the thread's stack, interned so that each distinct stack is written
// to the channel once and an allocation record carries only its 32-bit id.
#include "shim_internal.h"

#include <stdlib.h>
#include <string.h>

#define LA_STACK_TABLE_LIMIT (LA_STACK_TABLE_CAPACITY / 4 * 3)

// The calling thread's stack, found once per thread. The initial-exec model reads them at a fixed
// offset from the thread pointer: in the preloaded copy of the shim (a shared library) the default
// model called __tls_get_addr at each access, about 30 instructions per captured stack.
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t la_thread_stack_low;
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t la_thread_stack_high;
static __thread __attribute__((tls_model("initial-exec"))) bool la_thread_stack_known;

/// Finds the calling thread's stack once; pthread_getattr_np reads /proc/self/maps for the main
/// thread, far too slow to repeat per capture.
static void la_thread_stack_bounds(void) {
    la_thread_stack_known = true;
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

/// Walks saved frame pointers from `frame`, the frame of the shim's entry point. Each step must
/// move up the same stack, which stops the walk at code without frame pointers (glibc's start-up
/// frames) or garbage. Hashes the return addresses as it goes (one pass over the stack, not a
/// second over the copy) into `*hash`, never 0 (which marks an empty table entry).
static int la_capture(const uintptr_t *frame, uintptr_t *frames, int capacity, bool *truncated, uint64_t *hash) {
    if (!la_thread_stack_known) la_thread_stack_bounds();
    uintptr_t low = la_thread_stack_low, high = la_thread_stack_high;
    if (high == 0) {
        low = (uintptr_t)frame;
        high = low + (8u << 20);
    }
    int count = 0;
    uint64_t mixed = 0xcbf29ce484222325ull;
    *truncated = false;
    // The first frame must lie on the stack, each next one above the last (so the walk ends) and
    // below the stack's top, and every one aligned: once above `low`, always above.
    const uintptr_t *last = (const uintptr_t *)(high - 2 * sizeof(uintptr_t));
    if ((uintptr_t)frame >= low && frame <= last && ((uintptr_t)frame & (sizeof(uintptr_t) - 1)) == 0) {
        while (true) {
            uintptr_t return_address = frame[1];
            if (return_address == 0) break;
            if (count == capacity) {
                *truncated = true;
                break;
            }
            frames[count++] = return_address;
            mixed = (mixed ^ return_address) * 0x100000001b3ull;
            const uintptr_t *next = (const uintptr_t *)frame[0];
            if (next <= frame || next > last || ((uintptr_t)next & (sizeof(uintptr_t) - 1)) != 0) break;
            frame = next;
        }
    }
    // The steps above leave the low bits, which pick the table entry, depending on low bits only.
    mixed = (mixed ^ (mixed >> 32) ^ (uint64_t)count) * 0x9E3779B97F4A7C15ull;
    *hash = (mixed ^ (mixed >> 29)) | 1;
    return count;
}

/// True when `entry` holds exactly the `count` return addresses of `frames`.
static bool la_entry_matches(const la_stack_entry *entry, const uintptr_t *frames, int count) {
    if (entry->frame_count != (uint32_t)count) return false;
    // A few dozen words at most: a loop here costs less than a call to memcmp.
    for (int index = 0; index < count; index++) {
        if (entry->frames[index] != frames[index]) return false;
    }
    return true;
}

/// Adds a stack under the slow lock: writes its record (and any module it reaches that the map does
/// not have yet) before publishing it, so that no allocation record can refer to an unwritten stack.
static uint32_t la_stack_insert(la_process_state *state, const uintptr_t *frames, int count, bool truncated, uint64_t hash) {
    pthread_mutex_lock(&state->slow_lock);
    size_t mask = LA_STACK_TABLE_CAPACITY - 1;
    uint32_t result = LA_STACK_NONE;
    // Probed again under the lock: another thread may have added the stack since the lookup.
    for (size_t index = la_probe_first(hash, mask);; index = la_probe_next(index, mask)) {
        la_stack_entry *entry = &state->stacks.table[index];
        uint64_t seen = __atomic_load_n(&entry->hash, __ATOMIC_ACQUIRE);
        if (seen == hash && la_entry_matches(entry, frames, count)) { result = entry->id; break; }
        if (seen == 0) {
            if (state->stacks.total >= LA_STACK_TABLE_LIMIT) { la_channel_set_flag(LA_FLAG_STACK_TABLE_FULL); break; }
            uintptr_t *copy = malloc((size_t)(count > 0 ? count : 1) * sizeof(uintptr_t));
            if (copy == NULL) break;
            memcpy(copy, frames, (size_t)count * sizeof(uintptr_t));
            for (int frame = 0; frame < count; frame++) {
                if (!la_modules_contain(frames[frame])) { la_modules_sync(); break; }
            }
            uint32_t id = state->stacks.total++;
            la_channel_blob(LA_BLOB_STACK, id, truncated ? 1 : 0, copy, (size_t)count * sizeof(uintptr_t));
            entry->id = id;
            entry->frame_count = (uint32_t)count;
            entry->frames = copy;
            __atomic_store_n(&entry->hash, hash, __ATOMIC_RELEASE);
            result = id;
            break;
        }
    }
    pthread_mutex_unlock(&state->slow_lock);
    return result;
}

uint32_t la_stack_capture_and_intern(const void *entry_frame) {
    uintptr_t frames[LA_MAX_FRAMES];
    bool truncated = false;
    uint64_t hash = 0;
    int count = la_capture(entry_frame, frames, LA_MAX_FRAMES, &truncated, &hash);
    la_process_state *state = la_state();
    size_t mask = LA_STACK_TABLE_CAPACITY - 1;
    // Lock-free lookup: entries are never removed or moved once published.
    for (size_t index = la_probe_first(hash, mask);; index = la_probe_next(index, mask)) {
        const la_stack_entry *entry = &state->stacks.table[index];
        uint64_t seen = __atomic_load_n(&entry->hash, __ATOMIC_ACQUIRE);
        if (seen == 0) return la_stack_insert(state, frames, count, truncated, hash);
        if (seen == hash && la_entry_matches(entry, frames, count)) return entry->id;
    }
}
