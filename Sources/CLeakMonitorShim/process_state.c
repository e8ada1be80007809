// The one shim state of the process, shared by every copy of the shim (see la_process_state).
#include "shim_internal.h"

#include <dlfcn.h>

/// The state a copy offers; the first one found in the global scope serves every copy.
__attribute__((visibility("default"))) la_process_state leakaudit_process_state_v9;
/// Its size, so that copies of different layouts never share (the name's version is bumped on
/// layout changes, as v2 did when each file's fields were grouped into a part of their own, v3
/// when types kept their metadata's destroy function, v4 when the channel kept how to tell that
/// leak-audit is still there, v5 when the hooks kept swift_setDeallocating, v6 when each leaf of
/// the tracked objects' set began with its window, which a thread's last leaf is checked against,
/// v7 when the tests' part kept the process's end and the observer's end of the run, v8 when
/// the watch part kept the patterns of the classes the census takes without stacks, and v9 when
/// the tests' part kept the generation of the test scopes and Swift concurrency's entry points
/// for the answers each thread keeps; this guards against a forgotten bump, which a change of
/// meaning like v6's would pass).
__attribute__((visibility("default"))) const uint64_t leakaudit_process_state_v9_size = sizeof(la_process_state);

la_process_state *la_resolved_state;

la_process_state *la_state_resolve(void) {
    la_process_state *state;
    // Every copy asks the same global scope, so every copy gets the same answer.
    state = dlsym(RTLD_DEFAULT, "leakaudit_process_state_v9");
    const uint64_t *size = dlsym(RTLD_DEFAULT, "leakaudit_process_state_v9_size");
    if (state == NULL || size == NULL || *size != sizeof(la_process_state)) state = &leakaudit_process_state_v9;
    __atomic_store_n(&la_resolved_state, state, __ATOMIC_RELEASE);
    return state;
}
