// Observing deallocations. When the last strong reference to a class instance goes, the runtime
// calls the destroy function that its class metadata holds (the class's deallocating deinit): for
// each tracked type, the shim points that word of its metadata at a hook, which records the death
// and calls the type's own function. So the death of an instance of a tracked type costs a type
// lookup, and every other object dies exactly as it would without the shim. A class whose init
// fails is freed by swift_deallocPartialClassInstance instead (rare). An object the optimizer saw
// die where it was made (allocated and released in one function, never escaping, but of a size
// only known at run time, so not on the stack) is not released at all: the compiled code marks it
// with swift_setDeallocating, runs its deinit's body inline and frees it with
// swift_deallocClassInstance, and no destroy word is read. swift_setDeallocating is routed too:
// compiled code calls it for such deaths (a release goes through the runtime, which calls its own
// directly), so an ordinary death pays nothing for it. Watch mode sees every allocation through
// swift_allocObject. Every loaded image reaches these through its global
// offset table (the runtime is a shared library), so rewriting those table entries routes them
// through hooks too, as heaptrack's runtime injection does for malloc. The hooks forward to the
// runtime's own functions.
#include "shim_internal.h"

#include <dlfcn.h>
#include <stddef.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// The patched-image list is guarded by the slow lock; the real entry points are set before any
// table entry points at a hook.

// The hooks are exported under a recognisable name, so that a copy of the shim can tell another
// copy's hook (in a library loaded with RTLD_LOCAL, with a registry of its own) from a lazy stub.
__attribute__((visibility("default"))) void leakaudit_hook_swift_deallocPartialClassInstance(void *object,
                                                                                            const void *metadata,
                                                                                            size_t size,
                                                                                            size_t align_mask);

__attribute__((visibility("default"))) void leakaudit_hook_swift_setDeallocating(void *object);

__attribute__((visibility("default"))) void *leakaudit_hook_swift_allocObject(const void *metadata, size_t size,
                                                                              size_t align_mask);

/// Tracks `object`, just allocated by a hooked entry point, when its class is watched: `decision`
/// is the cached one (la_watch_cached), -2 when not decided yet. `hook_frame` is the hook's frame
/// record, where the stack capture starts.
static void la_watch_allocated(la_process_state *state, void *object, const void *metadata, int32_t decision,
                               const uintptr_t hook_frame[2]) {
    if (decision == -2) decision = la_watch_decide(state, metadata);
    if (decision >= 0) {
        int64_t live = 0;
        la_registry_track(state, object, decision, hook_frame, true, &live);
    }
}

/// The allocation hook's slow way: a class watched, or not decided yet (`decision` -2).
/// `caller_frame` and `return_address` are the hook's frame record (the allocating code's frame
/// pointer and the hook's return address into that code): the capture starts from a copy of them,
/// so the first frame recorded is the allocating code's, however the hook reached this function.
static __attribute__((noinline)) void *la_hook_allocate_watched(const void *metadata, size_t size, size_t align_mask,
                                                                int32_t decision, uintptr_t caller_frame,
                                                                uintptr_t return_address) {
    la_process_state *state = la_state();
    uintptr_t hook_frame[2] = {caller_frame, return_address};
    void *object = state->hooks.real_alloc(metadata, size, align_mask);
    if (object != NULL) la_watch_allocated(state, object, metadata, decision, hook_frame);
    return object;
}

/// Sees every Swift heap object that an image allocates through the runtime, when allocations are
/// watched (budget patterns, census). Most classes were decided against once: one probe of the
/// decision table, inline, then the runtime's own function as a tail call. Everything else takes
/// the slow way, a function of its own, so that the common way saves and restores no register.
void *leakaudit_hook_swift_allocObject(const void *metadata, size_t size, size_t align_mask) {
    // Before this copy found the state (its first allocation), the class counts as undecided.
    la_process_state *state = la_state_if_resolved();
    int32_t decision = state != NULL ? la_watch_cached(state, metadata) : -2;
    if (__builtin_expect(decision == -1, 1)) return state->hooks.real_alloc(metadata, size, align_mask);
    const uintptr_t *frame = __builtin_frame_address(0);
    return la_hook_allocate_watched(metadata, size, align_mask, decision, frame[0], frame[1]);
}

