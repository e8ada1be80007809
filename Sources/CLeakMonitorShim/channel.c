// The writing end of the record channel: maps the shared ring that leak-audit passed down and
// appends slots to it with one atomic add per record and no system call. When to map it, and what
// a process writes first, is lifecycle.c's to decide.
#include "shim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <time.h>
#include <unistd.h>

bool leakaudit_is_attached(void) { return la_channel_active(la_state()); }

void la_channel_set_flag(uint32_t flag) {
    la_wire_header *header = la_state()->channel.header;
    if (header != NULL) __atomic_fetch_or(&header->flags, flag, __ATOMIC_RELEASE);
}

/// True when leak-audit, whose pid the header holds, no longer runs, by kill(pid, 0) alone: a
/// zombie or another process with its pid answers. The test of last resort, when leak-audit's
/// /proc cannot be looked at (la_channel_reader_status). (A pid of 0 would make kill() test the
/// process group: no reader says where it is.)
static bool la_reader_pid_gone(const la_wire_header *header) {
    pid_t reader = header->reader_pid;
    return reader <= 0 || (kill(reader, 0) != 0 && errno == ESRCH);
}

uint32_t la_channel_reader_status(la_process_state *state) {
    la_wire_header *header = state->channel.header;
    bool gone;
    struct stat descriptor;
    if (state->channel.reader_descriptor_path[0] == '\0') {
        gone = la_reader_pid_gone(header);
    } else if (stat(state->channel.reader_descriptor_path, &descriptor) == 0) {
        // Another memfd at that number: leak-audit's pid is another process's now.
        gone = (uint64_t)descriptor.st_dev != state->channel.reader_device
            || (uint64_t)descriptor.st_ino != state->channel.reader_inode;
    } else if (errno == ENOENT || errno == ESRCH || errno == ENOTDIR) {
        // No such process, or no such descriptor: a zombie's descriptors are closed.
        gone = true;
    } else {
        // Not allowed to look any more (this process changed its user): kill() tells what it can.
        gone = la_reader_pid_gone(header);
    }
    if (!gone) return LA_READER_ALIVE;
    // Read after finding it gone: leak-audit marks a normal end before it closes the descriptor.
    uint32_t lifecycle = __atomic_load_n(&header->reader_lifecycle, __ATOMIC_ACQUIRE);
    return (lifecycle & LA_READER_SUPERVISES) != 0 && (lifecycle & LA_READER_CLOSED) == 0 ? LA_READER_DIED
                                                                                          : LA_READER_ENDED;
}

void la_channel_reader_died(la_process_state *state) {
    char line[256];
    int length = snprintf(line, sizeof line,
                          "leak-audit: the leak-audit (pid %d) auditing this process is gone; ending process %d (%s) "
                          "so that it does not run on unsupervised\n",
                          (int)state->channel.header->reader_pid, (int)getpid(), program_invocation_short_name);
    if (length > 0) {
        // Standard error may be closed or full: the process ends all the same.
        size_t size = (size_t)length < sizeof line ? (size_t)length : sizeof line - 1;
        (void)write(STDERR_FILENO, line, size);
    }
    (void)kill(getpid(), SIGKILL);
    // kill() on oneself cannot fail with SIGKILL; should it, the process ends anyway.
    _exit(128 + SIGKILL);
}

/// The thread that checks, every LA_WIRE_READER_CHECK_MS, that leak-audit is still there, and
/// ends the process when it died (la_channel_reader_died); it ends itself when leak-audit closed
/// the channel. It sleeps otherwise: nothing on the way of a record.
static void *la_channel_watch_reader(void *argument) {
    la_process_state *state = argument;
    for (;;) {
        struct timespec interval = {.tv_sec = 0, .tv_nsec = (long)LA_WIRE_READER_CHECK_MS * 1000 * 1000};
        while (nanosleep(&interval, &interval) != 0 && errno == EINTR) {}
        switch (la_channel_reader_status(state)) {
        case LA_READER_ALIVE: continue;
        case LA_READER_ENDED: return NULL;
        default: la_channel_reader_died(state);
        }
    }
}

