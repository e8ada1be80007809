// Observing deallocations: every loaded image reaches the Swift runtime's
// swift_deallocClassInstance through its global offset table (the runtime is a shared library), so
// rewriting those table entries to point at a hook lets the registry see each class instance die
// for a few nanoseconds, with no LD_PRELOAD and no change to the user's code. heaptrack's runtime
// injection rewrites the same tables. The hook forwards to the runtime's own function.
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
__attribute__((visibility("default"))) void leakaudit_hook_swift_deallocClassInstance(void *object, size_t size,
                                                                                     size_t align_mask);
__attribute__((visibility("default"))) void leakaudit_hook_swift_deallocPartialClassInstance(void *object,
                                                                                            const void *metadata,
                                                                                            size_t size,
                                                                                            size_t align_mask);

__attribute__((visibility("default"))) void *leakaudit_hook_swift_allocObject(const void *metadata, size_t size,
                                                                              size_t align_mask);

/// Sees every Swift heap object that an image allocates through the runtime, when allocations are
/// watched (budget patterns, census). The capture starts at this frame, so the first frame
/// recorded is the allocating code's.
void *leakaudit_hook_swift_allocObject(const void *metadata, size_t size, size_t align_mask) {
    la_process_state *state = la_state();
    void *object = state->hooks.real_alloc(metadata, size, align_mask);
    // Most classes were decided against once: one probe of the decision table, inline.
    int32_t decision = object != NULL ? la_watch_cached(state, metadata) : -1;
    if (__builtin_expect(decision != -1, 0)) la_watch_on_alloc(state, object, metadata, decision, __builtin_frame_address(0));
    return object;
}

/// Records the deallocation of `object` if it is a tracked instance: the hooks' way for an object
/// whose metadata's filter bit is set (a tracked type, or another sharing its bit).
static void la_note_dealloc(la_process_state *state, const void *object) {
    const void *metadata = *(const void *const *)object;
    const la_metadata_entry *entry =
        la_metadata_find(state->registry.type_map, LA_TYPE_MAP_CAPACITY - 1, la_type_map_hash(metadata), metadata);
    if (entry != NULL && entry->type_id >= 0) la_registry_on_dealloc(state, object, entry->type_id);
}

/// The state when the hooks' way is a test and a jump: it is resolved and `object`'s type is not
/// tracked (nearly every deallocation); NULL otherwise, and the hook takes its slow way, a tail
/// call too, so that the common way saves no register.
static inline __attribute__((always_inline)) la_process_state *la_untracked_dealloc(const void *object) {
    la_process_state *state = __atomic_load_n(&la_resolved_state, __ATOMIC_ACQUIRE);
    return __builtin_expect(state != NULL && !la_may_be_tracked(state, object), 1) ? state : NULL;
}

/// The slow way of the deallocation hooks: `real` is `offsetof` the runtime function in the hooks'
/// state, so that one function serves the two hooks of the same signature.
static __attribute__((noinline)) void la_dealloc_slow(void *object, size_t size, size_t align_mask, size_t real) {
    la_process_state *state = la_state();
    // The type map answers for an object whose filter bit another type set, too.
    if (object != NULL) la_note_dealloc(state, object);
    (*(la_dealloc_fn *)((char *)&state->hooks + real))(object, size, align_mask);
}

__attribute__((visibility("default"))) void leakaudit_hook_swift_deallocObject(void *object, size_t size,
                                                                               size_t align_mask);

/// Foundation frees its CF-bridged objects (NSURL, __NSCFType…) with swift_deallocObject rather
/// than swift_deallocClassInstance; other heap objects pass through here too and are ignored,
/// since only tracked class metadata is looked up.
void leakaudit_hook_swift_deallocObject(void *object, size_t size, size_t align_mask) {
    la_process_state *state = la_untracked_dealloc(object);
    if (state == NULL) {
        la_dealloc_slow(object, size, align_mask, offsetof(la_hooks_state, real_dealloc_object));
        return;
    }
    state->hooks.real_dealloc_object(object, size, align_mask);
}

void leakaudit_hook_swift_deallocClassInstance(void *object, size_t size, size_t align_mask) {
    la_process_state *state = la_untracked_dealloc(object);
    if (state == NULL) {
        la_dealloc_slow(object, size, align_mask, offsetof(la_hooks_state, real_dealloc));
        return;
    }
    state->hooks.real_dealloc(object, size, align_mask);
}

/// The slow way of the partial-deallocation hook (la_dealloc_slow).
static __attribute__((noinline)) void la_dealloc_partial_slow(void *object, const void *metadata, size_t size,
                                                              size_t align_mask) {
    la_process_state *state = la_state();
    if (object != NULL) la_note_dealloc(state, object);
    state->hooks.real_dealloc_partial(object, metadata, size, align_mask);
}

