#ifndef C_HEADERED_MALLOC_H
#define C_HEADERED_MALLOC_H

#include <stddef.h>

/// The bytes of the header this malloc puts before every block it returns.
static const size_t headered_malloc_header_size = 16;

/// How many blocks this malloc has handed out: linking this target replaces the process's malloc.
size_t headered_malloc_blocks(void);

#endif
