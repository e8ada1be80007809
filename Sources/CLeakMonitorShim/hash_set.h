// Open addressing with linear probing over power-of-two tables: the one hash of pointer keys and
// the one probe sequence that every table of the shim walks (the type map and the allocation
// decisions by class metadata, the stack table by stack hash, the striped set of tracked objects),
// and the find / insert / remove of the two shapes that recur: tables keyed by class metadata and
// sets of addresses. The allocation hook and validate probe these on every call, so everything
// here is inline, forced even in debug builds, and nothing here locks: a caller that needs a lock
// takes it around the call.
#ifndef LEAK_MONITOR_SHIM_HASH_SET_H
#define LEAK_MONITOR_SHIM_HASH_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LA_HASH_INLINE static inline __attribute__((always_inline))

/// Spreads a pointer over 64 bits: the low four bits, which alignment keeps (nearly) constant, are
/// dropped, and Fibonacci hashing moves the rest into the high bits, which callers take (shifted
/// down) for table indices and stripe numbers.
LA_HASH_INLINE uint64_t la_hash_pointer(uintptr_t pointer) { return (uint64_t)(pointer >> 4) * 0x9E3779B97F4A7C15ull; }

// The probe sequence ------------------------------------------------------------------------------
//
// `mask` is a table's capacity minus one. Linear probing keeps a lookup in one or two cache lines;
// tables stay at most three quarters full (half for the tracked set), so sequences are short and
// always reach an empty entry.

/// The first index that `hash` probes.
LA_HASH_INLINE size_t la_probe_first(uint64_t hash, size_t mask) { return (size_t)hash & mask; }

/// The index probed after `index`.
LA_HASH_INLINE size_t la_probe_next(size_t index, size_t mask) { return (index + 1) & mask; }

// Tables keyed by class metadata ------------------------------------------------------------------
//
// Insert-only and read without locking: a writer (under the slow lock) fills an entry's value and
// then publishes its key with a release store, so a reader that finds the key sees the value.

/// An entry of a table keyed by class metadata: the type map (metadata to type id) and the
/// allocation hook's decisions (metadata to type id, or -1 for "not tracked at allocation").
typedef struct la_metadata_entry {
    const void *metadata;  // atomic; NULL = empty; published after type_id
    int32_t type_id;
} la_metadata_entry;

/// The entry holding `metadata`, or NULL when the table does not hold it. Takes no lock. Like
/// strchr, it takes a const table (readers hold one) and returns an entry a writer may change.
LA_HASH_INLINE la_metadata_entry *la_metadata_find(const la_metadata_entry *entries, size_t mask, uint64_t hash,
                                                   const void *metadata) {
    for (size_t index = la_probe_first(hash, mask);; index = la_probe_next(index, mask)) {
        const void *seen = __atomic_load_n(&entries[index].metadata, __ATOMIC_ACQUIRE);
        if (seen == NULL) return NULL;
        if (seen == metadata) return (la_metadata_entry *)&entries[index];
    }
}

/// Publishes `metadata` with `type_id` in the first empty entry of its probe sequence. Caller
/// holds the writers' lock, has made sure the table has room, and knows `metadata` is not in it.
LA_HASH_INLINE void la_metadata_insert(la_metadata_entry *entries, size_t mask, uint64_t hash, const void *metadata,
                                       int32_t type_id) {
    size_t index = la_probe_first(hash, mask);
    while (entries[index].metadata != NULL) index = la_probe_next(index, mask);
    entries[index].type_id = type_id;
    __atomic_store_n(&entries[index].metadata, metadata, __ATOMIC_RELEASE);
}

// Sets of addresses -------------------------------------------------------------------------------
//
// A table of uintptr_t keys where 0 marks an empty slot and 1 a removed one (a tombstone, which
// keeps later keys of the same probe sequence reachable). Addresses are never 0 or 1.

#define LA_HASH_SET_EMPTY ((uintptr_t)0)
#define LA_HASH_SET_TOMBSTONE ((uintptr_t)1)

/// What la_hash_set_insert did: the caller counts used slots (live keys plus tombstones) to know
/// when to rebuild.
typedef enum la_hash_set_insertion {
    /// The key was already there; nothing changed.
    LA_HASH_SET_PRESENT,
    /// The key took an empty slot: one more slot is used.
    LA_HASH_SET_FILLED_EMPTY,
    /// The key took the first tombstone of its probe sequence: no more slots are used.
    LA_HASH_SET_REUSED_TOMBSTONE,
} la_hash_set_insertion;

/// Puts `key` in a table known to have room and not to hold it (rebuilding a table).
LA_HASH_INLINE void la_hash_set_place(uintptr_t *slots, size_t mask, uint64_t hash, uintptr_t key) {
    size_t index = la_probe_first(hash, mask);
    while (slots[index] > LA_HASH_SET_TOMBSTONE) index = la_probe_next(index, mask);
    slots[index] = key;
}

/// Adds `key` to a table with room for one more used slot.
LA_HASH_INLINE la_hash_set_insertion la_hash_set_insert(uintptr_t *slots, size_t mask, uint64_t hash, uintptr_t key) {
    size_t tombstone = SIZE_MAX;
    size_t index = la_probe_first(hash, mask);
    // The whole sequence is walked, past tombstones, since the key may sit beyond one.
    for (;; index = la_probe_next(index, mask)) {
        uintptr_t seen = slots[index];
        if (seen == key) return LA_HASH_SET_PRESENT;
        if (seen == LA_HASH_SET_TOMBSTONE && tombstone == SIZE_MAX) tombstone = index;
        if (seen == LA_HASH_SET_EMPTY) break;
    }
    if (tombstone != SIZE_MAX) {
        slots[tombstone] = key;
        return LA_HASH_SET_REUSED_TOMBSTONE;
    }
    slots[index] = key;
    return LA_HASH_SET_FILLED_EMPTY;
}

/// Removes `key`, leaving a tombstone; false when the table does not hold it.
LA_HASH_INLINE bool la_hash_set_remove(uintptr_t *slots, size_t mask, uint64_t hash, uintptr_t key) {
    for (size_t index = la_probe_first(hash, mask);; index = la_probe_next(index, mask)) {
        uintptr_t seen = slots[index];
        if (seen == LA_HASH_SET_EMPTY) return false;
        if (seen == key) {
            slots[index] = LA_HASH_SET_TOMBSTONE;
            return true;
        }
    }
}

#endif
