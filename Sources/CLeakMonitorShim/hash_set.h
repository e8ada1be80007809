// Open addressing with linear probing over power-of-two tables: the one hash of pointer keys and
// the one probe sequence that every table of the shim walks (the type map and the allocation
// decisions by class metadata, the stack table by stack hash), and the find and insert of the shape
// that recurs: tables keyed by class metadata. The allocation hook and validate probe these on
// every call, so everything here is inline, forced even in debug builds, and nothing here locks: a
// caller that needs a lock takes it around the call.
#ifndef LEAK_MONITOR_SHIM_HASH_SET_H
#define LEAK_MONITOR_SHIM_HASH_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LA_HASH_INLINE static inline __attribute__((always_inline))

/// Spreads a pointer over 64 bits: the low four bits, which alignment keeps (nearly) constant, are
/// dropped, and Fibonacci hashing moves the rest into the high bits, which callers take (shifted
/// down) for table indices.
LA_HASH_INLINE uint64_t la_hash_pointer(uintptr_t pointer) { return (uint64_t)(pointer >> 4) * 0x9E3779B97F4A7C15ull; }

// The probe sequence ------------------------------------------------------------------------------
//
// `mask` is a table's capacity minus one. Linear probing keeps a lookup in one or two cache lines;
// tables stay at most three quarters full, so sequences are short and always reach an empty entry.

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

/// The type id stored for `metadata`, or `missing` when the table does not hold it. Takes no lock.
/// The loop returns the value itself rather than its entry: the allocation hook runs it for every
/// object, and a lookup that hits its first entry stays a handful of instructions. It walks the
/// probe sequence in byte offsets (index times the entry's size), which address an entry as they
/// are, where an index is scaled by a shift at each use (an addressing mode scales by 8 at most).
LA_HASH_INLINE int32_t la_metadata_value(const la_metadata_entry *entries, size_t mask, uint64_t hash,
                                         const void *metadata, int32_t missing) {
    const char *base = (const char *)entries;
    size_t offset_mask = mask * sizeof(la_metadata_entry);
    for (size_t offset = la_probe_first(hash, mask) * sizeof(la_metadata_entry);;
         offset = (offset + sizeof(la_metadata_entry)) & offset_mask) {
        const la_metadata_entry *entry = (const la_metadata_entry *)(base + offset);
        const void *seen = __atomic_load_n(&entry->metadata, __ATOMIC_ACQUIRE);
        if (seen == metadata) return __atomic_load_n(&entry->type_id, __ATOMIC_ACQUIRE);
        if (seen == NULL) return missing;
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

#endif