// `ManagedBuffer.create(minimumCapacity:makingHeaderWith:)`, the standard library's own code: an
// unoptimized build (every `swift test`) calls it rather than inlining it, and it allocates with
// the runtime's entry point directly, which no table routes. So the objects of a ManagedBuffer
// subclass (a lock box, a ring buffer) were never watched. The hook calls it through Swift's
// calling convention (the metatype in the self register, an error register for what the header's
// factory throws) and watches the object it returns.
#define LA_MANAGED_BUFFER_CREATE "$ss13ManagedBufferC6create15minimumCapacity16makingHeaderWithAByxq_GSi_xAFKXEtKFZ"

typedef __attribute__((swiftcall)) void *(*la_managed_create_fn)(intptr_t minimum_capacity, void *factory,
                                                                  void *factory_context,
                                                                  __attribute__((swift_context)) void *metatype,
                                                                  __attribute__((swift_error_result)) void **error);

/// The standard library's function, resolved once (the same for every copy of the shim).
static la_managed_create_fn la_real_managed_create;

__attribute__((visibility("default"), swiftcall)) void *leakaudit_hook_managed_buffer_create(
    intptr_t minimum_capacity, void *factory, void *factory_context, __attribute__((swift_context)) void *metatype,
    __attribute__((swift_error_result)) void **error);

__attribute__((swiftcall)) void *leakaudit_hook_managed_buffer_create(intptr_t minimum_capacity, void *factory,
                                                                      void *factory_context,
                                                                      __attribute__((swift_context)) void *metatype,
                                                                      __attribute__((swift_error_result)) void **error) {
    const uintptr_t *frame = __builtin_frame_address(0);
    uintptr_t hook_frame[2] = {frame[0], frame[1]};
    void *object = la_real_managed_create(minimum_capacity, factory, factory_context, metatype, error);
    la_process_state *state = la_state_if_resolved();
    if (object == NULL || *error != NULL || state == NULL) return object;
    const void *metadata = *(const void *const *)object;
    la_watch_allocated(state, object, metadata, la_watch_cached(state, metadata), hook_frame);
    return object;
}

/// Records the death of `object`, freed without its destroy function, when its type is tracked.
static void la_record_death_without_destroy(la_process_state *state, void *object) {
    int32_t type_id = object != NULL ? la_type_lookup_in(state, *(const void *const *)object) : -1;
    if (type_id >= 0) la_registry_on_dealloc(state, object, type_id);
}

/// A class whose init failed (after validate, or after a watched allocation) is freed here,
/// without its destroy function.
void leakaudit_hook_swift_deallocPartialClassInstance(void *object, const void *metadata, size_t size,
                                                      size_t align_mask) {
    la_process_state *state = la_state();
    la_record_death_without_destroy(state, object);
    state->hooks.real_dealloc_partial(object, metadata, size, align_mask);
}

/// An object whose deinit the compiled code is about to run inline, then free it: its death,
/// recorded before it is deinitialized and freed, as the destroy hook records one. (Were the destroy
/// word read after all, the object is out of the set by then, and no second death is written.)
void leakaudit_hook_swift_setDeallocating(void *object) {
    la_process_state *state = la_state();
    la_record_death_without_destroy(state, object);
    state->hooks.real_set_deallocating(object);
}

__attribute__((visibility("default"))) void leakaudit_hook_swift_task_localValuePush(const void *key, void *value,
                                                                                    const void *value_type);
__attribute__((visibility("default"))) void leakaudit_hook_swift_task_localValuePop(void);

/// The probe's answer now: the calling task's running Swift Testing test, or LA_TEST_NONE.
/// `after_push`: just after a push, which may have made a test current.
static inline uint32_t la_test_scope_probe_now(uint32_t (*probe)(bool), bool after_push) {
    return probe != NULL ? probe(after_push) : LA_TEST_NONE;
}

/// Swift Testing's runner pushes a task-local runtime state around each test (and each suite, and
/// each configuration change): asking which test runs before and after each push and pop tells
/// when a test starts and ends, in whatever task runs it.
void leakaudit_hook_swift_task_localValuePush(const void *key, void *value, const void *value_type) {
    la_process_state *state = la_state();
    uint32_t (*probe)(bool) = __atomic_load_n(&state->tests.scope_probe, __ATOMIC_ACQUIRE);
    uint32_t before = la_test_scope_probe_now(probe, false);
    la_test_scopes_changed(state);
    state->hooks.real_task_local_push(key, value, value_type);
    la_test_scope_around(before, la_test_scope_probe_now(probe, true));
    la_test_scopes_changed(state);
}

