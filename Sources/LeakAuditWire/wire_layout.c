// Compile-time checks of the record stream's layout: both sides include the same header, and
// these assertions keep an accidental field change from silently changing the format.
#include "leak_audit_wire.h"
#include <stddef.h>

// Fields are only ever added in the header page's reserved, zeroed part: readers and writers of
// version 1 that predate one read it as 0 or never touch it.
_Static_assert(sizeof(la_wire_header) == 120, "la_wire_header layout changed: bump LA_WIRE_VERSION");
_Static_assert(offsetof(la_wire_header, watch_offset) == 104, "la_wire_header.watch_offset moved");
_Static_assert(offsetof(la_wire_header, watch_length) == 112, "la_wire_header.watch_length moved");
_Static_assert(offsetof(la_wire_header, forked_processes) == 72, "la_wire_header.forked_processes moved");
_Static_assert(offsetof(la_wire_header, run_token) == 80, "la_wire_header.run_token moved");
_Static_assert(offsetof(la_wire_header, clock_ms) == 88, "la_wire_header.clock_ms moved");
_Static_assert(offsetof(la_wire_header, reader_lifecycle) == 96, "la_wire_header.reader_lifecycle moved");
_Static_assert(offsetof(la_wire_header, next_slot) == 24, "la_wire_header.next_slot moved");
// magic, version and flags keep their offsets in every version (see LA_FLAG_VERSION_MISMATCH).
_Static_assert(offsetof(la_wire_header, version) == 8, "la_wire_header.version moved");
_Static_assert(offsetof(la_wire_header, flags) == 32, "la_wire_header.flags moved");
_Static_assert(offsetof(la_wire_header, consumed_slot) == 48, "la_wire_header.consumed_slot moved");
_Static_assert(offsetof(la_wire_header, attached_processes) == 60, "la_wire_header.attached_processes moved");
_Static_assert(offsetof(la_wire_header, watched_processes) == 64, "la_wire_header.watched_processes moved");
_Static_assert(sizeof(la_wire_type) == 8, "la_wire_type layout changed: bump LA_WIRE_VERSION");
_Static_assert(sizeof(la_wire_module) == 24, "la_wire_module layout changed: bump LA_WIRE_VERSION");
_Static_assert(LA_WIRE_HEADER_SIZE >= sizeof(la_wire_header), "header page too small");
_Static_assert(sizeof(la_wire_walk) == 8, "la_wire_walk layout changed: bump LA_WIRE_VERSION");
_Static_assert(LA_WIRE_WALKS_OFFSET >= sizeof(la_wire_header), "walk handshakes overlap the header fields");
_Static_assert(LA_WIRE_WALKS_OFFSET + LA_WIRE_MAX_PROCESSES * sizeof(la_wire_walk) <= LA_WIRE_HEADER_SIZE,
               "walk handshakes do not fit the header page");