void leakaudit_hook_swift_deallocPartialClassInstance(void *object, const void *metadata, size_t size,
                                                      size_t align_mask) {
    la_process_state *state = la_untracked_dealloc(object);
    if (state == NULL) {
        la_dealloc_partial_slow(object, metadata, size, align_mask);
        return;
    }
    state->hooks.real_dealloc_partial(object, metadata, size, align_mask);
}

__attribute__((visibility("default"))) void leakaudit_hook_swift_task_localValuePush(const void *key, void *value,
                                                                                    const void *value_type);
__attribute__((visibility("default"))) void leakaudit_hook_swift_task_localValuePop(void);

/// The probe's answer now: the calling task's running Swift Testing test, or LA_TEST_NONE.
static inline uint32_t la_test_scope_probe_now(uint32_t (*probe)(void)) {
    return probe != NULL ? probe() : LA_TEST_NONE;
}

/// Swift Testing's runner pushes a task-local runtime state around each test (and each suite, and
/// each configuration change): asking which test runs before and after each push and pop tells
/// when a test starts and ends, in whatever task runs it.
void leakaudit_hook_swift_task_localValuePush(const void *key, void *value, const void *value_type) {
    la_process_state *state = la_state();
    uint32_t (*probe)(void) = __atomic_load_n(&state->tests.scope_probe, __ATOMIC_ACQUIRE);
    uint32_t before = la_test_scope_probe_now(probe);
    state->hooks.real_task_local_push(key, value, value_type);
    la_test_scope_around(before, la_test_scope_probe_now(probe));
}

void leakaudit_hook_swift_task_localValuePop(void) {
    la_process_state *state = la_state();
    uint32_t (*probe)(void) = __atomic_load_n(&state->tests.scope_probe, __ATOMIC_ACQUIRE);
    uint32_t before = la_test_scope_probe_now(probe);
    state->hooks.real_task_local_pop();
    la_test_scope_around(before, la_test_scope_probe_now(probe));
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
        default: break;
        }
    }
    return tables->symbols != NULL && tables->strings != NULL;
}

/// True when `address` is the deallocation hook of some copy of this shim (found by its exported
/// name; a copy in an image that exports nothing is not recognised).
static bool la_is_some_copys_hook(uintptr_t address) {
    Dl_info info;
    return dladdr((void *)address, &info) != 0 && info.dli_sname != NULL && info.dli_saddr == (void *)address
        && strncmp(info.dli_sname, "leakaudit_hook_", 15) == 0;
}

/// Writes `value` into a slot on a page that RELRO made read-only, and makes it read-only again.
static bool la_write_protected_slot(void **slot, void *value, uintptr_t page, uintptr_t page_size) {
    if (mprotect((void *)page, (size_t)page_size, PROT_READ | PROT_WRITE) != 0) return false;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    mprotect((void *)page, (size_t)page_size, PROT_READ);
    return true;
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
    if (strcmp(name, "swift_deallocObject") == 0) {
        // Every heap object (boxes, closure contexts) is freed this way: only worth the cost when
        // Foundation's own types may be watched.
        if (!state->watch.allocations) return false;
        *hook = (void *)leakaudit_hook_swift_deallocObject;
        *real = (void *)state->hooks.real_dealloc_object;
    } else if (strcmp(name, "swift_allocObject") == 0) {
        if (!state->watch.allocations) return false;
        *hook = (void *)leakaudit_hook_swift_allocObject;
        *real = (void *)state->hooks.real_alloc;
    } else if (strcmp(name, "swift_deallocClassInstance") == 0) {
        *hook = (void *)leakaudit_hook_swift_deallocClassInstance;
        *real = (void *)state->hooks.real_dealloc;
    } else if (strcmp(name, "swift_deallocPartialClassInstance") == 0) {
        *hook = (void *)leakaudit_hook_swift_deallocPartialClassInstance;
        *real = (void *)state->hooks.real_dealloc_partial;
    } else {
        return false;
    }
    return *real != NULL;
}

