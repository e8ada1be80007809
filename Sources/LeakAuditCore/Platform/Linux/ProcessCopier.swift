import CLeakAuditHost
import FoundationEssentials
import LeakAuditFiles
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// Copies a process for the heap walk (docs/retainers.md): stops each of its threads with ptrace
/// (seize and interrupt: no signal is sent, and an interrupted system call is restarted), reads
/// their registers, copies the pages of its readable data mappings that it holds (in memory or
/// swapped out, by its pagemap) with process_vm_readv, and lets it run on: an untouched
/// reservation costs nothing, whatever its size. A mapping of a file on disk is mapped from the
/// file, with the pages the process changed copied over it. Device mappings and leak-audit's own
/// ring are not copied; a thread's stack is copied from its stack pointer up. The files are mapped,
/// and the memory the copy goes to faulted in, before the process stops (`prepareDestinations`):
/// it waits only for the reads.
enum ProcessCopier {
    /// How long one thread may take to stop.
    static let stopTimeoutMilliseconds: Int32 = 2_000
    /// How long a thread killed while stopped may take to die before it is reaped.
    static let reapTimeoutMilliseconds: Int32 = 1_000

    /// The copy, and how long the process was stopped: from the first thread seized to the last
    /// let go, in nanoseconds (`ProcessSnapshot.stoppedNanoseconds`). A thread that does not stop
    /// within `stopTimeoutMilliseconds` is left out and fails the copy. The copy is made on a
    /// thread of its own, which ends with it: the kernel then detaches what that thread still
    /// traces and cancels its pending interrupts, so a thread that did not stop in time (blocked
    /// where an interrupt cannot stop it, such as a parent waiting for its vfork child to exec)
    /// runs on whenever it returns, and nothing waits for it. Left seized, it would stop later and
    /// wait in that stop for as long as its tracer's thread lived, its process hung (seen in
    /// hummingbird's suite at load 23, a thread stopping 15 s after its interrupt).
    /// `prepared`: the memory made for the copy earlier (`prepare`, `PreparedCopies`), used for
    /// each mapping that is still the one it was made for.
    static func copy(
        _ pid: Int32, prepared: [Range<UInt64>: Destination] = [:], stopTimeoutMilliseconds: Int32 = stopTimeoutMilliseconds
    ) -> Result<ProcessSnapshot, SnapshotFailure> {
        let copying = CopyOnOwnThread(pid: pid, prepared: prepared, stopTimeoutMilliseconds: stopTimeoutMilliseconds)
        let context = Unmanaged.passRetained(copying)
        defer { context.release() }
        let error = leakaudit_host_run_on_own_thread(
            { context in
                guard let context else { return }
                Unmanaged<CopyOnOwnThread>.fromOpaque(context).takeUnretainedValue().run()
            }, context.toOpaque())
        guard error == 0 else { return .failure(.failed(call: "pthread_create", errno: error)) }
        return copying.result ?? .failure(.processGone)
    }

    /// One copy's arguments and result, for the thread that makes it.
    private final class CopyOnOwnThread {
        let pid: Int32
        let prepared: [Range<UInt64>: Destination]
        let stopTimeoutMilliseconds: Int32
        /// Written by that thread before it ends; read after it has.
        var result: Result<ProcessSnapshot, SnapshotFailure>? = nil

        init(pid: Int32, prepared: [Range<UInt64>: Destination], stopTimeoutMilliseconds: Int32) {
            self.pid = pid
            self.prepared = prepared
            self.stopTimeoutMilliseconds = stopTimeoutMilliseconds
        }

        func run() {
            result = ProcessCopier.copyOnThisThread(pid, prepared: prepared, stopTimeoutMilliseconds: stopTimeoutMilliseconds)
        }
    }

    /// The memory a copy of `pid`'s anonymous mappings is made in (`prepareDestinations`), for
    /// those it has now: made ahead of the copy, while the process still runs (`PreparedCopies`),
    /// until `stop` says to stop. Files are mapped just before the copy, as before: a file cut
    /// short meanwhile would fault the reads of it.
    static func prepare(_ pid: Int32, until stop: () -> Bool) -> [Range<UInt64>: Destination] {
        guard let mappings = readMappings(pid) else { return [:] }
        return prepareDestinations(
            pid, mappings: mappings.filter { !isCode($0) && !isRegularFile($0) },
            skipping: ShimStateLocator.pages(in: mappings), until: stop)
    }

