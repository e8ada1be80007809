#include "leak_audit_host.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int leakaudit_host_memfd_create(const char *name) { return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); }

int leakaudit_host_seal_size(int fd) { return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL); }

// Whether `tid` is a thread-group leader: a process, whose end its parent's waitpid must see.
static int is_process(pid_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    FILE *file = fopen(path, "re");
    if (!file) return 0;
    char line[256];
    int leader = 0;
    while (fgets(line, sizeof line, file)) {
        int tgid = 0;
        if (sscanf(line, "Tgid: %d", &tgid) == 1) {
            leader = tgid == tid;
            break;
        }
    }
    fclose(file);
    return leader;
}

// waitpid(tid, status, __WALL | WNOHANG) for a thread leak-audit traces, except that a process's
// end is only looked at, never taken: the target's own end belongs to TargetProcess.poll's
// waitpid, which would otherwise wait for it forever (ECHILD). Returns what waitpid would.
static pid_t wait_traced(pid_t tid, int *status) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)tid, &info, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) != 0) return -1;
    if (info.si_pid == 0) return 0;
    int ended = info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
    if (ended && is_process(tid)) {
        *status = 0;  // ended (WIFEXITED), its status left for its parent
        return tid;
    }
    return waitpid(tid, status, __WALL | WNOHANG);
}

int leakaudit_host_stop_threads(const pid_t *tids, int count, int *results, int timeout_ms) {
    int pending = 0;
    for (int index = 0; index < count; index++) {
        results[index] = 0;
        if (ptrace(PTRACE_SEIZE, tids[index], NULL, NULL) != 0) {
            results[index] = errno;
            continue;
        }
        if (ptrace(PTRACE_INTERRUPT, tids[index], NULL, NULL) != 0) {
            results[index] = errno;
            ptrace(PTRACE_DETACH, tids[index], NULL, NULL);
            continue;
        }
        results[index] = -1;  // seized, not yet seen stopped
        pending++;
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (pending > 0) {
        int progressed = 0;
        for (int index = 0; index < count; index++) {
            if (results[index] != -1) continue;
            int status = 0;
            pid_t result = wait_traced(tids[index], &status);
            if (result == 0 || (result < 0 && errno == EINTR)) continue;
            progressed = 1;
            if (result < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
                results[index] = ESRCH;
                pending--;
            } else if (WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP) {
                results[index] = 0;
                pending--;
            } else if (WIFSTOPPED(status)) {
                // A signal arriving now would be delivered by this stop and lost on detach: pass it
                // back with the stop ended, and stop again.
                ptrace(PTRACE_CONT, tids[index], NULL, (void *)(uintptr_t)WSTOPSIG(status));
                ptrace(PTRACE_INTERRUPT, tids[index], NULL, NULL);
            }
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed > timeout_ms) break;
        if (!progressed) {
            struct timespec interval = {.tv_sec = 0, .tv_nsec = 50 * 1000};
            nanosleep(&interval, NULL);
        }
    }
    for (int index = 0; index < count; index++) {
        if (results[index] == -1) {
            ptrace(PTRACE_DETACH, tids[index], NULL, NULL);
            results[index] = ETIMEDOUT;
        }
    }
    return 0;
}

int leakaudit_host_thread_registers(pid_t tid, leakaudit_thread_registers *registers) {
    memset(registers, 0, sizeof *registers);
#if defined(__x86_64__)
    struct user_regs_struct values;
    struct iovec vector = {.iov_base = &values, .iov_len = sizeof values};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &vector) != 0) return errno;
    registers->instruction_pointer = values.rip;
    registers->stack_pointer = values.rsp;
    registers->frame_pointer = values.rbp;
    registers->thread_pointer = values.fs_base;
    uint64_t general[] = {values.rax, values.rbx, values.rcx, values.rdx, values.rsi, values.rdi, values.rbp,
                          values.r8,  values.r9,  values.r10, values.r11, values.r12, values.r13, values.r14,
                          values.r15};
    memcpy(registers->general, general, sizeof general);
    registers->general_count = sizeof general / sizeof general[0];
    return 0;
#elif defined(__aarch64__)
    struct user_regs_struct values;
    struct iovec vector = {.iov_base = &values, .iov_len = sizeof values};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &vector) != 0) return errno;
    registers->instruction_pointer = values.pc;
    registers->stack_pointer = values.sp;
    registers->frame_pointer = values.regs[29];
    uint64_t tls = 0;
    struct iovec tls_vector = {.iov_base = &tls, .iov_len = sizeof tls};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_TLS, &tls_vector) == 0) registers->thread_pointer = tls;
    memcpy(registers->general, values.regs, sizeof values.regs);
    registers->general_count = 31;
    return 0;
#else
    (void)tid;
    return ENOSYS;
#endif
}

struct own_thread_body {
    void (*body)(void *context);
    void *context;
};

static void *run_own_thread_body(void *argument) {
    struct own_thread_body *run = argument;
    run->body(run->context);
    return NULL;
}

int leakaudit_host_run_on_own_thread(void (*body)(void *context), void *context) {
    struct own_thread_body run = {.body = body, .context = context};
    pthread_t thread;
    int error = pthread_create(&thread, NULL, run_own_thread_body, &run);
    if (error != 0) return error;
    return pthread_join(thread, NULL);
}

int leakaudit_host_resume_thread(pid_t tid) { return ptrace(PTRACE_DETACH, tid, NULL, NULL) == 0 ? 0 : errno; }

void leakaudit_host_reap_thread(pid_t tid, int timeout_ms) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int status = 0;
        pid_t result = wait_traced(tid, &status);
        if (result < 0 && errno == EINTR) continue;
        if (result < 0) return;  // reaped already, or not leak-audit's tracee
        if (result == tid) {
            // Stopped again rather than dead: let it go, with the signal that stopped it.
            if (WIFSTOPPED(status)) {
                int signal = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
                ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)signal);
            }
            return;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed > timeout_ms) return;
        struct timespec interval = {.tv_sec = 0, .tv_nsec = 100 * 1000};
        nanosleep(&interval, NULL);
    }
}

ssize_t leakaudit_host_read_memory(pid_t pid, uint64_t address, void *buffer, size_t length) {
    struct iovec local = {.iov_base = buffer, .iov_len = length};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)address, .iov_len = length};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

void leakaudit_host_futex_wake(uint32_t *address) { syscall(SYS_futex, address, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0); }

int leakaudit_host_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

bool leakaudit_host_wait_readable(int descriptor, uint32_t microseconds) {
    struct pollfd poll_descriptor = {.fd = descriptor, .events = POLLIN};
    struct timespec timeout = {.tv_sec = microseconds / 1000000, .tv_nsec = (long)(microseconds % 1000000) * 1000};
    return ppoll(&poll_descriptor, 1, &timeout, NULL) > 0;
}
