// What leak-audit does so that the target's processes never outlive it unsupervised, and so that a
// report file is never left half written: the target is started with a parent-death signal
// (leakaudit_host_spawn), and a fatal signal (a Swift trap, a bad pointer) first kills every
// process leak-audit started and removes the reports not yet complete, then does what it would
// have done without the guard (docs/reliability.md, "When leak-audit itself dies").
//
// Everything a signal handler here calls is async-signal-safe: system calls only, on buffers
// fixed in advance, no malloc, no stdio, no lock.
#include "leak_audit_host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

// Reports not yet complete -------------------------------------------------------------------------

#define LA_GUARD_MAX_PARTIALS 16

/// A temporary report file and whether it is still to be removed: 0 free, 1 being filled in,
/// 2 registered (a handler removes it).
static char la_guard_partial_paths[LA_GUARD_MAX_PARTIALS][PATH_MAX];
static int la_guard_partial_states[LA_GUARD_MAX_PARTIALS];

int leakaudit_host_guard_add_partial(const char *path) {
    if (strlen(path) >= PATH_MAX) return -1;
    for (int slot = 0; slot < LA_GUARD_MAX_PARTIALS; slot++) {
        int expected = 0;
        if (!__atomic_compare_exchange_n(&la_guard_partial_states[slot], &expected, 1, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            continue;
        }
        strcpy(la_guard_partial_paths[slot], path);
        __atomic_store_n(&la_guard_partial_states[slot], 2, __ATOMIC_RELEASE);
        return slot;
    }
    return -1;
}

void leakaudit_host_guard_forget_partial(int slot) {
    if (slot < 0 || slot >= LA_GUARD_MAX_PARTIALS) return;
    __atomic_store_n(&la_guard_partial_states[slot], 0, __ATOMIC_RELEASE);
}

void leakaudit_host_guard_discard_partials(void) {
    for (int slot = 0; slot < LA_GUARD_MAX_PARTIALS; slot++) {
        int expected = 2;
        if (!__atomic_compare_exchange_n(&la_guard_partial_states[slot], &expected, 1, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            continue;
        }
        // A file already gone (ENOENT) is what was wanted; any other failure leaves a file whose
        // name says it is partial, and a handler can do nothing more about it.
        (void)unlink(la_guard_partial_paths[slot]);
        __atomic_store_n(&la_guard_partial_states[slot], 0, __ATOMIC_RELEASE);
    }
}

// The processes leak-audit started -----------------------------------------------------------------

/// Descendants found so far; leak-audit itself first.
#define LA_GUARD_MAX_TREE 8192
static pid_t la_guard_tree[LA_GUARD_MAX_TREE];
static int la_guard_tree_count;
static char la_guard_directory_buffer[32768] __attribute__((aligned(8)));
static char la_guard_stat_buffer[1024];

struct la_guard_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/// The pid that `text` starts with, up to `end` (a character that must follow it), or -1 when
/// it is not a positive number ended so.
static pid_t la_guard_parse_pid(const char *text, char end) {
    long value = 0;
    const char *character = text;
    for (; *character >= '0' && *character <= '9'; character++) {
        if (value > INT_MAX / 10) return -1;
        value = value * 10 + (*character - '0');
    }
    if (character == text || *character != end) return -1;
    return value > 0 && value <= INT_MAX ? (pid_t)value : -1;
}

/// The parent of process `pid`, from /proc/<pid>/stat ("pid (comm) state ppid …"; comm may hold
/// spaces and parentheses, so the fields start after its last ')'); -1 when it cannot be read.
static pid_t la_guard_parent_of(pid_t pid) {
    char path[32] = "/proc/";
    char digits[12];
    int length = 0;
    for (pid_t rest = pid; rest > 0 && length < (int)sizeof digits; rest /= 10) {
        digits[length++] = (char)('0' + rest % 10);
    }
    int position = 6;
    while (length > 0) path[position++] = digits[--length];
    memcpy(path + position, "/stat", 6);
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return -1;
    ssize_t count = read(descriptor, la_guard_stat_buffer, sizeof la_guard_stat_buffer - 1);
    (void)close(descriptor);  // read-only: nothing was written that a failed close could lose
    if (count <= 0) return -1;
    la_guard_stat_buffer[count] = '\0';
    char *end = NULL;
    for (char *character = la_guard_stat_buffer; *character != '\0'; character++) {
        if (*character == ')') end = character;
    }
    // ") S 1234": the state, then the parent.
    if (end == NULL || end[1] != ' ' || end[2] == '\0' || end[3] != ' ') return -1;
    return la_guard_parse_pid(end + 4, ' ');
}

static bool la_guard_in_tree(pid_t pid) {
    for (int index = 0; index < la_guard_tree_count; index++) {
        if (la_guard_tree[index] == pid) return true;
    }
    return false;
}

/// One pass over /proc: every process whose parent is in the tree and that is not yet, stopped
/// (SIGSTOP: a stopped process neither forks nor exits, so its children stay its own until they
/// are found) and added. With `kill_found`, SIGKILLed instead. Returns how many were found; -1
/// when /proc cannot be read.
static int la_guard_scan(bool kill_found) {
    int directory = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory < 0) return -1;
    int found = 0;
    for (;;) {
        long count = syscall(SYS_getdents64, directory, la_guard_directory_buffer, sizeof la_guard_directory_buffer);
        if (count <= 0) break;  // the end, or an error: what was found is still killed
        for (long offset = 0; offset < count;) {
            const struct la_guard_dirent64 *entry = (const void *)(la_guard_directory_buffer + offset);
            offset += entry->d_reclen;
            pid_t pid = la_guard_parse_pid(entry->d_name, '\0');
            if (pid <= 0 || la_guard_in_tree(pid)) continue;
            pid_t parent = la_guard_parent_of(pid);
            if (parent <= 0 || !la_guard_in_tree(parent)) continue;
            found++;
            if (kill_found) {
                (void)kill(pid, SIGKILL);  // ESRCH: it ended by itself; EPERM: not ours to end
            } else if (la_guard_tree_count < LA_GUARD_MAX_TREE) {
                (void)kill(pid, SIGSTOP);  // as above
                la_guard_tree[la_guard_tree_count++] = pid;
            }
        }
    }
    (void)close(directory);  // read-only
    return found;
}

int leakaudit_host_guard_kill_descendants(void) {
    la_guard_tree[0] = getpid();
    la_guard_tree_count = 1;
    // Stop the tree from the top down, pass after pass, until a pass finds no new process: a
    // process killed before its children were found would leave them to init, out of reach.
    for (int pass = 0; pass < 64; pass++) {
        if (la_guard_scan(false) <= 0) break;
    }
    for (int index = 1; index < la_guard_tree_count; index++) (void)kill(la_guard_tree[index], SIGKILL);
    // A child forked in the instant before its parent stopped, or an orphan handed to leak-audit
    // (a child subreaper), is a child of one of them or of leak-audit: killed as well.
    (void)la_guard_scan(true);
    return la_guard_tree_count - 1;
}

// The fatal signals ---------------------------------------------------------------------------------

static const int la_guard_fatal_signals[] = {SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
                                             SIGSEGV, SIGSYS, SIGXCPU, SIGXFSZ};
#define LA_GUARD_FATAL_COUNT (sizeof la_guard_fatal_signals / sizeof la_guard_fatal_signals[0])

/// What each signal did before the guard: for a fatal signal, the Swift runtime's crash handler
/// (its backtracer) or the default action; for a terminating one, also whether it was ignored.
/// Written once, before the handlers are installed.
static struct sigaction la_guard_previous[_NSIG];
/// The guard is installed (once per process).
static int la_guard_installed;
/// A fatal signal's handler has begun: a second one (another signal during the first) only chains.
static int la_guard_handling;

/// Does what `signal_number` would have done without the guard, then makes sure that leak-audit
/// dies of it: the handler that was there before (the Swift runtime's crash handler, which prints
/// the backtrace) is called as the kernel would have called it (its action back in place, the
/// signal mask it would have run with, the fault's siginfo and registers); when it returns (it
/// does, for a signal that another process sent), the default action ends leak-audit, as the
/// target's processes were already killed.
static void la_guard_chain(int signal_number, siginfo_t *info, void *context) {
    struct sigaction *previous = &la_guard_previous[signal_number];
    bool has_handler = (previous->sa_flags & SA_SIGINFO) != 0
        ? previous->sa_sigaction != NULL
        : previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN && previous->sa_handler != NULL;
    if (has_handler) {
        struct sigaction installed = *previous;
        if ((previous->sa_flags & SA_RESETHAND) != 0) {
            memset(&installed, 0, sizeof installed);
            installed.sa_handler = SIG_DFL;
        }
        (void)sigaction(signal_number, &installed, NULL);  // a valid signal: cannot fail
        sigset_t mask = ((const ucontext_t *)context)->uc_sigmask;
        for (int other = 1; other < _NSIG; other++) {
            if (sigismember(&previous->sa_mask, other) == 1) (void)sigaddset(&mask, other);
        }
        if ((previous->sa_flags & SA_NODEFER) == 0) (void)sigaddset(&mask, signal_number);
        (void)pthread_sigmask(SIG_SETMASK, &mask, NULL);  // valid arguments: cannot fail
        if ((previous->sa_flags & SA_SIGINFO) != 0) {
            previous->sa_sigaction(signal_number, info, context);
        } else {
            previous->sa_handler(signal_number);
        }
    }
    // The default action: raised with every signal blocked, the signal is delivered as this
    // handler returns and the mask from before it comes back, so a fault's instruction never runs
    // again.
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    (void)sigemptyset(&fallback.sa_mask);
    (void)sigaction(signal_number, &fallback, NULL);
    sigset_t only;
    (void)sigfillset(&only);
    (void)pthread_sigmask(SIG_SETMASK, &only, NULL);
    (void)raise(signal_number);
}

static void la_guard_fatal(int signal_number, siginfo_t *info, void *context) {
    int saved_errno = errno;
    if (__atomic_exchange_n(&la_guard_handling, 1, __ATOMIC_ACQ_REL) == 0) {
        (void)leakaudit_host_guard_kill_descendants();
        leakaudit_host_guard_discard_partials();
    }
    la_guard_chain(signal_number, info, context);
    errno = saved_errno;
}

/// SIGINT, SIGTERM, SIGHUP or SIGQUIT while no target runs to forward it to: what the target left
/// running (orphans that came to leak-audit, the child subreaper) is killed and the reports not yet
/// complete are removed, then the signal ends leak-audit as it would have.
static void la_guard_terminate(int signal_number, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    (void)leakaudit_host_guard_kill_descendants();
    leakaudit_host_guard_discard_partials();
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    (void)sigemptyset(&fallback.sa_mask);
    (void)sigaction(signal_number, &fallback, NULL);
    (void)raise(signal_number);
}

int leakaudit_host_guard_end_on(int signal_number) {
    if (signal_number <= 0 || signal_number >= _NSIG) return EINVAL;
    // A signal leak-audit was started ignoring (nohup) stays ignored.
    if (la_guard_previous[signal_number].sa_handler == SIG_IGN) {
        return sigaction(signal_number, &la_guard_previous[signal_number], NULL) == 0 ? 0 : errno;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = la_guard_terminate;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    (void)sigemptyset(&action.sa_mask);
    return sigaction(signal_number, &action, NULL) == 0 ? 0 : errno;
}

/// The alternate stack the handlers run on, so that a stack overflow is covered too: the Swift
/// runtime's when it set one up for its crash handler, else this one.
#define LA_GUARD_ALTERNATE_STACK (64 * 1024)

int leakaudit_host_guard_install(void) {
    if (__atomic_exchange_n(&la_guard_installed, 1, __ATOMIC_ACQ_REL) != 0) return 0;
    stack_t current;
    if (sigaltstack(NULL, &current) != 0) return errno;
    if ((current.ss_flags & SS_DISABLE) != 0 || current.ss_sp == NULL || current.ss_size < MINSIGSTKSZ) {
        void *stack = mmap(NULL, LA_GUARD_ALTERNATE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (stack == MAP_FAILED) return errno;
        stack_t alternate = {.ss_sp = stack, .ss_flags = 0, .ss_size = LA_GUARD_ALTERNATE_STACK};
        if (sigaltstack(&alternate, NULL) != 0) {
            int code = errno;
            (void)munmap(stack, LA_GUARD_ALTERNATE_STACK);
            return code;
        }
    }
    for (size_t index = 0; index < LA_GUARD_FATAL_COUNT; index++) {
        int signal_number = la_guard_fatal_signals[index];
        if (sigaction(signal_number, NULL, &la_guard_previous[signal_number]) != 0) return errno;
        if (la_guard_previous[signal_number].sa_handler == SIG_IGN) continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = la_guard_fatal;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        // Every other fatal signal waits while the tree is killed; a fault in the handler itself
        // still ends the process (the kernel forces a blocked synchronous signal's default).
        (void)sigfillset(&action.sa_mask);
        if (sigaction(signal_number, &action, NULL) != 0) return errno;
    }
    const int terminating[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t index = 0; index < sizeof terminating / sizeof terminating[0]; index++) {
        int signal_number = terminating[index];
        if (sigaction(signal_number, NULL, &la_guard_previous[signal_number]) != 0) return errno;
        int code = leakaudit_host_guard_end_on(signal_number);
        if (code != 0) return code;
    }
    return 0;
}

// Starting the target ------------------------------------------------------------------------------

int leakaudit_host_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[]) {
    // Orphans among the target's descendants come to leak-audit rather than to init, so that the
    // tree stays whole for the guard to kill.
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return errno;
    sigset_t all, previous;
    (void)sigfillset(&all);
    int code = pthread_sigmask(SIG_BLOCK, &all, &previous);
    if (code != 0) return code;
    pid_t parent = getpid();
    // The child shares leak-audit's memory until it execs (vfork, as posix_spawn does): it writes
    // only this, and calls only system calls.
    volatile int child_error = 0;
    pid_t child = vfork();
    if (child == 0) {
        // No handler of leak-audit's may run in the child: each is reset to the default, then the
        // caller's mask comes back. (execve resets handlers too, but only once it succeeds.)
        for (int signal_number = 1; signal_number < _NSIG; signal_number++) {
            struct sigaction action;
            if (signal_number == SIGKILL || signal_number == SIGSTOP) continue;
            // glibc refuses its own reserved signals (EINVAL): they have no handler to reset.
            if (sigaction(signal_number, NULL, &action) != 0) continue;
            if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) continue;
            memset(&action, 0, sizeof action);
            action.sa_handler = SIG_DFL;
            if (sigaction(signal_number, &action, NULL) != 0) {
                child_error = errno;
                _exit(127);
            }
        }
        // Dies with leak-audit, even by SIGKILL; and if leak-audit died before this was set, the
        // child is already another process's, and goes no further.
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
            child_error = errno;
            _exit(127);
        }
        if (getppid() != parent) _exit(127);
        int mask_error = pthread_sigmask(SIG_SETMASK, &previous, NULL);
        if (mask_error != 0) {
            child_error = mask_error;
            _exit(127);
        }
        execve(path, argv, envp);
        child_error = errno;
        _exit(127);
    }
    int spawn_error = child < 0 ? errno : child_error;
    code = pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (child > 0 && spawn_error == 0 && code != 0) {
        // leak-audit would go on with every signal blocked: no run, rather than that one.
        (void)kill(child, SIGKILL);
        spawn_error = code;
    }
    if (child > 0 && spawn_error != 0) {
        // The child never became the target: reap it.
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
    }
    if (spawn_error != 0) return spawn_error;
    *pid = child;
    return 0;
}
