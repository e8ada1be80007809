#ifndef C_STALE_STACK_H
#define C_STALE_STACK_H

/// Writes `object`'s address into 4 KiB of this call's frame, below its caller's: once it returns,
/// the words stay there, stale, for the next call from the same caller to find in its own frame.
void stale_stack_scribble(const void *object);

/// Reads from `descriptor` into a buffer of this call's frame, blocking until something arrives or
/// the descriptor's other end closes. Until then the buffer keeps whatever the caller's earlier calls
/// left there.
void stale_stack_wait(int descriptor);

#endif
