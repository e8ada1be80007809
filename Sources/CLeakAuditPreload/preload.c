// The preloaded shared object's own part is only this: the shim's objects are linked in from
// CLeakMonitorShim (SwiftPM links a dependency target's object files, not an archive, so every
// one of them is in the image), and its constructor (la_lifecycle_start, in lifecycle.c) recognises
// this image by name and attaches lazily.
#include "leak_audit_preload.h"
#include "leak_audit_wire.h"

unsigned leakaudit_preload_wire_version(void) { return LA_WIRE_VERSION; }