void leakaudit_hook_swift_task_localValuePop(void) {
    la_process_state *state = la_state();
    uint32_t (*probe)(bool) = __atomic_load_n(&state->tests.scope_probe, __ATOMIC_ACQUIRE);
    uint32_t before = la_test_scope_probe_now(probe, false);
    la_test_scopes_changed(state);
    state->hooks.real_task_local_pop();
    la_test_scope_around(before, la_test_scope_probe_now(probe, false));
    la_test_scopes_changed(state);
}

bool leakaudit_observes_deallocations(void) {
    return __atomic_load_n(&la_state()->hooks.usable, __ATOMIC_ACQUIRE);
}

#if defined(__x86_64__)
#define LA_RELOC_IS_SLOT(type) ((type) == R_X86_64_JUMP_SLOT || (type) == R_X86_64_GLOB_DAT || (type) == R_X86_64_64)
#elif defined(__aarch64__)
#define LA_RELOC_IS_SLOT(type) ((type) == R_AARCH64_JUMP_SLOT || (type) == R_AARCH64_GLOB_DAT || (type) == R_AARCH64_ABS64)
#else
#error "leak-audit's shim supports x86_64 and aarch64 Linux"
#endif

typedef struct la_image_tables {
    const ElfW(Sym) *symbols;
    const char *strings;
    const ElfW(Rela) *relocations[2];
    size_t relocation_counts[2];
    /// DT_RELACOUNT: the relative relocations that the link editor put first in DT_RELA, none of
    /// them a symbol's (most of a shared library's relocations: 38,000 of leak-audit's 40,000).
    size_t relative_count;
} la_image_tables;

uintptr_t la_dynamic_pointer(const struct dl_phdr_info *info, uintptr_t value) {
    return value < info->dlpi_addr ? value + info->dlpi_addr : value;
}

const ElfW(Dyn) *la_dynamic_section(const struct dl_phdr_info *info) {
    const ElfW(Dyn) *dynamic = NULL;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        if (info->dlpi_phdr[index].p_type == PT_DYNAMIC) {
            dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[index].p_vaddr);
        }
    }
    return dynamic;
}

static bool la_read_tables(const struct dl_phdr_info *info, la_image_tables *tables) {
    memset(tables, 0, sizeof *tables);
    const ElfW(Dyn) *dynamic = la_dynamic_section(info);
    if (dynamic == NULL) return false;
    for (; dynamic->d_tag != DT_NULL; dynamic++) {
        switch (dynamic->d_tag) {
        case DT_SYMTAB: tables->symbols = (const ElfW(Sym) *)la_dynamic_pointer(info, dynamic->d_un.d_ptr); break;
        case DT_STRTAB: tables->strings = (const char *)la_dynamic_pointer(info, dynamic->d_un.d_ptr); break;
        case DT_JMPREL: tables->relocations[0] = (const ElfW(Rela) *)la_dynamic_pointer(info, dynamic->d_un.d_ptr); break;
        case DT_PLTRELSZ: tables->relocation_counts[0] = dynamic->d_un.d_val / sizeof(ElfW(Rela)); break;
        case DT_RELA: tables->relocations[1] = (const ElfW(Rela) *)la_dynamic_pointer(info, dynamic->d_un.d_ptr); break;
        case DT_RELASZ: tables->relocation_counts[1] = dynamic->d_un.d_val / sizeof(ElfW(Rela)); break;
        case DT_RELACOUNT: tables->relative_count = dynamic->d_un.d_val; break;
        default: break;
        }
    }
    return tables->symbols != NULL && tables->strings != NULL;
}

/// True when `address` is a hook of some copy of this shim (found by its exported
/// name; a copy in an image that exports nothing is not recognised).
static bool la_is_some_copys_hook(uintptr_t address) {
    Dl_info info;
    return dladdr((void *)address, &info) != 0 && info.dli_sname != NULL && info.dli_saddr == (void *)address
        && strncmp(info.dli_sname, "leakaudit_hook_", 15) == 0;
}

