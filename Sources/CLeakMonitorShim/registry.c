// The registry of tracked instances: per dynamic type (keyed by its metadata pointer) a budget and
// live/peak counters, and one set of tracked object addresses (a bitmap of the address space).
// validate adds to it, the destroy hook removes from it; both cost O(1) whatever the number
// of instances alive, and neither takes a lock.
#include "shim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int32_t leakaudit_type_lookup(const void *metadata) { return la_type_lookup_in(la_state(), metadata); }

/// Writes a type's record (again, when its budget's source changed). A budget declared in code
/// says that this process links LeakMonitor: the header says so too, before the record, whether or
/// not the copy's constructor got to say it (it does not wait for the slow lock another thread
/// holds).
static void la_type_write_record(const la_type *type, int32_t id) {
    if (type->budget_source == LA_BUDGET_CODE) la_channel_set_flag(LA_FLAG_INSTRUMENTED);
    size_t length = sizeof(la_wire_type) + type->name_length;
    uint8_t *payload = malloc(length);
    if (payload == NULL) return;
    la_wire_type fixed = {.budget_source = type->budget_source | (type->flags << 16), .pattern_index = type->pattern_index};
    memcpy(payload, &fixed, sizeof fixed);
    memcpy(payload + sizeof fixed, type->name, type->name_length);
    la_channel_blob(LA_BLOB_TYPE, (uint64_t)id, (uint64_t)type->max, payload, length);
    free(payload);
}

int32_t la_type_register_locked(la_process_state *state, const void *metadata, const char *name, size_t name_length,
                                int64_t max, uint32_t budget_source, uint32_t pattern_index, uint32_t flags) {
    int32_t id = la_type_lookup_in(state, metadata);
    if (id >= 0) return id;
    id = __atomic_load_n(&state->registry.type_total, __ATOMIC_RELAXED);
    char *copy = malloc(name_length > 0 ? name_length : 1);
    if (id >= LA_MAX_TYPES || copy == NULL) {
        free(copy);
        la_channel_set_flag(LA_FLAG_TYPE_TABLE_FULL);
        return -1;
    }
    // A process whose shim copy attaches only when needed attaches now. Failed inits (and watched
    // allocations) must be routed through the hooks before the first instance is tracked, and
    // images loaded since the last registration (dlopen) must be routed too.
    la_lifecycle_attach_locked(state);
    la_hooks_install();
    la_modules_sync();

    memcpy(copy, name, name_length);
    la_type *type = &state->registry.types[id];
    type->metadata = metadata;
    type->max = max;
    type->name = copy;
    type->name_length = name_length;
    type->budget_source = budget_source;
    type->pattern_index = pattern_index;
    type->flags = flags;
    la_type_write_record(type, id);

    // The id becomes valid before it can be found: a thread that finds it in the map must not
    // see it rejected by leakaudit_track as out of range.
    __atomic_store_n(&state->registry.type_total, id + 1, __ATOMIC_RELEASE);
    la_metadata_insert(state->registry.type_map, LA_TYPE_MAP_CAPACITY - 1, la_type_map_hash(metadata), metadata, id);
    // Its deaths through the hook, which finds the entry just inserted, before any instance is
    // tracked.
    la_hooks_route_destroy_locked(state, id);
    return id;
}

int32_t leakaudit_type_register(const void *metadata, const char *name, size_t name_length, int64_t max) {
    la_process_state *state = la_state();
    pthread_mutex_lock(&state->slow_lock);
    int32_t id = la_type_register_locked(state, metadata, name, name_length, max, LA_BUDGET_CODE, 0, 0);
    pthread_mutex_unlock(&state->slow_lock);
    return id;
}

