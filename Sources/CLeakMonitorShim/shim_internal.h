// Declarations shared by the shim's C files; not part of its interface.
#ifndef LEAK_MONITOR_SHIM_INTERNAL_H
#define LEAK_MONITOR_SHIM_INTERNAL_H

#include "leak_audit_wire.h"
#include "leak_monitor_shim.h"
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LA_HIDDEN __attribute__((visibility("hidden")))

/// Deepest backtrace captured per allocation.
#define LA_MAX_FRAMES 48

// channel.c -------------------------------------------------------------------------------------

/// True once the record channel is mapped.
LA_HIDDEN bool la_channel_active(void);
/// Appends one event slot (alloc or dealloc); drops it and counts it when the channel is full.
LA_HIDDEN void la_channel_event(uint8_t kind, uint32_t type_id, uint64_t object, uint64_t extra);
/// Appends a blob (type, stack or module record).
LA_HIDDEN void la_channel_blob(uint8_t blob_kind, uint64_t id, uint64_t value, const void *payload, size_t length);
/// Sets header flag bits.
LA_HIDDEN void la_channel_set_flag(uint32_t flag);

// modules.c -------------------------------------------------------------------------------------

/// Writes a module record for every loaded image not written before. Caller holds la_slow_lock.
LA_HIDDEN void la_modules_sync(void);
/// True when `address` lies in an image already written. Caller holds la_slow_lock.
LA_HIDDEN bool la_modules_contain(uintptr_t address);

// runtime_hooks.c -------------------------------------------------------------------------------

/// Routes swift_deallocClassInstance of every loaded image through the shim's hook, once per
/// image. Caller holds la_slow_lock. Returns false when deallocations cannot be observed.
LA_HIDDEN bool la_hooks_install(void);

// registry.c ------------------------------------------------------------------------------------

/// Called by the deallocation hook for every Swift class instance about to be freed.
LA_HIDDEN void la_registry_on_dealloc(const void *object);

// stacks.c --------------------------------------------------------------------------------------

/// Captures the caller's backtrace and returns its stack id (LA_STACK_NONE when unavailable).
LA_HIDDEN uint32_t la_stack_capture_and_intern(void);

/// Serialises every slow path: registration, stack creation, module records, hook installation.
extern LA_HIDDEN pthread_mutex_t la_slow_lock;

#endif
