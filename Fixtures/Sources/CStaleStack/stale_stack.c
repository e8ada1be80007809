// A call that leaves an object's address in the stack below its caller, and a blocking call whose
// frame, laid over it, leaves those words unwritten: the stale words a thread stopped in a system
// call shows in its innermost frame.
#include "CStaleStack.h"

#include <unistd.h>

void stale_stack_scribble(const void *object) {
    // volatile: every store is made, though nothing reads them.
    const void *volatile slots[512];
    for (int index = 0; index < 512; index++) slots[index] = object;
}

void stale_stack_wait(int descriptor) {
    char buffer[256];
    (void)read(descriptor, buffer, sizeof buffer);
}