void leakaudit_type_claim(int32_t type_id, const char *name, size_t name_length, int64_t max) {
    la_process_state *state = la_state();
    if (type_id < 0 || type_id >= leakaudit_type_count()) return;
    pthread_mutex_lock(&state->slow_lock);
    la_type *type = &state->registry.types[type_id];
    char *copy = malloc(name_length > 0 ? name_length : 1);
    if (copy != NULL && __atomic_load_n(&type->budget_source, __ATOMIC_RELAXED) != LA_BUDGET_CODE) {
        // The old name stays allocated: readers in other threads may still hold it.
        memcpy(copy, name, name_length);
        type->name = copy;
        type->name_length = name_length;
        type->max = max;
        type->pattern_index = 0;
        __atomic_store_n(&type->budget_source, LA_BUDGET_CODE, __ATOMIC_RELEASE);
        la_type_write_record(type, type_id);
        // Later instances are counted by validate alone, so that its violation handler sees them.
        la_watch_forget_locked(state, type->metadata);
    } else {
        free(copy);
    }
    pthread_mutex_unlock(&state->slow_lock);
}

int32_t leakaudit_type_count(void) { return __atomic_load_n(&la_state()->registry.type_total, __ATOMIC_ACQUIRE); }

bool leakaudit_type_counts_get(int32_t type_id, leakaudit_type_counts *out) {
    if (type_id < 0 || type_id >= leakaudit_type_count()) return false;
    const la_type *type = &la_state()->registry.types[type_id];
    out->live = __atomic_load_n(&type->live, __ATOMIC_ACQUIRE);
    out->peak = __atomic_load_n(&type->peak, __ATOMIC_ACQUIRE);
    out->max = type->max;
    return true;
}

const char *leakaudit_type_name(int32_t type_id, size_t *length) {
    if (type_id < 0 || type_id >= leakaudit_type_count()) return NULL;
    const la_type *type = &la_state()->registry.types[type_id];
    *length = type->name_length;
    return type->name;
}