/// Starts la_channel_watch_reader, with every signal blocked (the process's signals stay its own
/// threads'), a small stack and a name that says whose it is. A process without it (the thread
/// could not be made) still checks in each of its waits on leak-audit.
static void la_channel_start_watch(la_process_state *state) {
    pthread_attr_t attributes;
    if (pthread_attr_init(&attributes) != 0) return;
    sigset_t all, previous;
    (void)sigfillset(&all);  // a valid set: cannot fail
    if (pthread_attr_setstacksize(&attributes, 64 * 1024) == 0
        && pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED) == 0
        && pthread_sigmask(SIG_BLOCK, &all, &previous) == 0) {
        pthread_t thread;
        if (pthread_create(&thread, &attributes, la_channel_watch_reader, state) == 0) {
            // A name is a convenience: a failure changes nothing.
            (void)pthread_setname_np(thread, "leak-audit-wat");
        }
        // Restoring what was just read cannot fail.
        (void)pthread_sigmask(SIG_SETMASK, &previous, NULL);
    }
    (void)pthread_attr_destroy(&attributes);
}

void la_channel_drop(la_process_state *state) {
    __atomic_fetch_add(&state->channel.header->dropped, 1, __ATOMIC_RELAXED);
    la_channel_set_flag(LA_FLAG_OVERFLOW);
}

/// Milliseconds of the monotonic clock.
static uint64_t la_channel_now_ms(void) {
    struct timespec now;
    // CLOCK_MONOTONIC always exists: the call cannot fail.
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

uint64_t la_channel_await_room(la_process_state *state, uint64_t first, uint64_t count) {
    la_wire_header *header = state->channel.header;
    uint64_t capacity = state->channel.slot_capacity;
    unsigned waits = 0;
    // Since when consumed_slot has not moved: a wait on leak-audit has an end
    // (LA_WIRE_ROOM_TIMEOUT_MS), even when it is alive and reads nothing.
    uint64_t consumed = __atomic_load_n(&header->consumed_slot, __ATOMIC_ACQUIRE);
    // Writers are ahead of the reader by at most a ring each that waits; no run has
    // LA_WIRE_MOST_RINGS_AHEAD of them. A reservation further ahead (or a reader said to be past
    // it) means that something wrote over the header's counters: no room will come in time, so
    // the record is dropped at once (counted) rather than waited for (a process attaching at its
    // exit into a channel another process garbled waited until the run's timeout).
    if ((first - consumed) / capacity > LA_WIRE_MOST_RINGS_AHEAD) {
        la_channel_drop(state);
        return UINT64_MAX;
    }
    uint64_t still_since = 0;
    while (first + count > consumed + capacity) {
        if (++waits % 1024 == 0) {
            uint32_t status = la_channel_reader_status(state);
            if (status == LA_READER_DIED) la_channel_reader_died(state);
            if (status == LA_READER_ENDED) {
                la_channel_set_flag(LA_FLAG_READER_GONE);
                la_channel_drop(state);
                return UINT64_MAX;
            }
            uint64_t now = la_channel_now_ms();
            if (still_since == 0) {
                still_since = now;
            } else if (now - still_since > LA_WIRE_ROOM_TIMEOUT_MS) {
                la_channel_drop(state);
                return UINT64_MAX;
            }
        }
        sched_yield();
        uint64_t latest = __atomic_load_n(&header->consumed_slot, __ATOMIC_ACQUIRE);
        if (latest != consumed) still_since = 0;
        consumed = latest;
    }
    return first;
}

void la_channel_blob(uint8_t blob_kind, uint64_t id, uint64_t value, const void *payload, size_t length) {
    la_process_state *state = la_state();
    if (!la_channel_active(state)) return;
    uint64_t continuation_slots = (length + LA_WIRE_CONT_PAYLOAD - 1) / LA_WIRE_CONT_PAYLOAD;
    uint64_t total = 1 + continuation_slots;
    // Its slot count must fit the tag's 32 bits, and the ring.
    if (total > 0xFFFFFFFFu || total > state->channel.slot_capacity) {
        la_channel_drop(state);
        return;
    }
    uint64_t first = la_channel_reserve(state, total);
    if (first == UINT64_MAX) return;
    // Each slot says whose it is until it is written (LA_RESERVATION_MARK): if this process dies
    // before the head is committed, leak-audit gives them up once it has ended, not ten seconds
    // later while other processes write on.
    for (uint64_t index = first; index < first + total; index++) {
        uint64_t mark = ((uint64_t)LA_RESERVATION_MARK << 8) | state->channel.process_tag | (index << 32);
        __atomic_store_n(la_channel_slot(state, index), mark, __ATOMIC_RELAXED);
    }
    // Continuations first, head last: a reader that sees the head sees the whole blob.
    const uint8_t *bytes = payload;
    for (uint64_t index = 1; index <= continuation_slots; index++) {
        uint64_t *slot = la_channel_slot(state, first + index);
        size_t offset = (size_t)(index - 1) * LA_WIRE_CONT_PAYLOAD;
        size_t chunk = length - offset < LA_WIRE_CONT_PAYLOAD ? length - offset : LA_WIRE_CONT_PAYLOAD;
        uint8_t buffer[LA_WIRE_CONT_PAYLOAD] = {0};
        memcpy(buffer, bytes + offset, chunk);
        memcpy(&slot[1], buffer, LA_WIRE_CONT_PAYLOAD);
        __atomic_store_n(&slot[0], (uint64_t)LA_SLOT_BLOB_CONT | ((index & 0xFFFFFFu) << 8), __ATOMIC_RELEASE);
    }
    uint64_t *head = la_channel_slot(state, first);
    head[1] = id;
    head[2] = length;
    head[3] = value;
    uint64_t tag =
        (uint64_t)LA_SLOT_BLOB_HEAD | ((uint64_t)blob_kind << 8) | state->channel.process_tag | (total << 32);
    __atomic_store_n(&head[0], tag, __ATOMIC_RELEASE);
}

/// Opens the channel named by `value` ("<pid>:<fd>:<token>": leak-audit's pid, its descriptor of
/// the memfd, and the run's token in hex) through /proc; -1 when it cannot be had. No process
/// inherits the memfd (leak-audit creates it close-on-exec), so only processes that may open
/// another's /proc/<pid>/fd (the same user's) can write into the channel, and a stray descriptor
/// number can never be taken for it. `token` receives the token (0 when the value has none), and
/// `path` (of `path_size` bytes) the /proc path opened.
static int la_open_channel(const char *value, uint64_t *token, char *path, size_t path_size) {
    char *end = NULL;
    errno = 0;
    *token = 0;
    long pid = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != ':' || pid <= 0) return -1;
    const char *fd_text = end + 1;
    long fd = strtol(fd_text, &end, 10);
    if (errno != 0 || end == fd_text || fd < 0 || fd > 1 << 20) return -1;
    if (*end == ':') {
        const char *token_text = end + 1;
        unsigned long long parsed = strtoull(token_text, &end, 16);
        if (errno != 0 || end == token_text || parsed == 0) return -1;
        *token = (uint64_t)parsed;
    }
    if (*end != '\0') return -1;
    int length = snprintf(path, path_size, "/proc/%ld/fd/%ld", pid, fd);
    if (length < 0 || (size_t)length >= path_size) return -1;
    return open(path, O_RDWR | O_CLOEXEC);
}