/// The protection the dynamic linker left on the page of `address` in `info`'s image: its PT_LOAD
/// segment's, without write on the whole pages inside PT_GNU_RELRO; -1 when no segment of the
/// image holds `address`.
static int la_page_protection(const struct dl_phdr_info *info, uintptr_t address, uintptr_t page_size) {
    int protection = -1;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[index];
        uintptr_t start = info->dlpi_addr + phdr->p_vaddr;
        if (phdr->p_type != PT_LOAD || address < start || address >= start + phdr->p_memsz) continue;
        protection = ((phdr->p_flags & PF_R) ? PROT_READ : 0) | ((phdr->p_flags & PF_W) ? PROT_WRITE : 0)
            | ((phdr->p_flags & PF_X) ? PROT_EXEC : 0);
    }
    if (protection < 0) return -1;
    uintptr_t page = address & ~(page_size - 1);
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[index];
        if (phdr->p_type != PT_GNU_RELRO) continue;
        uintptr_t first = info->dlpi_addr + phdr->p_vaddr;
        if (page >= (first & ~(page_size - 1)) && page < ((first + phdr->p_memsz) & ~(page_size - 1))) {
            protection &= ~PROT_WRITE;
        }
    }
    return protection;
}

/// Writes `value` into the pointer-sized word at `slot`, whose page has `protection` (-1: outside
/// every image, such as the runtime's heap, which is writable): at once when the page is writable,
/// around an mprotect that gives the page its protection back otherwise. Caller holds the slow
/// lock, so that no other write to the page finds it made read-only again under its feet.
static bool la_store_word(void **slot, void *value, int protection, uintptr_t page_size) {
    if (protection < 0 || (protection & PROT_WRITE)) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return true;
    }
    void *page = (void *)((uintptr_t)slot & ~(page_size - 1));
    if (mprotect(page, (size_t)page_size, protection | PROT_WRITE) != 0) return false;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    mprotect(page, (size_t)page_size, protection);
    return true;
}

/// An address, and, when a loaded image holds it, that image's name and its page's protection
/// (la_page_protection).
typedef struct la_page_lookup {
    uintptr_t address;
    uintptr_t page_size;
    const char *image_name;
    int protection;
} la_page_lookup;

static int la_page_lookup_visit(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    la_page_lookup *lookup = context;
    lookup->protection = la_page_protection(info, lookup->address, lookup->page_size);
    if (lookup->protection < 0) return 0;
    lookup->image_name = info->dlpi_name;
    return 1;
}

/// The image that holds `address`, if any: its name and the protection of `address`'s page.
static la_page_lookup la_look_up_page(const void *address) {
    la_page_lookup lookup = {
        .address = (uintptr_t)address, .page_size = (uintptr_t)sysconf(_SC_PAGESIZE), .protection = -1};
    dl_iterate_phdr(la_page_lookup_visit, &lookup);
    return lookup;
}

const char *la_image_name_of(const void *address) {
    la_page_lookup lookup = la_look_up_page(address);
    return lookup.protection >= 0 ? lookup.image_name : NULL;
}

bool la_hooks_route_destroy_locked(la_process_state *state, int32_t type_id) {
    la_type *type = &state->registry.types[type_id];
    // Heap metadata: the destroy function, then the value witness table, precede the address
    // point (swift/ABI/Metadata.h, TargetHeapMetadataHeader).
    void **slot = (void **)type->metadata - 2;
    void *current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (current == NULL || current == (void *)leakaudit_hook_destroy) return false;
    // Another copy's hook (a copy with a registry of its own) stays in the chain: this hook calls it.
    __atomic_store_n(&type->original_destroy, (la_destroy_fn)current, __ATOMIC_RELEASE);
    la_page_lookup lookup = la_look_up_page(slot);
    return la_store_word(slot, (void *)leakaudit_hook_destroy, lookup.protection, lookup.page_size);
}

/// Which table entries a pass routes: the runtime's allocation and deallocation entry points in
/// every image, or Swift Testing's task-local pushes and pops in libTesting.
typedef enum la_patch_set { LA_PATCH_RUNTIME, LA_PATCH_TEST_SCOPES } la_patch_set;

