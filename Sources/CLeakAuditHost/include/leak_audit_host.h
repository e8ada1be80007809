// System calls the leak-audit executable needs that Swift's Glibc module does not import, and the
// demanglers of the runtimes it links.
#ifndef LEAK_AUDIT_HOST_H
#define LEAK_AUDIT_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Creates an anonymous shared file, close-on-exec (children open it through /proc) and sealable,
/// or -1 with errno.
int leakaudit_host_memfd_create(const char *name);

/// Seals the size of a file made by `leakaudit_host_memfd_create`: no process can shrink it (a
/// mapping of a shrunk file raises SIGBUS) or grow it, and no more seals can be added or removed.
/// 0, or -1 with errno.
int leakaudit_host_seal_size(int fd);

/// A stopped thread's registers, as a heap walk reads them.
typedef struct leakaudit_thread_registers {
    uint64_t instruction_pointer;
    uint64_t stack_pointer;
    uint64_t frame_pointer;
    /// The thread pointer (x86_64 fs_base, aarch64 tpidr_el0): where its thread-local storage is.
    uint64_t thread_pointer;
    /// Every general-purpose register: a reference may live only in one.
    uint64_t general[34];
    uint32_t general_count;
} leakaudit_thread_registers;

/// Runs `body(context)` on a thread of its own and returns once that thread has ended: the ptrace
/// calls of one copy are made there, so that when it ends the kernel detaches every thread it
/// still traces and cancels their pending interrupts (a thread that did not stop in time runs on,
/// never to stop for a tracer that is gone). Returns 0, or the error of pthread_create (body not
/// run) or of pthread_join.
int leakaudit_host_run_on_own_thread(void (*body)(void *context), void *context);

/// Stops threads `tids` of another process (ptrace seize and interrupt, all at once, then waits
/// until each is stopped, at most `timeout_ms` in all). `results[i]` is 0 for a stopped thread,
/// else an errno value: EPERM when tracing is not allowed, ESRCH when the thread is gone,
/// ETIMEDOUT when it did not stop in time: a thread that is not stopped cannot be detached, and its
/// interrupt is still pending until the calling thread ends (leakaudit_host_run_on_own_thread).
/// Returns 0.
int leakaudit_host_stop_threads(const pid_t *tids, int count, int *results, int timeout_ms);

/// Reads the registers of a thread that leakaudit_host_stop_threads stopped. Returns 0 or an errno.
int leakaudit_host_thread_registers(pid_t tid, leakaudit_thread_registers *registers);

/// Lets a thread that leakaudit_host_stop_threads stopped run on (ptrace detach). Returns 0 or an
/// errno: ESRCH when it was killed meanwhile (its process ended while it was stopped).
int leakaudit_host_resume_thread(pid_t tid);

/// Reaps a thread that was killed while stopped (leakaudit_host_resume_thread said ESRCH), waiting
/// at most `timeout_ms` for it to die: a traced thread stays a zombie until its tracer reaps it,
/// and until then its process's end is reported to no one. Not for a process's leader, which is
/// reaped with its process. One found stopped again instead is let go.
void leakaudit_host_reap_thread(pid_t tid, int timeout_ms);

/// Copies `length` bytes at `address` in process `pid` into `buffer`; returns the bytes copied
/// (fewer at an unmapped page), or -1 with errno.
ssize_t leakaudit_host_read_memory(pid_t pid, uint64_t address, void *buffer, size_t length);

/// Wakes every process waiting (FUTEX_WAIT, shared) on the 32-bit word at `address`.
void leakaudit_host_futex_wake(uint32_t *address);

/// A descriptor that becomes readable when process `pid` (a child) ends: pidfd_open. -1 when the
/// kernel has none (before Linux 5.3).
int leakaudit_host_pidfd_open(pid_t pid);

/// Waits up to `microseconds` for `descriptor` to become readable; true when it did.
bool leakaudit_host_wait_readable(int descriptor, uint32_t microseconds);

/// Starts `path` with `argv` and `envp` as posix_spawn would (vfork, then execve), but with a
/// parent-death signal: the child is SIGKILLed when leak-audit dies, even by SIGKILL, and does not
/// start at all if leak-audit died before it could be set. Makes leak-audit a child subreaper
/// first, so that the target's orphaned descendants stay in its tree. Returns 0 and the child in
/// `*pid`, or an errno value (ENOENT, EACCES, ENOEXEC… from execve).
int leakaudit_host_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[]);

/// Installs leak-audit's guard, once: on a fatal signal (SIGILL and SIGTRAP of a Swift trap,
/// SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGSYS, SIGXCPU, SIGXFSZ), on an alternate signal stack, it
/// SIGKILLs every descendant of leak-audit and removes the partial files registered, then chains
/// to the handler that was there (the Swift runtime's backtracer) and dies of the signal as before.
/// SIGINT, SIGTERM, SIGHUP and SIGQUIT kill every descendant too, remove the partial files and end
/// leak-audit as by default (unless leak-audit was started ignoring them). Returns 0 or an errno
/// value.
int leakaudit_host_guard_install(void);

/// Gives `signal` back to the guard after it was forwarded to the target: it kills every
/// descendant, removes the partial files, then ends leak-audit (or stays ignored, as leak-audit
/// found it). Returns 0 or an errno.
int leakaudit_host_guard_end_on(int signal);

/// Registers a temporary file that a fatal or terminating signal removes; returns its slot, or -1
/// when the table (16) is full or the path too long (the file then keeps its partial name).
int leakaudit_host_guard_add_partial(const char *path);

/// Forgets slot `slot` (the file was renamed into place, or removed).
void leakaudit_host_guard_forget_partial(int slot);

/// Removes every registered file and forgets it. Async-signal-safe.
void leakaudit_host_guard_discard_partials(void);

/// SIGKILLs every descendant of this process (found through /proc, stopped top-down first so that
/// none escapes to init), and returns how many were found. Async-signal-safe.
int leakaudit_host_guard_kill_descendants(void);

/// Asks the processor to bring the cache line at `address` in, for writing, without waiting for
/// it (a hint: any address, even an unmapped one, is fine). Inline, so that Swift's compiler
/// inlines it where it is called.
static inline void leakaudit_host_prefetch(const void *address) { __builtin_prefetch(address, 1, 3); }

/// The Swift runtime's demangler, which libswiftCore exports with C linkage and no Swift module
/// declares. Declared, not looked up with dlsym: where the runtime is linked into the executable
/// (scripts/build-release.sh) its symbols are not exported, and dlsym would find nothing. `flags`
/// must be 0; with `output_buffer` NULL the result is malloc'ed (free it); NULL when `mangled_name`
/// is not a Swift name.
char *swift_demangle(const char *mangled_name, size_t mangled_name_length, char *output_buffer, size_t *output_buffer_size,
                     uint32_t flags);

/// libstdc++'s demangler (the Swift runtime's own functions are C++), for the same reason.
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

#endif
