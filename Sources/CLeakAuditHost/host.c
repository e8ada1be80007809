#include "leak_audit_host.h"

#include <sys/mman.h>

int leakaudit_host_memfd_create(const char *name) { return memfd_create(name, 0); }
