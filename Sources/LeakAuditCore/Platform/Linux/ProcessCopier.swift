import CLeakAuditHost
import FoundationEssentials
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// Copies a process for the heap walk (docs/retainers.md): stops each of its threads with ptrace
/// (seize and interrupt: no signal is sent, and an interrupted system call is restarted), reads
/// their registers, copies its readable data mappings with process_vm_readv, and lets it run on.
/// Device mappings and leak-audit's own ring are not copied; a thread's stack is copied from its
/// stack pointer up.
enum ProcessCopier {
    /// How long one thread may take to stop.
    static let stopTimeoutMilliseconds: Int32 = 2_000

    static func copy(_ pid: Int32) -> Result<ProcessSnapshot, SnapshotFailure> {
        var stopped: [Int32] = []
        defer { for thread in stopped { leakaudit_host_resume_thread(thread) } }
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
            // Every thread stopped is let go again (the defer above), whatever went wrong with another.
            for (thread, error) in zip(new, results) where error == 0 { stopped.append(thread) }
            if results.contains(EPERM) {
                return .failure(
                    .notPermitted(
                        detail:
                            "ptrace: \(systemErrorMessage(EPERM)); allow tracing descendants: kernel.yama.ptrace_scope 0 or 1, and CAP_SYS_PTRACE or a seccomp profile that permits ptrace in a container"
                    ))
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
        var regions: [ProcessSnapshot.Region] = []
        for var region in mappings {
            if copies(region) {
                // A stack is live only above its thread's stack pointer (less a red zone).
                let pointers = threads.map(\.stackPointer).filter { region.start <= $0 && $0 < region.end }
                if let lowest = pointers.min() { region.copiedStart = Swift.max(region.start, lowest &- 128) }
                region.bytes =
                    region.isExecutable && region.path.hasPrefix("/")
                    ? (mapFile(region) ?? read(pid, from: region.copiedStart, to: region.end))
                    : read(pid, from: region.copiedStart, to: region.end)
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

    private static func read(_ pid: Int32, from start: UInt64, to end: UInt64) -> RegionBytes {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(end - start), alignment: 16)
        var copied = 0
        while copied < buffer.count {
            let chunk = Swift.min(buffer.count - copied, 1 << 22)
            let result = leakaudit_host_read_memory(pid, start + UInt64(copied), buffer.baseAddress! + copied, chunk)
            if result <= 0 { break }
            copied += result
        }
        return RegionBytes(UnsafeRawBufferPointer(rebasing: buffer[0..<copied])) { _ in buffer.deallocate() }
    }

    /// An executable mapping's bytes from its file: code and read-only data that the loader never
    /// relocates (the linker may put type descriptors there) are the file's own, and mapping the
    /// file costs the page cache's pages instead of a copy. nil when the file cannot be mapped
    /// (replaced since, or gone).
    private static func mapFile(_ region: ProcessSnapshot.Region) -> RegionBytes? {
        let descriptor = open(region.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        let length = Int(region.end - region.start)
        guard fstat(descriptor, &status) == 0, Int(status.st_size) >= Int(region.fileOffset) + length else { return nil }
        let mapping = mmap(nil, length, PROT_READ, MAP_PRIVATE, descriptor, off_t(region.fileOffset))
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
        let text = procFile("/proc/\(pid)/task/\(thread)/comm") ?? ""
        return String(text.split(separator: "\n").first ?? "")
    }

    /// A /proc file's text: read until its end, since its size reads as 0.
    private static func procFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// /proc/<pid>/maps: `start-end perms offset dev inode path`, sorted by start.
    private static func readMappings(_ pid: Int32) -> [ProcessSnapshot.Region]? {
        guard let text = procFile("/proc/\(pid)/maps") else { return nil }
        var regions: [ProcessSnapshot.Region] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5 else { continue }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16),
                start < end
            else { continue }
            let permissions = Array(fields[1].utf8)
            guard permissions.count >= 3, permissions[0] == UInt8(ascii: "r") else { continue }
            let path = fields.count == 6 ? String(fields[5].drop { $0 == " " }) : ""
            regions.append(
                ProcessSnapshot.Region(
                    start: start, end: end, isWritable: permissions[1] == UInt8(ascii: "w"),
                    isExecutable: permissions[2] == UInt8(ascii: "x"), path: path, fileOffset: UInt64(fields[2], radix: 16) ?? 0,
                    copiedStart: start, bytes: RegionBytes()))
        }
        return regions
    }
}