/// True when `header` is the run's the variable named: a variable left from another run (a pid
/// reused since, a descriptor of the same number) names another token, and nothing is written
/// into that run's channel.
static bool la_channel_is_this_run(const la_wire_header *header, uint64_t token) {
    return token == 0 || __atomic_load_n(&header->run_token, __ATOMIC_ACQUIRE) == token;
}

la_wire_header *la_channel_map_header(const char *spec) {
    uint64_t token = 0;
    char path[sizeof la_state()->channel.reader_descriptor_path];
    int fd = la_open_channel(spec, &token, path, sizeof path);
    if (fd < 0) return NULL;
    la_wire_header *header = mmap(NULL, LA_WIRE_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (header == MAP_FAILED) return NULL;
    if (!la_channel_is_this_run(header, token)) {
        munmap(header, LA_WIRE_HEADER_SIZE);
        return NULL;
    }
    return header;
}

void la_channel_unmap_header(la_wire_header *header) { munmap(header, LA_WIRE_HEADER_SIZE); }

char *la_channel_read_watch(const char *spec) {
    uint64_t token = 0;
    char path[sizeof la_state()->channel.reader_descriptor_path];
    int fd = la_open_channel(spec, &token, path, sizeof path);
    if (fd < 0) return NULL;
    char *text = NULL;
    la_wire_header header;
    struct stat file;
    if (pread(fd, &header, sizeof header, 0) == (ssize_t)sizeof header && fstat(fd, &file) == 0
        && header.magic == LA_WIRE_MAGIC && header.version == LA_WIRE_VERSION && la_channel_is_this_run(&header, token)
        && header.watch_offset >= LA_WIRE_HEADER_SIZE && header.watch_length <= LA_WIRE_MAX_WATCH_BYTES
        && header.watch_offset <= (uint64_t)file.st_size
        && header.watch_length <= (uint64_t)file.st_size - header.watch_offset) {
        text = malloc((size_t)header.watch_length + 1);
        size_t done = 0;
        while (text != NULL && done < header.watch_length) {
            ssize_t count = pread(fd, text + done, (size_t)header.watch_length - done, (off_t)(header.watch_offset + done));
            if (count > 0) {
                done += (size_t)count;
            } else if (count < 0 && errno == EINTR) {
                continue;
            } else {
                free(text);
                text = NULL;
            }
        }
        if (text != NULL) text[header.watch_length] = '\0';
    }
    close(fd);
    return text;
}

/// In a child that fork() made (without exec yet): the child is a copy of its parent, with the
/// parent's instances and index, so its records would corrupt the parent's. It writes none from
/// now on, and so can tear none if it is killed; it is counted so that the report can say so. If
/// it execs, the new image's shim attaches as a process of its own.
static void la_channel_forked_child(void) {
    la_process_state *state = la_state();
    if (!la_channel_active(state)) return;
    __atomic_store_n(&state->channel.slots, NULL, __ATOMIC_RELEASE);
    __atomic_fetch_add(&state->channel.header->forked_processes, 1, __ATOMIC_RELEASE);
}

bool la_channel_map_locked(la_process_state *state, const char *spec) {
    uint64_t token = 0;
    char path[sizeof state->channel.reader_descriptor_path];
    int fd = la_open_channel(spec, &token, path, sizeof path);
    if (fd < 0) return false;
    // Which memfd leak-audit's descriptor names now, while leak-audit is known to be there: the
    // test that it still is (la_channel_reader_status). Without it, kill() is the test.
    struct stat identity;
    bool identified = fstat(fd, &identity) == 0;

    void *first_page = mmap(NULL, LA_WIRE_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (first_page == MAP_FAILED) { close(fd); return false; }
    la_wire_header *peek = first_page;
    if (!la_channel_is_this_run(peek, token)) {
        munmap(first_page, LA_WIRE_HEADER_SIZE);
        close(fd);
        return false;
    }
    if (peek->magic == LA_WIRE_MAGIC && peek->version != LA_WIRE_VERSION) {
        // Tell leak-audit why nothing arrives, rather than look uninstrumented.
        __atomic_fetch_or(&peek->flags, LA_FLAG_VERSION_MISMATCH, __ATOMIC_RELEASE);
    }
    bool valid = peek->magic == LA_WIRE_MAGIC && peek->version == LA_WIRE_VERSION
        && peek->slot_size == LA_WIRE_SLOT_SIZE && peek->slot_capacity > 0
        && (peek->slot_capacity & (peek->slot_capacity - 1)) == 0;
    uint64_t capacity = peek->slot_capacity;
    munmap(first_page, LA_WIRE_HEADER_SIZE);
    if (!valid) { close(fd); return false; }

    size_t length = LA_WIRE_HEADER_SIZE + capacity * LA_WIRE_SLOT_SIZE;
    void *mapping = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (mapping == MAP_FAILED) return false;

    // Every instrumented process of the run attaches (`swift test` starts the test bundle once
    // per testing library; a script may start several programs). Each takes an index that its
    // records carry, since type ids, stack ids and addresses are its own.
    la_wire_header *header = mapping;
    uint32_t index = __atomic_fetch_add(&header->attached_processes, 1, __ATOMIC_ACQ_REL);
    if (index >= LA_WIRE_MAX_PROCESSES) {
        __atomic_fetch_or(&header->flags, LA_FLAG_TOO_MANY_PROCESSES, __ATOMIC_RELEASE);
        munmap(mapping, length);
        return false;
    }
    int32_t expected = 0;
    __atomic_compare_exchange_n(&header->attached_pid, &expected, (int32_t)getpid(), false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    state->channel.process_tag = (uint64_t)index << 16;
    state->channel.header = mapping;
    state->channel.slot_capacity = capacity;
    if (identified) {
        strcpy(state->channel.reader_descriptor_path, path);
        state->channel.reader_device = (uint64_t)identity.st_dev;
        state->channel.reader_inode = (uint64_t)identity.st_ino;
    }
    __atomic_store_n(&state->channel.slots, (uint8_t *)mapping + LA_WIRE_HEADER_SIZE, __ATOMIC_RELEASE);
    // Once per process: a process maps the channel at most once (attach_attempted).
    pthread_atfork(NULL, NULL, la_channel_forked_child);
    // A leak-audit that dies (even by SIGKILL) leaves no attached process running unsupervised.
    if ((__atomic_load_n(&header->reader_lifecycle, __ATOMIC_ACQUIRE) & LA_READER_SUPERVISES) != 0) {
        la_channel_start_watch(state);
    }
    return true;
}

/// This process's walk handshake in the channel's header page.
static la_wire_walk *la_channel_walk(la_process_state *state) {
    return la_wire_walk_slot(state->channel.header, (uint32_t)(state->channel.process_tag >> 16));
}

/// Stores a request (its number, numbered here, with `flags`) in this process's walk handshake
/// and waits until leak-audit answers it; returns the answer's flags (the bits of `answered`
/// above the number), or `unanswered` when no answer came: leak-audit ended, or did not answer
/// within LA_WIRE_WALK_TIMEOUT_MS.
static uint32_t la_channel_request(la_process_state *state, uint32_t flags, uint32_t unanswered) {
    la_wire_walk *walk = la_channel_walk(state);
    const uint32_t answer_flags = LA_WALK_GRACE_NEEDED;
    pthread_mutex_lock(&state->channel.walk_lock);
    uint32_t number = ++state->channel.walk_requests & (LA_WALK_ENDING - 1);
    __atomic_store_n(&walk->requested, number | flags, __ATOMIC_RELEASE);
    uint32_t result = unanswered;
    // Wake up every LA_WIRE_READER_CHECK_MS to see whether leak-audit is still there: a shared
    // futex on the mapped channel, which leak-audit wakes once it has answered. (The wait's
    // result says nothing the loop does not read again: an answer, a timeout or a signal.)
    for (uint32_t waited = 0; waited < LA_WIRE_WALK_TIMEOUT_MS; waited += LA_WIRE_READER_CHECK_MS) {
        uint32_t answered = __atomic_load_n(&walk->answered, __ATOMIC_ACQUIRE);
        if ((answered & ~answer_flags) == number) {
            result = answered & answer_flags;
            break;
        }
        struct timespec interval = {.tv_sec = 0, .tv_nsec = (long)LA_WIRE_READER_CHECK_MS * 1000 * 1000};
        (void)syscall(SYS_futex, &walk->answered, FUTEX_WAIT, answered, &interval, NULL, 0);
        uint32_t status = la_channel_reader_status(state);
        if (status == LA_READER_DIED) la_channel_reader_died(state);
        if (status == LA_READER_ENDED) break;
    }
    pthread_mutex_unlock(&state->channel.walk_lock);
    return result;
}

void la_channel_await_heap_walk(bool at_exit, bool unreachable) {
    la_process_state *state = la_state();
    if (!la_channel_active(state)) return;
    uint32_t flags = at_exit ? LA_WALK_AT_EXIT | (unreachable ? LA_WALK_UNREACHABLE : 0) : 0;
    (void)la_channel_request(state, flags, 0);
}

void la_channel_mark_ending(la_process_state *state) {
    if (!la_channel_active(state)) return;
    la_wire_walk *walk = la_channel_walk(state);
    // Over a request in flight (a settling thread's, held by leak-audit), or over the last one
    // answered, where it changes nothing: later requests store their own flags.
    __atomic_fetch_or(&walk->requested, LA_WALK_ENDING, __ATOMIC_ACQ_REL);
}

bool la_channel_finished_tests_left_alive(void) {
    la_process_state *state = la_state();
    // Unattached, nothing was recorded and no grace period matters; the caller waits as before.
    if (!la_channel_active(state)) return true;
    return la_channel_request(state, LA_WALK_GRACE_QUESTION, LA_WALK_GRACE_NEEDED) != 0;
}