/// Routes the entries of `set` in one image; returns how many were routed.
static uint32_t la_patch_image(la_process_state *state, const struct dl_phdr_info *info, la_patch_set set) {
    uint32_t routed = 0;
    la_image_tables tables;
    if (!la_read_tables(info, &tables)) return 0;
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    // The dynamic linker makes read-only only the whole pages inside PT_GNU_RELRO; every other
    // page holding a table entry (a lazily bound .got.plt) stays writable.
    uintptr_t relro_start = 0, relro_end = 0;
    uintptr_t image_start = UINTPTR_MAX, image_end = 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[index];
        uintptr_t start = info->dlpi_addr + phdr->p_vaddr;
        if (phdr->p_type == PT_GNU_RELRO) {
            relro_start = start & ~(page_size - 1);
            relro_end = (start + phdr->p_memsz) & ~(page_size - 1);
        } else if (phdr->p_type == PT_LOAD) {
            if (start < image_start) image_start = start;
            if (start + phdr->p_memsz > image_end) image_end = start + phdr->p_memsz;
        }
    }
    for (int table = 0; table < 2; table++) {
        const ElfW(Rela) *relocations = tables.relocations[table];
        if (relocations == NULL) continue;
        for (size_t index = 0; index < tables.relocation_counts[table]; index++) {
            const ElfW(Rela) *relocation = &relocations[index];
            if (!LA_RELOC_IS_SLOT(ELF64_R_TYPE(relocation->r_info))) continue;
            size_t symbol_index = ELF64_R_SYM(relocation->r_info);
            if (symbol_index == 0) continue;
            const char *name = tables.strings + tables.symbols[symbol_index].st_name;
            void *hook = NULL, *real = NULL;
            if (!la_hook_for(state, set, name, &hook, &real)) continue;
            void **slot = (void **)(info->dlpi_addr + relocation->r_offset);
            // Take over only an entry bound to the runtime or not bound yet (a lazy stub inside
            // the image). Anything else is another interposer's, such as a copy of this shim in
            // a library loaded with RTLD_LOCAL: replacing it would blind that copy's registry.
            uintptr_t current = (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
            if (current == (uintptr_t)hook) continue;
            bool lazy_stub = current >= image_start && current < image_end && !la_is_some_copys_hook(current);
            if (current != (uintptr_t)real && !lazy_stub) continue;
            uintptr_t page = (uintptr_t)slot & ~(page_size - 1);
            if (page >= relro_start && page + page_size <= relro_end) {
                if (!la_write_protected_slot(slot, hook, page, page_size)) continue;
            } else {
                __atomic_store_n(slot, hook, __ATOMIC_RELEASE);
            }
            routed++;
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
    state->hooks.patched_slot_count += la_patch_image(state, info, LA_PATCH_RUNTIME);
    return 0;
}

static int la_patch_test_scopes_visit(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    uint32_t *routed = context;
    if (info->dlpi_name == NULL || strncmp(la_base_name(info->dlpi_name), "libTesting.so", 13) != 0) return 0;
    *routed += la_patch_image(la_state(), info, LA_PATCH_TEST_SCOPES);
    return 0;
}

bool la_hooks_install_test_scopes(void) {
    la_hooks_state *hooks = &la_state()->hooks;
    if (hooks->real_task_local_push == NULL) {
        hooks->real_task_local_push = (la_task_local_push_fn)dlsym(RTLD_DEFAULT, "swift_task_localValuePush");
        hooks->real_task_local_pop = (la_task_local_pop_fn)dlsym(RTLD_DEFAULT, "swift_task_localValuePop");
    }
    if (hooks->real_task_local_push == NULL || hooks->real_task_local_pop == NULL) return false;
    uint32_t routed = 0;
    dl_iterate_phdr(la_patch_test_scopes_visit, &routed);
    // Both a push and a pop entry, or the scopes cannot be followed.
    return routed >= 2;
}

bool la_hooks_check(void) {
    la_hooks_state *hooks = &la_state()->hooks;
    if (!hooks->checked) {
        hooks->checked = true;
        hooks->real_dealloc = (la_dealloc_fn)dlsym(RTLD_DEFAULT, "swift_deallocClassInstance");
        hooks->real_dealloc_partial = (la_dealloc_partial_fn)dlsym(RTLD_DEFAULT, "swift_deallocPartialClassInstance");
        hooks->real_alloc = (la_alloc_fn)dlsym(RTLD_DEFAULT, "swift_allocObject");
        hooks->real_dealloc_object = (la_dealloc_fn)dlsym(RTLD_DEFAULT, "swift_deallocObject");
        bool found = hooks->real_dealloc != NULL && hooks->real_dealloc_partial != NULL && hooks->real_alloc != NULL;
        if (found) {
            // With -static-stdlib the runtime lives in the main program, whose calls to it are
            // direct: there is no table entry to route, so deallocations stay invisible.
            Dl_info where;
            found = dladdr((void *)hooks->real_dealloc, &where) != 0 && where.dli_fname != NULL
                && strstr(where.dli_fname, "libswiftCore.so") != NULL;
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
