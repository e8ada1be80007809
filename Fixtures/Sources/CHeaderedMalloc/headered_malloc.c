// A malloc that puts a 16-byte header before every block it returns, over glibc's own (its
// `__libc_malloc` family), as an interposer such as ordo-one/malloc-interposer does: every block
// the program sees starts 16 bytes into one of glibc's. Defined in the executable, these symbols
// take the place of the C library's for the whole process, the Swift runtime included.
//
// The header holds the address glibc returned (freed with it) and the size asked for.

#include "CHeaderedMalloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static atomic_size_t blocks;

size_t headered_malloc_blocks(void) { return atomic_load(&blocks); }

/// The block inside `base` (from glibc) at `offset`, its header filled.
static void *headered(void *base, size_t offset, size_t size) {
    if (base == NULL) return NULL;
    char *block = (char *)base + offset;
    ((void **)block)[-2] = base;
    ((size_t *)block)[-1] = size;
    atomic_fetch_add_explicit(&blocks, 1, memory_order_relaxed);
    return block;
}

/// A block of `size` bytes aligned to `alignment` (a power of two): at least 16 bytes of header
/// before it.
static void *aligned(size_t alignment, size_t size) {
    if (alignment <= headered_malloc_header_size) {
        if (size > SIZE_MAX - headered_malloc_header_size) return NULL;
        return headered(__libc_malloc(size + headered_malloc_header_size), headered_malloc_header_size, size);
    }
    if (size > SIZE_MAX - alignment) return NULL;
    return headered(__libc_memalign(alignment, size + alignment), alignment, size);
}

void *malloc(size_t size) { return aligned(16, size); }

void free(void *pointer) {
    if (pointer != NULL) __libc_free(((void **)pointer)[-2]);
}

void *calloc(size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    void *block = malloc(count * size);
    if (block != NULL) memset(block, 0, count * size);
    return block;
}

size_t malloc_usable_size(void *pointer) { return pointer == NULL ? 0 : ((size_t *)pointer)[-1]; }

void *realloc(void *pointer, size_t size) {
    if (pointer == NULL) return malloc(size);
    if (size == 0) {
        free(pointer);
        return NULL;
    }
    void *block = malloc(size);
    if (block == NULL) return NULL;
    size_t old = malloc_usable_size(pointer);
    memcpy(block, pointer, old < size ? old : size);
    free(pointer);
    return block;
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *block = aligned(alignment, size);
    if (block == NULL) return ENOMEM;
    *result = block;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return aligned(alignment, size);
}

void *memalign(size_t alignment, size_t size) { return aligned_alloc(alignment, size); }
