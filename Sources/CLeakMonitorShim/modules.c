// The module map: which ELF images are loaded where, with their build-ids, so that leak-audit can
// symbolize raw return addresses after the target has exited.
#include "shim_internal.h"

#include <link.h>
#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The module map (state->modules) is guarded by the slow lock.

bool la_modules_contain(uintptr_t address) {
    const la_process_state *state = la_state();
    for (int index = 0; index < state->modules.count; index++) {
        if (address >= state->modules.known[index].start && address < state->modules.known[index].end) return true;
    }
    return false;
}

static bool la_known_start(const la_process_state *state, uintptr_t start) {
    for (int index = 0; index < state->modules.count; index++) {
        if (state->modules.known[index].start == start) return true;
    }
    return false;
}

/// Copies the GNU build-id note of a loaded image into `out`; returns its size or 0.
static size_t la_build_id(const struct dl_phdr_info *info, uint8_t *out, size_t capacity) {
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[index];
        if (phdr->p_type != PT_NOTE) continue;
        const uint8_t *cursor = (const uint8_t *)(info->dlpi_addr + phdr->p_vaddr);
        const uint8_t *end = cursor + phdr->p_memsz;
        while (cursor + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)cursor;
            size_t name_size = (note->n_namesz + 3u) & ~3u;
            size_t desc_size = (note->n_descsz + 3u) & ~3u;
            const uint8_t *name = cursor + sizeof(ElfW(Nhdr));
            const uint8_t *desc = name + name_size;
            if (desc + desc_size > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                size_t size = note->n_descsz < capacity ? note->n_descsz : capacity;
                memcpy(out, desc, size);
                return size;
            }
            cursor = desc + desc_size;
        }
    }
    return 0;
}

static int la_module_visit(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    int *visited = context;
    bool is_main_program = (*visited)++ == 0;
    la_process_state *state = la_state();

    uintptr_t low = UINTPTR_MAX, high = 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *phdr = &info->dlpi_phdr[index];
        if (phdr->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + phdr->p_vaddr;
        if (start < low) low = start;
        if (start + phdr->p_memsz > high) high = start + phdr->p_memsz;
    }
    if (high == 0 || la_known_start(state, low) || state->modules.count >= LA_MAX_MODULES) return 0;

    char path[PATH_MAX];
    size_t path_size = 0;
    if (is_main_program || info->dlpi_name == NULL || info->dlpi_name[0] == '\0') {
        if (!is_main_program) return 0;  // the vDSO and other file-less images: nothing to read later
        ssize_t length = readlink("/proc/self/exe", path, sizeof path);
        if (length <= 0) return 0;
        path_size = (size_t)length;
    } else {
        path_size = strnlen(info->dlpi_name, sizeof path);
        memcpy(path, info->dlpi_name, path_size);
    }

    uint8_t build_id[64];
    size_t build_id_size = la_build_id(info, build_id, sizeof build_id);

    state->modules.known[state->modules.count].start = low;
    state->modules.known[state->modules.count].end = high;
    int module_index = state->modules.count++;

    size_t payload_size = sizeof(la_wire_module) + build_id_size + path_size;
    uint8_t *payload = malloc(payload_size);
    if (payload == NULL) return 0;
    la_wire_module fixed = {
        .start = low, .end = high,
        .build_id_size = (uint32_t)build_id_size, .path_size = (uint32_t)path_size,
    };
    memcpy(payload, &fixed, sizeof fixed);
    memcpy(payload + sizeof fixed, build_id, build_id_size);
    memcpy(payload + sizeof fixed + build_id_size, path, path_size);
    la_channel_blob(LA_BLOB_MODULE, (uint64_t)module_index, info->dlpi_addr, payload, payload_size);
    free(payload);
    return 0;
}

void la_modules_sync(void) {
    if (!la_channel_active(la_state())) return;
    int visited = 0;
    dl_iterate_phdr(la_module_visit, &visited);
}
