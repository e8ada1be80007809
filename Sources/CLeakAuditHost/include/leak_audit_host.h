// System calls the leak-audit executable needs that Swift's Glibc module does not import.
#ifndef LEAK_AUDIT_HOST_H
#define LEAK_AUDIT_HOST_H

#include <stddef.h>
#include <stdint.h>

/// Creates an anonymous shared file that child processes inherit (no close-on-exec), or -1 with errno.
int leakaudit_host_memfd_create(const char *name);

#endif