    /// The copy, made with this thread as the tracer: every thread it stopped is let go before it
    /// returns; one that did not stop in time stays seized until this thread ends.
    private static func copyOnThisThread(
        _ pid: Int32, prepared: [Range<UInt64>: Destination], stopTimeoutMilliseconds: Int32
    ) -> Result<ProcessSnapshot, SnapshotFailure> {
        var stopped: [Int32] = []
        // Where the shim's state is, found before anything stops: each image file is read for it
        // once a run (the first walk), not while the process waits. So are the memory the copies
        // of its anonymous regions go to, its pages faulted in already: what was prepared for a
        // mapping still there is kept, and only the others are made now.
        var destinations: [Range<UInt64>: Destination] = [:]
        if let mappings = readMappings(pid) {
            var unprepared: [ProcessSnapshot.Region] = []
            for region in mappings {
                if let made = prepared[region.start..<region.end], made.isMade(for: region) {
                    destinations[region.start..<region.end] = made
                } else {
                    unprepared.append(region)
                }
            }
            let made = prepareDestinations(pid, mappings: unprepared, skipping: ShimStateLocator.pages(in: mappings))
            destinations.merge(made) { _, new in new }
        }
        let started = monotonicNanoseconds()
        var result = copyStopping(
            pid, stopped: &stopped, destinations: destinations, stopTimeoutMilliseconds: stopTimeoutMilliseconds)
        // Every thread stopped goes on first, whatever went wrong with another; then a thread
        // killed meanwhile (the process ended: a thread let go first called exit) is reaped, or
        // the process's end is never reported.
        let killed = stopped.filter { leakaudit_host_resume_thread($0) == ESRCH && $0 != pid }
        let stoppedFor = monotonicNanoseconds() &- started
        for thread in killed { leakaudit_host_reap_thread(thread, reapTimeoutMilliseconds) }
        if case .success(var snapshot) = result {
            snapshot.stoppedNanoseconds = stoppedFor
            result = .success(snapshot)
        }
        return result
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// Stops every thread of `pid` (appending each to `stopped`, which the caller lets go) and
    /// copies the process.
    private static func copyStopping(
        _ pid: Int32, stopped: inout [Int32], destinations: [Range<UInt64>: Destination], stopTimeoutMilliseconds: Int32
    ) -> Result<ProcessSnapshot, SnapshotFailure> {
        // Threads may start while others are being stopped: list them until a pass finds no new one.
        var seen = Set<Int32>()
        while true {
            let listed = threadIDs(of: pid)
            if listed.isEmpty && stopped.isEmpty { return .failure(.processGone) }
            let new = listed.filter { !seen.contains($0) }
            if new.isEmpty { break }
            seen.formUnion(new)
            var results = [Int32](repeating: 0, count: new.count)
            leakaudit_host_stop_threads(new, Int32(new.count), &results, stopTimeoutMilliseconds)
            // Every thread stopped is let go again (by `copy`), whatever went wrong with another.
            for (thread, error) in zip(new, results) {
                if error == 0 { stopped.append(thread) }
            }
            if results.contains(EPERM) {
                return .failure(
                    .notPermitted(
                        detail:
                            "ptrace: \(systemErrorMessage(EPERM)); allow tracing descendants: kernel.yama.ptrace_scope 0 or 1, and CAP_SYS_PTRACE or a seccomp profile that permits ptrace in a container"
                    ))
            }
            if let index = results.firstIndex(of: ETIMEDOUT) {
                return .failure(.threadDidNotStop(thread: new[index], milliseconds: stopTimeoutMilliseconds))
            }
            if let error = results.first(where: { $0 != 0 && $0 != ESRCH }) {
                return .failure(.failed(call: "ptrace", errno: error))
            }
        }
        guard !stopped.isEmpty else { return .failure(.processGone) }
        var threads: [ProcessSnapshot.Thread] = []
        for thread in stopped {
            var registers = leakaudit_thread_registers()
            guard leakaudit_host_thread_registers(thread, &registers) == 0 else { continue }
            let general = withUnsafeBytes(of: registers.general) { Array($0.bindMemory(to: UInt64.self)) }
            threads.append(
                ProcessSnapshot.Thread(
                    id: thread, name: threadName(pid, thread), instructionPointer: registers.instruction_pointer,
                    stackPointer: registers.stack_pointer, framePointer: registers.frame_pointer,
                    threadPointer: registers.thread_pointer, registers: Array(general.prefix(Int(registers.general_count)))))
        }
        guard let mappings = readMappings(pid) else { return .failure(.processGone) }
        // leak-audit's own shim state: tables of its own that hold no reference to an object.
        let shimState = ShimStateLocator.pages(in: mappings)
        // Which pages the process has in memory or swapped out: only those are copied, so that
        // an untouched reservation of any size costs nothing. Without it (a kernel that hides
        // it), every page is read and only those not all zeros are kept.
        let pageMap = open("/proc/\(pid)/pagemap", O_RDONLY | O_CLOEXEC)
        defer { if pageMap >= 0 { close(pageMap) } }
        var regions: [ProcessSnapshot.Region] = []
        for var region in mappings {
            if copies(region) {
                // A stack is live only above its thread's stack pointer (less a red zone).
                let pointers = threads.map(\.stackPointer).filter { region.start <= $0 && $0 < region.end }
                if let lowest = pointers.min() { region.copiedStart = Swift.max(region.start, lowest &- 128) }
                // What was made for it before the process stopped, if it is still the same mapping
                // and copied whole (a stack is copied from its stack pointer up).
                let prepared = destinations[region.start..<region.end].flatMap {
                    $0.isMade(for: region) && region.copiedStart == region.start ? $0.bytes : nil
                }
                if isCode(region), let mapped = prepared ?? mapFile(region, writable: false) {
                    region.bytes = mapped
                } else if isRegularFile(region), region.copiedStart == region.start,
                    let mapped = prepared ?? mapFile(region, writable: true)
                {
                    // The file's pages as they are, and over them the pages the process changed
                    // (relocated data, written copies): those are its own, not the file's.
                    copyPages(pid, pageMap: pageMap, from: region.start, to: region.end, into: mapped, onlyChanged: true)
                    region.bytes = mapped
                } else {
                    region.bytes = copyResident(
                        pid, pageMap: pageMap, from: region.copiedStart, to: region.end, skipping: shimState,
                        into: prepared)
                }
            }
            regions.append(region)
        }
        return .success(ProcessSnapshot(pid: pid, regions: regions, threads: threads))
    }

    /// Whether a mapping can hold objects, references to them, or the metadata that names them.
    private static func copies(_ region: ProcessSnapshot.Region) -> Bool {
        // Code is copied too: a linker may place read-only metadata (type descriptors, field
        // records) in the executable segment.
        if region.path.hasPrefix("/dev/") || region.path.hasPrefix("/memfd:leak-audit") { return false }
        return !["[vvar]", "[vsyscall]", "[vdso]", "[vvar_vclock]"].contains(region.path)
    }

    /// Whether a mapping is code of a file, mapped from the file rather than copied.
    private static func isCode(_ region: ProcessSnapshot.Region) -> Bool {
        region.isExecutable && region.path.hasPrefix("/")
    }

    /// Whether a mapping is of a file on disk that its bytes can be mapped from: not a device,
    /// not shared memory (memfd, System V, /dev/shm), not a file deleted since.
    private static func isRegularFile(_ region: ProcessSnapshot.Region) -> Bool {
        region.path.hasPrefix("/") && !region.path.hasPrefix("/dev/") && !region.path.hasPrefix("/memfd:")
            && !region.path.hasPrefix("/SYSV") && !region.path.hasSuffix(" (deleted)")
    }

    /// A region's pages that the process has in memory (or swapped out), copied into a mapping of
    /// the region's size that costs only the pages written: the pages it never touched read as
    /// zeros, as they do in the process. `prepared`, when given, is that mapping made before the
    /// process stopped (`prepareDestinations`), all zeros.
    private static func copyResident(
        _ pid: Int32, pageMap: Int32, from start: UInt64, to end: UInt64, skipping: [Range<UInt64>],
        into prepared: RegionBytes? = nil
    ) -> RegionBytes {
        guard let bytes = prepared ?? zeroedMapping(length: Int(end - start)) else {
            // No room in leak-audit's own address space: the region is not copied, and reads of
            // it find nothing.
            return RegionBytes()
        }
        bytes.writtenRanges = copyPages(
            pid, pageMap: pageMap, from: start, to: end, into: bytes, onlyChanged: false, skipping: skipping)
        return bytes
    }

    /// A private anonymous mapping of `length` bytes that costs only the pages written; nil when
    /// leak-audit's address space has no room for it.
    private static func zeroedMapping(length: Int) -> RegionBytes? {
        let mapping = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let mapping, mapping != MAP_FAILED else { return nil }
        return RegionBytes(UnsafeRawBufferPointer(start: mapping, count: length)) {
            munmap(UnsafeMutableRawPointer(mutating: $0.baseAddress), $0.count)
        }
    }

    /// What a region's copy is made in, made before the process stopped: the region as /proc
    /// listed it then, and the memory.
    struct Destination {
        let region: ProcessSnapshot.Region
        let bytes: RegionBytes

        /// Whether `region`, listed while the process is stopped, is the mapping this was made for.
        func isMade(for region: ProcessSnapshot.Region) -> Bool {
            self.region.start == region.start && self.region.end == region.end && self.region.path == region.path
                && self.region.inode == region.inode && self.region.fileOffset == region.fileOffset
                && self.region.isExecutable == region.isExecutable && self.region.isWritable == region.isWritable
        }
    }

    /// The memory each region's copy is made in, by the region's bounds, made while the process
    /// still runs, so that it waits for less: the file mapped for a mapping of a file, and for
    /// the pages the process then held that are its own (an anonymous region's, a file
    /// mapping's changed ones) a page of leak-audit's already faulted in. Writing into memory
    /// never touched costs a page fault a page, inside `process_vm_readv`: 50 MB were copied in
    /// 92 ms into memory faulted in before and in 275 ms into new memory (load 22). A page
    /// faulted in that the process no longer holds when copied stays as it was made (zeros, or
    /// the file's), as the process reads it; a mapping that changed meanwhile gets new memory.
    static func prepareDestinations(
        _ pid: Int32, mappings: [ProcessSnapshot.Region], skipping: [Range<UInt64>], until stop: () -> Bool = { false }
    ) -> [Range<UInt64>: Destination] {
        let pageMap = open("/proc/\(pid)/pagemap", O_RDONLY | O_CLOEXEC)
        guard pageMap >= 0 else { return [:] }
        defer { close(pageMap) }
        var destinations: [Range<UInt64>: Destination] = [:]
        for region in mappings where copies(region) {
            if stop() { break }
            let code = isCode(region)
            let file = !code && isRegularFile(region)
            let made = code ? mapFile(region, writable: false) : file ? mapFile(region, writable: true) : nil
            guard let bytes = made ?? (code || file ? nil : zeroedMapping(length: Int(region.end - region.start))),
                let base = bytes.buffer.baseAddress
            else { continue }
            destinations[region.start..<region.end] = Destination(region: region, bytes: bytes)
            if code { continue }
            let destination = UnsafeMutableRawPointer(mutating: base)
            forEachHeldRun(pageMap: pageMap, from: region.start, to: region.end, onlyChanged: file, skipping: skipping) {
                from, to in
                let run = destination + Int(from - region.start)
                let length = Int(to - from)
                // MADV_POPULATE_WRITE (Linux 5.14); before it, a write to each page of what it
                // reads already.
                guard madvise(run, length, MADV_POPULATE_WRITE) != 0 else { return }
                var offset = 0
                while offset < length {
                    run.storeBytes(of: run.load(fromByteOffset: offset, as: UInt8.self), toByteOffset: offset, as: UInt8.self)
                    offset += pageSize
                }
            }
        }
        return destinations
    }

    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// pagemap's bits: the page is in memory; it is swapped out; it is the file's (or shared).
    private static let pagePresent: UInt64 = 1 << 63
    private static let pageSwapped: UInt64 = 1 << 62
    private static let pageOfFile: UInt64 = 1 << 61

    /// Copies into `bytes` (whose first byte is `start`'s) the pages of `start..<end` that pagemap
    /// says the process holds (in memory or swapped), or with `onlyChanged` those that are its
    /// own rather than its file's, but for the whole pages of `skipping` (left reading as zeros;
    /// by pagemap's word only).
    /// Without pagemap, every page is read and those all zeros are given back to the kernel.
    /// Returns the byte ranges of `bytes` copied by pagemap's word (nil without pagemap).
    @discardableResult
    private static func copyPages(
        _ pid: Int32, pageMap: Int32, from start: UInt64, to end: UInt64, into bytes: RegionBytes, onlyChanged: Bool,
        skipping: [Range<UInt64>] = []
    ) -> [Range<Int>]? {
        guard let base = bytes.buffer.baseAddress, start < end else { return [] }
        let destination = UnsafeMutableRawPointer(mutating: base)
        let pageSize = UInt64(Self.pageSize)
        // Reads `from..<to` of the process into the copy; a page that cannot be read (beyond its
        // file's end) is skipped, not the rest.
        func copy(_ from: UInt64, _ to: UInt64) {
            var position = from
            while position < to {
                let chunk = Swift.min(Int(to - position), 1 << 22)
                let result = leakaudit_host_read_memory(pid, position, destination + Int(position - start), chunk)
                if result <= 0 {
                    position = (position / pageSize + 1) * pageSize
                    continue
                }
                position += UInt64(result)
            }
        }
        guard pageMap >= 0 else {
            if onlyChanged { return nil }  // the file's pages are there already
            let step = pageSize * 1024
            var position = start
            while position < end {
                let next = Swift.min(end, (position / step + 1) * step)
                copy(position, next)
                // Pages of zeros cost nothing once given back (an untouched reservation reads so).
                var page = (position + pageSize - 1) / pageSize * pageSize
                while page + pageSize <= next {
                    let pointer = destination + Int(page - start)
                    if UnsafeRawBufferPointer(start: pointer, count: Int(pageSize)).allSatisfy({ $0 == 0 }) {
                        madvise(pointer, Int(pageSize), MADV_DONTNEED)
                    }
                    page += pageSize
                }
                position = next
            }
            return nil
        }
        var copied: [Range<Int>] = []
        forEachHeldRun(pageMap: pageMap, from: start, to: end, onlyChanged: onlyChanged, skipping: skipping) { from, to in
            copy(from, to)
            copied.append(Int(from - start)..<Int(to - start))
        }
        return copied
    }

    /// Calls `body` with each run of `start..<end` whose pages pagemap says the process holds (in
    /// memory or swapped), or with `onlyChanged` those that are its own rather than its file's,
    /// but for the whole pages of `skipping`; in order, each run as long as it can be.
    private static func forEachHeldRun(
        pageMap: Int32, from start: UInt64, to end: UInt64, onlyChanged: Bool, skipping: [Range<UInt64>],
        body: (UInt64, UInt64) -> Void
    ) {
        guard start < end else { return }
        let pageSize = UInt64(Self.pageSize)
        var page = start / pageSize
        let lastPage = (end - 1) / pageSize
        // At most 512 KB of entries a read, and no more than the region has pages: the buffer is
        // zeroed once a region, and most regions are a few pages.
        let entriesPerRead = Int(Swift.min(65_536, lastPage - page + 1))
        var entries = [UInt64](repeating: 0, count: entriesPerRead)
        var runStart: UInt64? = nil
        while page <= lastPage {
            let wanted = Int(Swift.min(UInt64(entriesPerRead), lastPage - page + 1))
            let read = entries.withUnsafeMutableBytes {
                pread(pageMap, $0.baseAddress, wanted * 8, off_t(truncatingIfNeeded: page &* 8))
            }
            let got = read > 0 ? read / 8 : 0
            for index in 0..<wanted {
                let entry = index < got ? entries[index] : 0
                let held =
                    onlyChanged
                    ? (entry & pagePresent != 0 && entry & pageOfFile == 0) || entry & pageSwapped != 0
                    : entry & (pagePresent | pageSwapped) != 0
                let address = (page + UInt64(index)) * pageSize
                if held && !skipping.contains(where: { $0.contains(address) }) {
                    if runStart == nil { runStart = address }
                } else if let first = runStart {
                    body(Swift.max(first, start), Swift.min(address, end))
                    runStart = nil
                }
            }
            page += UInt64(wanted)
        }
        if let first = runStart { body(Swift.max(first, start), end) }
    }

    /// A file mapping's bytes from its file: code and read-only data that the loader never
    /// relocates (the linker may put type descriptors there) are the file's own, and mapping the
    /// file costs the page cache's pages instead of a copy. `writable` maps it copy-on-write, so
    /// that the pages the process changed can be copied over the file's. nil when the file cannot
    /// be mapped (replaced since: another inode; gone, not a regular file, or shorter than the
    /// mapping).
    private static func mapFile(_ region: ProcessSnapshot.Region, writable: Bool) -> RegionBytes? {
        let descriptor = open(region.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        let length = Int(region.end - region.start)
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            Int(status.st_size) >= Int(region.fileOffset) + length, UInt64(status.st_ino) == region.inode
        else { return nil }
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        let mapping = mmap(nil, length, protection, MAP_PRIVATE | MAP_NORESERVE, descriptor, off_t(region.fileOffset))
        guard let mapping, mapping != MAP_FAILED else { return nil }
        return RegionBytes(UnsafeRawBufferPointer(start: mapping, count: length)) {
            munmap(UnsafeMutableRawPointer(mutating: $0.baseAddress), $0.count)
        }
    }

    private static func threadIDs(of pid: Int32) -> [Int32] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [] }
        return names.compactMap { Int32($0) }.sorted()
    }