/// The hook and the real function for table entry `name` in a pass over `set`; false when the pass
/// leaves that entry alone.
static bool la_hook_for(la_process_state *state, la_patch_set set, const char *name, void **hook, void **real) {
    if (set == LA_PATCH_TEST_SCOPES) {
        if (strcmp(name, "swift_task_localValuePush") == 0) {
            *hook = (void *)leakaudit_hook_swift_task_localValuePush;
            *real = (void *)state->hooks.real_task_local_push;
        } else if (strcmp(name, "swift_task_localValuePop") == 0) {
            *hook = (void *)leakaudit_hook_swift_task_localValuePop;
            *real = (void *)state->hooks.real_task_local_pop;
        } else {
            return false;
        }
        return *real != NULL;
    }
    if (strcmp(name, "swift_allocObject") == 0) {
        if (!state->watch.allocations) return false;
        *hook = (void *)leakaudit_hook_swift_allocObject;
        *real = (void *)state->hooks.real_alloc;
    } else if (name[0] == '$' && strcmp(name, LA_MANAGED_BUFFER_CREATE) == 0) {
        if (!state->watch.allocations) return false;
        if (la_real_managed_create == NULL) {
            la_real_managed_create = (la_managed_create_fn)dlsym(RTLD_DEFAULT, LA_MANAGED_BUFFER_CREATE);
        }
        *hook = (void *)leakaudit_hook_managed_buffer_create;
        *real = (void *)la_real_managed_create;
    } else if (strcmp(name, "swift_deallocPartialClassInstance") == 0) {
        *hook = (void *)leakaudit_hook_swift_deallocPartialClassInstance;
        *real = (void *)state->hooks.real_dealloc_partial;
    } else if (strcmp(name, "swift_setDeallocating") == 0) {
        *hook = (void *)leakaudit_hook_swift_setDeallocating;
        *real = (void *)state->hooks.real_set_deallocating;
    } else {
        return false;
    }
    return *real != NULL;
}

/// What routing the test scopes' entries found: how many push and pop entries reach the hooks
/// (routed now or before), and how many were left to another interposer or could not be written.
typedef struct la_scope_entries {
    uint32_t pushes;
    uint32_t pops;
    uint32_t missed;
} la_scope_entries;

/// Counts an entry of the test scopes' set that reaches `hook`.
static void la_count_scope_entry(la_scope_entries *entries, void *hook) {
    if (entries == NULL) return;
    if (hook == (void *)&leakaudit_hook_swift_task_localValuePush) entries->pushes++;
    if (hook == (void *)&leakaudit_hook_swift_task_localValuePop) entries->pops++;
}

/// Routes the entries of `set` in one image; returns how many were routed. `entries`, when
/// given, counts what became of each entry of the set.
static uint32_t la_patch_image(la_process_state *state, const struct dl_phdr_info *info, la_patch_set set,
                               la_scope_entries *entries) {
    uint32_t routed = 0;
    la_image_tables tables;
    if (!la_read_tables(info, &tables)) return 0;
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t image_start = UINTPTR_MAX, image_end = 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[index];
        uintptr_t start = info->dlpi_addr + phdr->p_vaddr;
        if (phdr->p_type == PT_LOAD) {
            if (start < image_start) image_start = start;
            if (start + phdr->p_memsz > image_end) image_end = start + phdr->p_memsz;
        }
    }
    for (int table = 0; table < 2; table++) {
        const ElfW(Rela) *relocations = tables.relocations[table];
        if (relocations == NULL) continue;
        // The relative relocations at the start of DT_RELA name no symbol: skipped whole.
        size_t first = table == 1 ? tables.relative_count : 0;
        for (size_t index = first; index < tables.relocation_counts[table]; index++) {
            const ElfW(Rela) *relocation = &relocations[index];
            if (!LA_RELOC_IS_SLOT(ELF64_R_TYPE(relocation->r_info))) continue;
            size_t symbol_index = ELF64_R_SYM(relocation->r_info);
            if (symbol_index == 0) continue;
            const char *name = tables.strings + tables.symbols[symbol_index].st_name;
            // Every routed entry point is a swift_ function or ManagedBuffer.create (`$ss13…`): most
            // names fail on their first bytes (a Swift image's are mangled, `$s…`), without a call.
            if ((name[0] != 's' || name[1] != 'w' || name[2] != 'i') && (name[0] != '$' || name[1] != 's' || name[2] != 's' || name[3] != '1'))
                continue;
            void *hook = NULL, *real = NULL;
            if (!la_hook_for(state, set, name, &hook, &real)) continue;
            void **slot = (void **)(info->dlpi_addr + relocation->r_offset);
            // Take over only an entry bound to the runtime or not bound yet (a lazy stub inside
            // the image). Anything else is another interposer's, such as a copy of this shim in
            // a library loaded with RTLD_LOCAL: replacing it would blind that copy's registry.
            uintptr_t current = (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (current == (uintptr_t)hook) {
                la_count_scope_entry(entries, hook);
                continue;
            }
            if (current != (uintptr_t)real) {
                bool lazy_stub = current >= image_start && current < image_end && !la_is_some_copys_hook(current);
                if (!lazy_stub) {
                    if (entries != NULL) entries->missed++;
                    continue;
                }
            }
            // RELRO made some table pages read-only; a lazily bound .got.plt stays writable.
            if (!la_store_word(slot, hook, la_page_protection(info, (uintptr_t)slot, page_size), page_size)) {
                if (entries != NULL) entries->missed++;
                continue;
            }
            routed++;
            la_count_scope_entry(entries, hook);
        }
    }
    return routed;
}

