// elfutils (libdw, libdwfl) for offline symbolization in LeakAuditCore.
// Only the core links this: the library that user code links must not depend on elfutils.
#ifndef LEAK_AUDIT_CLIBDW_SHIM_H
#define LEAK_AUDIT_CLIBDW_SHIM_H

#include <elfutils/libdwfl.h>
#include <dwarf.h>

#endif