    private static func threadName(_ pid: Int32, _ thread: Int32) -> String {
        let bytes = procBytes("/proc/\(pid)/task/\(thread)/comm") ?? []
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// A /proc file's text: read until its end, since its size reads as 0.
    static func procFile(_ path: String) -> String? {
        procBytes(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A /proc file's bytes, read until its end. Each read goes to a buffer on the stack: a walk
    /// reads the maps twice and every thread's name, and a 64 KB array zeroed for each read cost
    /// more than the read.
    static func procBytes(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16_384) { buffer in
            while true {
                let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                bytes.append(contentsOf: buffer[0..<count])
            }
        }
        return bytes
    }

    /// /proc/<pid>/maps: `start-end perms offset dev inode path`, sorted by start. Read over its
    /// bytes: the kernel separates lines and fields with single bytes, and reading thousands of
    /// lines a Character at a time cost a walk about 40 M instructions each time, once of them
    /// while the process was stopped.
    static func readMappings(_ pid: Int32) -> [ProcessSnapshot.Region]? {
        procBytes("/proc/\(pid)/maps").map(mappings(fromMaps:))
    }

    /// The readable regions a maps file's text lists (`readMappings`); a line that does not read
    /// as one is left out.
    static func mappings(fromMaps text: [UInt8]) -> [ProcessSnapshot.Region] {
        let space = UInt8(ascii: " ")
        func number(_ field: ArraySlice<UInt8>, radix: Int) -> UInt64? {
            UInt64(String(decoding: field, as: UTF8.self), radix: radix)
        }
        var regions: [ProcessSnapshot.Region] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: space, maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5 else { continue }
            let bounds = fields[0].split(separator: UInt8(ascii: "-"))
            guard bounds.count == 2, let start = number(bounds[0], radix: 16), let end = number(bounds[1], radix: 16),
                start < end
            else { continue }
            let permissions = fields[1]
            guard permissions.count >= 3, permissions.first == UInt8(ascii: "r") else { continue }
            let path = fields.count == 6 ? String(decoding: fields[5].drop { $0 == space }, as: UTF8.self) : ""
            regions.append(
                ProcessSnapshot.Region(
                    start: start, end: end, isWritable: permissions.dropFirst().first == UInt8(ascii: "w"),
                    isExecutable: permissions.dropFirst(2).first == UInt8(ascii: "x"), path: path,
                    fileOffset: number(fields[2], radix: 16) ?? 0, inode: number(fields[4], radix: 10) ?? 0,
                    copiedStart: start, bytes: RegionBytes()))
        }
        return regions
    }
}