static int la_patch_visit(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    la_process_state *state = context;
    if (state->hooks.patched_image_count >= LA_MAX_PATCHED_IMAGES) return 1;
    for (int index = 0; index < state->hooks.patched_image_count; index++) {
        if (state->hooks.patched_images[index] == info->dlpi_addr) return 0;
    }
    state->hooks.patched_images[state->hooks.patched_image_count++] = info->dlpi_addr;
    const char *name = info->dlpi_name;
    // The runtime calls its own entry points directly; its table has nothing of ours to route.
    if (name != NULL && strstr(name, "libswiftCore.so") != NULL) return 0;
    if (name != NULL && strncmp(name, "linux-vdso", 10) == 0) return 0;
    state->hooks.patched_slot_count += la_patch_image(state, info, LA_PATCH_RUNTIME, NULL);
    return 0;
}

/// dl_iterate_phdr's context for the test scopes: the entries routed, and what became of each.
typedef struct la_scope_patching {
    uint32_t routed;
    la_scope_entries entries;
} la_scope_patching;

static int la_patch_test_scopes_visit(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    la_scope_patching *patching = context;
    if (info->dlpi_name == NULL || strncmp(la_base_name(info->dlpi_name), "libTesting.so", 13) != 0) return 0;
    patching->routed += la_patch_image(la_state(), info, LA_PATCH_TEST_SCOPES, &patching->entries);
    return 0;
}

bool la_hooks_install_test_scopes(bool *every_entry) {
    *every_entry = false;
    la_hooks_state *hooks = &la_state()->hooks;
    if (hooks->real_task_local_push == NULL) {
        hooks->real_task_local_push = (la_task_local_push_fn)dlsym(RTLD_DEFAULT, "swift_task_localValuePush");
        hooks->real_task_local_pop = (la_task_local_pop_fn)dlsym(RTLD_DEFAULT, "swift_task_localValuePop");
    }
    if (hooks->real_task_local_push == NULL || hooks->real_task_local_pop == NULL) return false;
    la_scope_patching patching = {0};
    dl_iterate_phdr(la_patch_test_scopes_visit, &patching);
    *every_entry =
        patching.entries.pushes > 0 && patching.entries.pops > 0 && patching.entries.missed == 0;
    // Both a push and a pop entry, or the scopes cannot be followed.
    return patching.routed >= 2;
}

bool la_hooks_check(void) {
    la_hooks_state *hooks = &la_state()->hooks;
    if (!hooks->checked) {
        hooks->checked = true;
        hooks->real_dealloc_partial = (la_dealloc_partial_fn)dlsym(RTLD_DEFAULT, "swift_deallocPartialClassInstance");
        hooks->real_alloc = (la_alloc_fn)dlsym(RTLD_DEFAULT, "swift_allocObject");
        hooks->real_set_deallocating = (la_set_deallocating_fn)dlsym(RTLD_DEFAULT, "swift_setDeallocating");
        bool found = hooks->real_dealloc_partial != NULL && hooks->real_alloc != NULL;
        if (found) {
            // With -static-stdlib the runtime lives in the main program, whose calls to it are
            // direct: there is no table entry to route, so failed inits and allocations stay
            // invisible.
            const char *image = la_image_name_of((const void *)hooks->real_dealloc_partial);
            found = image != NULL && strstr(image, "libswiftCore.so") != NULL;
        }
        __atomic_store_n(&hooks->usable, found, __ATOMIC_RELEASE);
    }
    return hooks->usable;
}

bool la_hooks_install(void) {
    la_process_state *state = la_state();
    if (!la_hooks_check()) return false;
    dl_iterate_phdr(la_patch_visit, state);
    return true;
}
