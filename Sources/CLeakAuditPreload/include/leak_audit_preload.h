// libLeakAuditPreload.so: the capture shim (CLeakMonitorShim) as a shared object that leak-audit
// puts in LD_PRELOAD when it watches types that never opted in. Everything it does happens in the
// shim's constructor and hooks; this header only names the library's version.
#ifndef LEAK_AUDIT_PRELOAD_H
#define LEAK_AUDIT_PRELOAD_H

/// The record format the preloaded library writes (LA_WIRE_VERSION).
unsigned leakaudit_preload_wire_version(void);

#endif
