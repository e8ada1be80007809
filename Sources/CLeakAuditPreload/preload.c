// The preloaded shared object's own part is only this: the shim's objects are linked in from
// CLeakMonitorShim, and its constructor (la_channel_constructor) recognises this image by name and
// attaches lazily. Referencing the shim here keeps the linker from dropping its objects.
#include "leak_audit_preload.h"
#include "leak_audit_wire.h"
#include "leak_monitor_shim.h"

unsigned leakaudit_preload_wire_version(void) {
    // leakaudit_is_under_leak_audit pulls channel.c (and through it the whole shim) into the image.
    return leakaudit_is_under_leak_audit() ? LA_WIRE_VERSION : LA_WIRE_VERSION;
}
