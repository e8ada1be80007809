#include "leak_audit_host.h"

#include <fcntl.h>
#include <sys/mman.h>

int leakaudit_host_memfd_create(const char *name) { return memfd_create(name, 0); }

int leakaudit_host_punch_hole(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}