void leakaudit_reset_peaks(void) {
    la_type *types = la_state()->registry.types;
    int32_t total = leakaudit_type_count();
    for (int32_t id = 0; id < total; id++) {
        __atomic_store_n(&types[id].peak, __atomic_load_n(&types[id].live, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    }
}

// The set of tracked objects ---------------------------------------------------------------------
//
// One bit per 16-byte granule of the address space, in a radix tree: a root of 2^16 entries (bits
// 40 to 55 of an address), directories of 2^16 leaves (bits 24 to 39), and leaves of 2^20 bits
// (128 KiB) that each cover 16 MiB, after a word that names their window (la_thread_leaf). Two live objects never share a granule (a Swift object is at
// least 16 bytes), so an address's bit says whether it is tracked. Every level is mapped on first
// use, without reserve, so only the pages touched take memory: one 4 KiB page of bits covers 512
// KiB of heap, however many objects live there. Nodes are published with a compare-and-swap and
// never freed; bits are set and cleared with one atomic operation. So tracking takes no lock and
// never rebuilds a table, a live instance costs a fraction of a byte, and objects allocated next to
// each other share cache lines: a striped hash set of addresses cost two cache misses per object
// with many instances alive (about 190 ns per tracked object at 640,000 alive), and its spinlocks
// collapsed when threads outnumbered cores.

#define LA_ADDRESS_GRANULE_BITS 4
#define LA_ADDRESS_LEAF_BITS 20   // granules per leaf: 2^20 bits, 16 MiB of addresses
#define LA_ADDRESS_DIRECTORY_BITS 16
#define LA_ADDRESS_ROOT_BITS 16   // up to 2^56: every user-space address of 4- and 5-level paging
#define LA_ADDRESS_LEAF_SHIFT (LA_ADDRESS_GRANULE_BITS + LA_ADDRESS_LEAF_BITS)
#define LA_ADDRESS_ROOT_SHIFT (LA_ADDRESS_LEAF_SHIFT + LA_ADDRESS_DIRECTORY_BITS)

/// Maps `size` zeroed bytes that take memory only where touched; NULL when the mapping fails.
static void *la_address_map_node(size_t size) {
    void *node = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return node == MAP_FAILED ? NULL : node;
}

/// The node in `*slot`, mapped and published there first when `create` is set and it is missing;
/// NULL when missing (or when mapping failed). A leaf (`window` not 0) gets its window in its first
/// word before it is published.
static void *la_address_node(void **slot, size_t size, bool create, uint64_t window) {
    void *node = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (node != NULL || !create) return node;
    void *fresh = la_address_map_node(size);
    // Another thread may have published one meanwhile.
    if (fresh == NULL) return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (window != 0) *(uint64_t *)fresh = window;
    if (__atomic_compare_exchange_n(slot, &node, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return fresh;
    munmap(fresh, size);  // another thread published one first: `node` holds it
    return node;
}

/// The part of an address the tree indexes. The top byte is no part of the address: aarch64
/// ignores it (memory tagging puts a tag there) and x86-64 user addresses end below bit 56 even
/// with 5-level paging.
static inline uint64_t la_address_bits(uintptr_t object) {
    return (uint64_t)object & (((uint64_t)1 << (LA_ADDRESS_ROOT_SHIFT + LA_ADDRESS_ROOT_BITS)) - 1);
}

/// `address`'s word in `leaf` (its bits follow its window word).
static inline uint64_t *la_address_word_in(uint64_t *leaf, uint64_t address) {
    uint64_t granule = (address >> LA_ADDRESS_GRANULE_BITS) & ((1u << LA_ADDRESS_LEAF_BITS) - 1);
    return &leaf[1 + (granule >> 6)];
}

/// A leaf's size: its window word and its bits.
#define LA_ADDRESS_LEAF_SIZE (sizeof(uint64_t) + ((size_t)1 << (LA_ADDRESS_LEAF_BITS - 3)))

/// The window of a leaf, its first word: the bits of an address above the leaf's (the top byte
/// included, which the tree ignores, so a tagged address finds no leaf of its window and takes
/// the tree). Never UINT64_MAX, which no address's is.
static inline uint64_t la_address_window(uintptr_t object) { return (uint64_t)object >> LA_ADDRESS_LEAF_SHIFT; }

/// What la_thread_leaf points at before the thread found a leaf: a window no address has.
static const uint64_t la_no_leaf = UINT64_MAX;

/// The leaf the thread found last. A thread nearly always tracks and frees objects of its own
/// heap's few 16 MiB windows: comparing the window word of the leaf it points at finds the leaf with
/// one comparison, where the tree takes three dependent loads and their checks (about 8
/// instructions of each validate and tracked death). One word, so that a signal handler that
/// changes it between two of the thread's steps leaves it pointing at a whole leaf. Leaves are
/// never freed or moved once published (their window written before), and the thread loaded this
/// one with acquire, so reading the set through it is as safe as through the tree. Each copy of
/// the shim has its own, of the process's one tree.
static __thread __attribute__((tls_model("initial-exec"))) uint64_t *la_thread_leaf = (uint64_t *)&la_no_leaf;

/// True when `object` lies in the window of the thread's last leaf: its word is then
/// la_address_word_in(la_thread_leaf, object). The hot paths branch on it themselves, so that the
/// word they take from the leaf needs no check for NULL.
static inline __attribute__((always_inline)) bool la_address_in_last_leaf(uintptr_t object) {
    return __builtin_expect(*la_thread_leaf == la_address_window(object), 1);
}

/// `object`'s bit in its word: computed apart from the word, so that the compiler sees a single
/// bit set or cleared and emits one `lock bts` or `lock btr` rather than a compare-and-swap loop.
static inline uint64_t la_address_bit(uintptr_t object) {
    return (uint64_t)1 << ((object >> LA_ADDRESS_GRANULE_BITS) & 63);
}

/// la_address_word_existing's way through the tree, when the object is not in the thread's last
/// leaf's window; that leaf becomes the thread's last.
static inline __attribute__((always_inline)) uint64_t *la_address_word_looked_up(la_process_state *state,
                                                                                  uintptr_t object) {
    uint64_t address = la_address_bits(object);
    void **root = __atomic_load_n((void ***)&state->registry.address_root, __ATOMIC_ACQUIRE);
    if (root == NULL) return NULL;
    void **directory = __atomic_load_n((void ***)&root[address >> LA_ADDRESS_ROOT_SHIFT], __ATOMIC_ACQUIRE);
    if (directory == NULL) return NULL;
    uint64_t *leaf = __atomic_load_n(
        (uint64_t **)&directory[(address >> LA_ADDRESS_LEAF_SHIFT) & ((1u << LA_ADDRESS_DIRECTORY_BITS) - 1)],
        __ATOMIC_ACQUIRE);
    if (leaf == NULL) return NULL;
    la_thread_leaf = leaf;
    return la_address_word_in(leaf, address);
}

/// The word holding `object`'s bit when its leaf exists; NULL otherwise. Inline, and creates
/// nothing: every validate and tracked deallocation comes here, and the leaf nearly always exists,
/// nearly always the thread's last.
static inline uint64_t *la_address_word_existing(la_process_state *state, uintptr_t object) {
    if (la_address_in_last_leaf(object)) return la_address_word_in(la_thread_leaf, object);
    return la_address_word_looked_up(state, object);
}

/// The word holding `object`'s bit, mapping the nodes on its way that are missing; NULL when one
/// could not be mapped. Out of line: once per 16 MiB of heap.
static __attribute__((noinline)) uint64_t *la_address_word_created(la_process_state *state, uintptr_t object) {
    uint64_t address = la_address_bits(object);
    void **root = la_address_node((void **)&state->registry.address_root,
                                  sizeof(void *) << LA_ADDRESS_ROOT_BITS, true, 0);
    if (root == NULL) return NULL;
    void **directory = la_address_node(&root[address >> LA_ADDRESS_ROOT_SHIFT],
                                       sizeof(void *) << LA_ADDRESS_DIRECTORY_BITS, true, 0);
    if (directory == NULL) return NULL;
    uint64_t *leaf = la_address_node(
        &directory[(address >> LA_ADDRESS_LEAF_SHIFT) & ((1u << LA_ADDRESS_DIRECTORY_BITS) - 1)],
        LA_ADDRESS_LEAF_SIZE, true, la_address_window(object));
    if (leaf == NULL) return NULL;
    la_thread_leaf = leaf;
    return la_address_word_in(leaf, address);
}

/// What la_set_insert did.
typedef enum la_set_insertion {
    LA_SET_INSERTED,
    /// The address was in the set already.
    LA_SET_PRESENT,
    /// The bitmap's page for the address could not be mapped: the object cannot be tracked, and
    /// must not be counted (its deallocation would never be seen to match).
    LA_SET_NO_MEMORY,
} la_set_insertion;

/// Adds `object`.
static la_set_insertion la_set_insert(la_process_state *state, uintptr_t object) {
    uint64_t *word = la_address_word_existing(state, object);
    if (__builtin_expect(word == NULL, 0)) word = la_address_word_created(state, object);
    if (word == NULL) return LA_SET_NO_MEMORY;
    uint64_t bit = la_address_bit(object);
    return (__atomic_fetch_or(word, bit, __ATOMIC_ACQ_REL) & bit) == 0 ? LA_SET_INSERTED : LA_SET_PRESENT;
}

/// Removes `object`; false when it was not tracked. Only instances of tracked types come here, and
/// nearly all of them are tracked: the bit is cleared without a look at it first.
static bool la_set_remove(la_process_state *state, uintptr_t object) {
    uint64_t *word = la_address_word_existing(state, object);
    uint64_t bit = la_address_bit(object);
    return word != NULL && (__atomic_fetch_and(word, ~bit, __ATOMIC_ACQ_REL) & bit) != 0;
}

// Tracking ----------------------------------------------------------------------------------------

/// The result leakaudit_track_registered returns for `object` just counted: `live` instances of a
/// type whose budget is `max`.
static inline __attribute__((always_inline)) leakaudit_fast_track_result la_counted(const void *object, int64_t live,
                                                                                    int64_t max) {
    return (leakaudit_fast_track_result){.live_over_budget = live > max ? live : 0, .object = object};
}

/// The result leakaudit_track_registered returns when the caller must take the slow way.
static inline __attribute__((always_inline)) leakaudit_fast_track_result la_declined(const void *object) {
    return (leakaudit_fast_track_result){.live_over_budget = -1, .object = object};
}

/// Adds one to `type`'s live count, and its peak with it; returns the live count.
static inline __attribute__((always_inline)) int64_t la_count_one(la_type *type) {
    int64_t live = __atomic_add_fetch(&type->live, 1, __ATOMIC_ACQ_REL);
    int64_t peak = __atomic_load_n(&type->peak, __ATOMIC_RELAXED);
    while (live > peak
           && !__atomic_compare_exchange_n(&type->peak, &peak, live, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
    return live;
}

/// la_registry_track, inline in validate's entry point (leakaudit_track), which calls it for every
/// instance; the allocation hook calls the out-of-line copy.
static inline __attribute__((always_inline)) bool la_track(la_process_state *state, const void *object,
                                                           int32_t type_id, const void *entry_frame,
                                                           bool fresh_allocation, int64_t *live_after) {
    la_type *type = &state->registry.types[type_id];
    // A fresh allocation at an address still in the set means its previous object was freed
    // where no hook saw it: it is recorded all the same, and leak-audit retires the old one.
    la_set_insertion insertion = la_set_insert(state, (uintptr_t)object);
    if (insertion == LA_SET_NO_MEMORY || (insertion == LA_SET_PRESENT && !fresh_allocation)) {
        *live_after = __atomic_load_n(&type->live, __ATOMIC_ACQUIRE);
        return false;
    }
    // Capture and record only for leak-audit: on its own the library needs counts, not stacks. The
    // channel is mapped before the first type registers, so before any instance is tracked.
    uint8_t *slots = la_channel_mapped_slots(state);
    bool stackless = (type->flags & LA_TYPE_NO_STACKS) != 0;
    uint32_t stack = slots != NULL && !stackless ? la_stack_capture(entry_frame, (uint32_t)type_id) : LA_STACK_NONE;
    int64_t live = la_count_one(type);
    if (slots != NULL) {
        la_channel_event_in(state, slots, LA_SLOT_ALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, stack,
                            state->tests.requested ? la_test_tag(state) : 0);
    }
    *live_after = live;
    return true;
}

bool la_registry_track(la_process_state *state, const void *object, int32_t type_id, const void *entry_frame,
                       bool fresh_allocation, int64_t *live_after) {
    return la_track(state, object, type_id, entry_frame, fresh_allocation, live_after);
}

leakaudit_track_result leakaudit_track(const void *object, int32_t type_id) {
    leakaudit_track_result result = {.live = 0, .max = 0, .inserted = false, .claim_needed = false};
    la_process_state *state = la_state();
    if (type_id < 0 || type_id >= __atomic_load_n(&state->registry.type_total, __ATOMIC_ACQUIRE)) return result;
    la_type *type = &state->registry.types[type_id];
    result.max = type->max;
    // A type first seen through a budget pattern or the census: the code's budget wins.
    result.claim_needed = __atomic_load_n(&type->budget_source, __ATOMIC_ACQUIRE) != LA_BUDGET_CODE;
    result.inserted = la_track(state, object, type_id, __builtin_frame_address(0), false, &result.live);
    return result;
}

// leakaudit_track_registered's ways out of its common way, each a function of its own that
// finishes the job and returns its result, called last: with nothing to do after a call, the common
// ways (counting alone, and counting and recording a stack this thread just recorded) save and
// restore no register. Each takes the walk's first frame, `entry_frame`, from the caller, whose frame
// is still there: the same stack as a capture from the caller itself.

/// The way of la_track once the set took `object` while leak-audit listens: its stack captured
/// and interned (its thread's recent stack did not match, or tests are attributed), its count and
/// its record.
static __attribute__((noinline)) leakaudit_fast_track_result la_track_registered_recorded(la_process_state *state,
                                                                                          const void *object,
                                                                                          int32_t type_id,
                                                                                          uint8_t *slots,
                                                                                          const void *entry_frame) {
    la_type *type = &state->registry.types[type_id];
    uint32_t stack = la_stack_capture(entry_frame, (uint32_t)type_id);
    int64_t live = la_count_one(type);
    la_channel_event_in(state, slots, LA_SLOT_ALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, stack,
                        state->tests.requested ? la_test_tag(state) : 0);
    return la_counted(object, live, type->max);
}

/// The record of an object already counted and its stack found, written the general way: leak-audit
/// is gone (the record is counted as dropped), or the slot `index` reserved for it lies in a full
/// ring (`reserved`: waits for the reader to free its place first).
static __attribute__((noinline)) leakaudit_fast_track_result la_track_registered_write(la_process_state *state,
                                                                                       const void *object,
                                                                                       int32_t type_id, uint32_t stack,
                                                                                       int64_t live, bool reserved,
                                                                                       uint64_t index) {
    la_wire_header *header = state->channel.header;
    if (!reserved) {
        la_channel_drop(state);
    } else if (la_channel_await_room(state, index, 1) != UINT64_MAX) {
        la_channel_write_event(state, state->channel.slots, header, state->channel.slot_capacity, index,
                               LA_SLOT_ALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, stack, 0);
    }
    return la_counted(object, live, state->registry.types[type_id].max);
}

/// leakaudit_track_registered's way where its common way stops: the shim's state not found yet, or
/// the set's page for the object not mapped yet (la_track maps it).
static __attribute__((noinline)) leakaudit_fast_track_result la_track_registered_slowly(const void *object,
                                                                                        const void *entry_frame) {
    la_process_state *state = la_state();
    int32_t type_id = la_type_lookup_in(state, *(const void *const *)object);
    if (type_id < 0) return la_declined(object);
    la_type *type = &state->registry.types[type_id];
    if (__atomic_load_n(&type->budget_source, __ATOMIC_ACQUIRE) != LA_BUDGET_CODE) return la_declined(object);
    int64_t live = 0;
    bool inserted = la_track(state, object, type_id, entry_frame, false, &live);
    return la_counted(object, inserted ? live : 0, type->max);
}

/// la_track's steps for a registered type with its code's budget, with every call on a way of its
/// own at its end (above).
leakaudit_fast_track_result leakaudit_track_registered(const void *object) {
    const void *entry_frame = __builtin_frame_address(0);
    la_process_state *state = la_state_if_resolved();
    if (__builtin_expect(state == NULL, 0)) return la_track_registered_slowly(object, entry_frame);
    // An object's first word is its dynamic type's metadata, as type(of:) reads it.
    int32_t type_id = la_type_lookup_in(state, *(const void *const *)object);
    if (type_id < 0) return la_declined(object);
    la_type *type = &state->registry.types[type_id];
    if (__atomic_load_n(&type->budget_source, __ATOMIC_ACQUIRE) != LA_BUDGET_CODE) return la_declined(object);
    uint64_t *word;
    if (la_address_in_last_leaf((uintptr_t)object)) {
        word = la_address_word_in(la_thread_leaf, (uintptr_t)object);
    } else {
        word = la_address_word_looked_up(state, (uintptr_t)object);
        if (__builtin_expect(word == NULL, 0)) return la_track_registered_slowly(object, entry_frame);
    }
    uint64_t bit = la_address_bit((uintptr_t)object);
    // Tracked already (validate called again for it): counted once.
    if (__atomic_fetch_or(word, bit, __ATOMIC_ACQ_REL) & bit) {
        return la_counted(object, 0, type->max);
    }
    // Capture and record only for leak-audit: on its own the library needs counts, not stacks.
    uint8_t *slots = la_channel_mapped_slots(state);
    if (slots == NULL) return la_counted(object, la_count_one(type), type->max);
    // The thread's recent stack for this type, when the walk from here matches it to its end
    // (la_stack_capture's inline way); anything else is captured the general way.
    const la_recent_stack *recent = &la_thread_recent_stacks[(uint32_t)type_id & (LA_RECENT_STACKS - 1)];
    const la_stack_entry *previous = recent->stack;
    if (state->tests.requested || previous == NULL || entry_frame != recent->entry_frame) {
        return la_track_registered_recorded(state, object, type_id, slots, entry_frame);
    }
    const uintptr_t *frame = (const uintptr_t *)entry_frame;
    uint32_t matched = 0;
    if (!la_walk_matches(previous, &frame, recent->walk_end, &matched)) {
        return la_track_registered_recorded(state, object, type_id, slots, entry_frame);
    }
    uint32_t stack = previous->id;
    int64_t live = la_count_one(type);
    la_wire_header *header = state->channel.header;
    uint64_t capacity = state->channel.slot_capacity;
    if (__builtin_expect(__atomic_load_n(&header->flags, __ATOMIC_RELAXED) & LA_FLAG_READER_GONE, 0)) {
        return la_track_registered_write(state, object, type_id, stack, live, false, 0);
    }
    uint64_t index = __atomic_fetch_add(&header->next_slot, 1, __ATOMIC_RELAXED);
    if (__builtin_expect(index + 1 > __atomic_load_n(&header->consumed_slot, __ATOMIC_ACQUIRE) + capacity, 0)) {
        return la_track_registered_write(state, object, type_id, stack, live, true, index);
    }
    la_channel_write_event(state, slots, header, capacity, index, LA_SLOT_ALLOC, 0, (uint32_t)type_id,
                           (uint64_t)(uintptr_t)object, stack, 0);
    return la_counted(object, live, type->max);
}

/// Counts the death of `object`, of type `type_id`, when it was tracked, and writes its record.
static inline __attribute__((always_inline)) void la_untrack(la_process_state *state, const void *object,
                                                             int32_t type_id) {
    if (!la_set_remove(state, (uintptr_t)object)) return;
    __atomic_sub_fetch(&state->registry.types[type_id].live, 1, __ATOMIC_ACQ_REL);
    la_channel_event(state, LA_SLOT_DEALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, 0, 0);
}

void la_registry_on_dealloc(la_process_state *state, const void *object, int32_t type_id) {
    la_untrack(state, object, type_id);
}

/// The death of `object`, an instance of a tracked type whose destroy word the shim routed to its
/// hook: counts it and writes its record, and returns the function the word held before, which
/// the hook calls next.
static inline __attribute__((always_inline)) la_destroy_fn la_registry_on_destroy(const void *object) {
    la_process_state *state = la_state();
    // A type's destroy word is routed to the hook only after its map entry and its own function
    // are in. An object's metadata pointer, its first word, stays its dynamic type's through
    // deinitialization.
    int32_t type_id = la_type_lookup_in(state, *(const void *const *)object);
    la_destroy_fn original = type_id >= 0 ? state->registry.types[type_id].original_destroy : NULL;
    if (__builtin_expect(original == NULL, 0)) {
        // A processor that orders loads loosely (aarch64) may show this thread the routed word
        // before what was written ahead of it, in the moment the type registers: the slow lock,
        // held while it registers, makes all of it visible.
        pthread_mutex_lock(&state->slow_lock);
        type_id = la_type_lookup_in(state, *(const void *const *)object);
        original = state->registry.types[type_id].original_destroy;
        pthread_mutex_unlock(&state->slow_lock);
    }
    la_untrack(state, object, type_id);
    return original;
}

// The destroy hook's ways out of its common way are tail calls, each to a function of its own that
// finishes the job (its record, then the type's function): with no call to come back from, the
// common way saves and restores no register, a tenth of what a tracked death costs the hook.

/// The whole death the general way: before the shim's state is found, or where the type's own
/// function is not visible yet.
static __attribute__((noinline)) void la_hook_destroy_slowly(void *object) {
    la_destroy_fn original = la_registry_on_destroy(object);
    original(object);
}

/// The record of a counted death, written the general way (la_channel_event: counted as dropped
/// when leak-audit is gone), then the type's function.
static __attribute__((noinline)) void la_hook_destroy_record(la_process_state *state, void *object, int32_t type_id,
                                                             la_destroy_fn original) {
    la_channel_event(state, LA_SLOT_DEALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, 0, 0);
    original(object);
}

/// The record of a counted death whose slot `index` was reserved in a full ring: waits for the
/// reader to free its place (la_channel_await_room), writes it, then calls the type's function.
static __attribute__((noinline)) void la_hook_destroy_await(la_process_state *state, void *object, int32_t type_id,
                                                            la_destroy_fn original, uint64_t index) {
    if (la_channel_await_room(state, index, 1) != UINT64_MAX) {
        la_channel_write_event(state, state->channel.slots, state->channel.header, state->channel.slot_capacity, index,
                               LA_SLOT_DEALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, 0, 0);
    }
    original(object);
}

/// The runtime calls it with an instance whose last strong reference just went. The registry
/// records the death first, while the memory is still the instance's (so that a later object at
/// the same address always gets a later slot), and hands the object to the type's own function,
/// called last, as a tail call. The same steps as la_registry_on_destroy, with every rare case
/// handed to a function that finishes the job.
void leakaudit_hook_destroy(void *object) {
    la_process_state *state = la_state_if_resolved();
    if (__builtin_expect(state == NULL, 0)) {
        la_hook_destroy_slowly(object);
        return;
    }
    int32_t type_id = la_type_lookup_in(state, *(const void *const *)object);
    la_destroy_fn original = type_id >= 0 ? state->registry.types[type_id].original_destroy : NULL;
    if (__builtin_expect(original == NULL, 0)) {
        la_hook_destroy_slowly(object);
        return;
    }
    // la_set_remove, with the thread's last leaf apart (la_address_in_last_leaf).
    uint64_t *word;
    if (la_address_in_last_leaf((uintptr_t)object)) {
        word = la_address_word_in(la_thread_leaf, (uintptr_t)object);
    } else {
        word = la_address_word_looked_up(state, (uintptr_t)object);
        if (word == NULL) {
            original(object);
            return;
        }
    }
    uint64_t bit = la_address_bit((uintptr_t)object);
    if ((__atomic_fetch_and(word, ~bit, __ATOMIC_ACQ_REL) & bit) == 0) {
        original(object);
        return;
    }
    __atomic_sub_fetch(&state->registry.types[type_id].live, 1, __ATOMIC_ACQ_REL);
    uint8_t *slots = la_channel_mapped_slots(state);
    if (slots == NULL) {
        original(object);
        return;
    }
    la_wire_header *header = state->channel.header;
    uint64_t capacity = state->channel.slot_capacity;
    if (__builtin_expect(__atomic_load_n(&header->flags, __ATOMIC_RELAXED) & LA_FLAG_READER_GONE, 0)) {
        la_hook_destroy_record(state, object, type_id, original);
        return;
    }
    uint64_t index = __atomic_fetch_add(&header->next_slot, 1, __ATOMIC_RELAXED);
    if (__builtin_expect(index + 1 > __atomic_load_n(&header->consumed_slot, __ATOMIC_ACQUIRE) + capacity, 0)) {
        la_hook_destroy_await(state, object, type_id, original, index);
        return;
    }
    la_channel_write_event(state, slots, header, capacity, index, LA_SLOT_DEALLOC, 0, (uint32_t)type_id,
                           (uint64_t)(uintptr_t)object, 0, 0);
    original(object);
}
