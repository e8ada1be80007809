// The registry of tracked instances: per dynamic type (keyed by its metadata pointer) a budget and
// live/peak counters, and one set of tracked object addresses. validate adds to it, the
// deallocation hook removes from it; both cost O(1) whatever the number of instances alive.
#include "shim_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/// Where `metadata` goes in the type map: the top 32 bits of its hash.
static inline uint64_t la_type_map_hash(const void *metadata) { return la_hash_pointer((uintptr_t)metadata) >> 32; }

int32_t la_type_lookup_in(const la_process_state *state, const void *metadata) {
    const la_metadata_entry *entry =
        la_metadata_find(state->registry.type_map, LA_TYPE_MAP_CAPACITY - 1, la_type_map_hash(metadata), metadata);
    return entry != NULL ? entry->type_id : -1;
}

int32_t leakaudit_type_lookup(const void *metadata) { return la_type_lookup_in(la_state(), metadata); }

/// Writes a type's record (again, when its budget's source changed).
static void la_type_write_record(const la_type *type, int32_t id) {
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
    // A process whose shim copy attaches only when needed attaches now. Deallocations must be
    // routed through the hook before the first instance is tracked, and images loaded since the
    // last registration (dlopen) must be routed too.
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

// The set of tracked objects ----------------------------------------------------------------------
//
// Striped open-addressing hash sets of addresses (hash_set.h), so threads tracking different
// objects rarely contend: the top six bits of an address's hash pick its stripe, the low bits its
// slot. An entry is 8 bytes and a stripe grows at half load: 16 to 32 bytes per live tracked
// instance.

#if defined(__x86_64__)
#define LA_CPU_RELAX() __builtin_ia32_pause()
#else
#define LA_CPU_RELAX() __asm__ __volatile__("yield")
#endif

static inline void la_spin_lock(uint32_t *lock) {
    unsigned spins = 0;
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE) != 0) {
        if (++spins % 64 == 0) sched_yield();
        else LA_CPU_RELAX();
    }
}

static inline void la_spin_unlock(uint32_t *lock) { __atomic_store_n(lock, 0, __ATOMIC_RELEASE); }

/// The stripe that holds `hash`'s address.
static inline la_stripe *la_stripe_of(la_process_state *state, uint64_t hash) {
    return &state->registry.stripes[hash >> 58];
}

/// Rebuilds a stripe without tombstones, doubling it when live entries fill a quarter or more.
static bool la_stripe_grow(la_stripe *stripe) {
    size_t capacity = stripe->capacity == 0 ? 64 : stripe->capacity;
    if ((stripe->live + 1) * 4 >= capacity) capacity *= 2;
    uintptr_t *slots = calloc(capacity, sizeof(uintptr_t));
    if (slots == NULL) return false;
    for (size_t index = 0; index < stripe->capacity; index++) {
        uintptr_t object = stripe->slots[index];
        if (object > LA_HASH_SET_TOMBSTONE) la_hash_set_place(slots, capacity - 1, la_hash_pointer(object), object);
    }
    free(stripe->slots);
    stripe->slots = slots;
    stripe->capacity = capacity;
    stripe->used = stripe->live;
    return true;
}

/// Adds `object`; false when it was already present (or memory ran out).
static bool la_set_insert(la_process_state *state, uintptr_t object) {
    uint64_t hash = la_hash_pointer(object);
    la_stripe *stripe = la_stripe_of(state, hash);
    la_spin_lock(&stripe->lock);
    if ((stripe->used + 1) * 2 > stripe->capacity && !la_stripe_grow(stripe)) {
        la_spin_unlock(&stripe->lock);
        return false;
    }
    la_hash_set_insertion insertion = la_hash_set_insert(stripe->slots, stripe->capacity - 1, hash, object);
    if (insertion == LA_HASH_SET_FILLED_EMPTY) stripe->used++;
    if (insertion != LA_HASH_SET_PRESENT) stripe->live++;
    la_spin_unlock(&stripe->lock);
    return insertion != LA_HASH_SET_PRESENT;
}

/// Removes `object`; false when it was not tracked.
static bool la_set_remove(la_process_state *state, uintptr_t object) {
    uint64_t hash = la_hash_pointer(object);
    la_stripe *stripe = la_stripe_of(state, hash);
    la_spin_lock(&stripe->lock);
    bool found = stripe->capacity > 0 && la_hash_set_remove(stripe->slots, stripe->capacity - 1, hash, object);
    if (found) stripe->live--;
    la_spin_unlock(&stripe->lock);
    return found;
}

// Tracking ----------------------------------------------------------------------------------------

bool la_registry_track(la_process_state *state, const void *object, int32_t type_id, const void *entry_frame,
                       bool fresh_allocation, int64_t *live_after) {
    la_type *type = &state->registry.types[type_id];
    // A fresh allocation at an address still in the set means its previous object was freed
    // where no hook saw it: it is recorded all the same, and leak-audit retires the old one.
    if (!la_set_insert(state, (uintptr_t)object) && !fresh_allocation) {
        *live_after = __atomic_load_n(&type->live, __ATOMIC_ACQUIRE);
        return false;
    }
    // Capture only for leak-audit: on its own the library needs counts, not stacks.
    uint32_t stack = la_channel_active() ? la_stack_capture_and_intern(entry_frame) : LA_STACK_NONE;
    int64_t live = __atomic_add_fetch(&type->live, 1, __ATOMIC_ACQ_REL);
    int64_t peak = __atomic_load_n(&type->peak, __ATOMIC_RELAXED);
    while (live > peak
           && !__atomic_compare_exchange_n(&type->peak, &peak, live, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
    la_channel_event(LA_SLOT_ALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, stack,
                     state->tests.requested ? la_test_tag(state) : 0);
    *live_after = live;
    return true;
}

leakaudit_track_result leakaudit_track(const void *object, int32_t type_id) {
    leakaudit_track_result result = {.live = 0, .max = 0, .inserted = false, .claim_needed = false};
    la_process_state *state = la_state();
    if (type_id < 0 || type_id >= __atomic_load_n(&state->registry.type_total, __ATOMIC_ACQUIRE)) return result;
    la_type *type = &state->registry.types[type_id];
    result.max = type->max;
    // A type first seen through a budget pattern or the census: the code's budget wins.
    result.claim_needed = __atomic_load_n(&type->budget_source, __ATOMIC_ACQUIRE) != LA_BUDGET_CODE;
    result.inserted = la_registry_track(state, object, type_id, __builtin_frame_address(0), false, &result.live);
    return result;
}

void la_registry_on_dealloc(const void *object) {
    la_process_state *state = la_state();
    if (__atomic_load_n(&state->registry.type_total, __ATOMIC_RELAXED) == 0) return;
    // A Swift heap object starts with its metadata pointer, which stays the dynamic type's
    // through deinitialization.
    const void *metadata = *(const void *const *)object;
    int32_t type_id = la_type_lookup_in(state, metadata);
    if (type_id < 0) return;
    if (!la_set_remove(state, (uintptr_t)object)) return;
    __atomic_sub_fetch(&state->registry.types[type_id].live, 1, __ATOMIC_ACQ_REL);
    la_channel_event(LA_SLOT_DEALLOC, 0, (uint32_t)type_id, (uint64_t)(uintptr_t)object, 0, 0);
}
