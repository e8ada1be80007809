#if canImport(Glibc)
    import Glibc
#endif

/// Whether a process is one leak-audit started, in the kernel's view: the pid a heap-walk request
/// names comes from the channel, which any process of the same user may write, so it is checked
/// against the parent chain in /proc before leak-audit stops, reads or copies anything of it
/// (docs/reliability.md, "The channel").
enum ProcessLineage {
    /// Parents looked through at most: deeper trees than this are not a run's.
    static let mostGenerations = 4096

    /// True when `pid` is a descendant of leak-audit (this process): the target, a process the
    /// target started, or one of those orphaned, which the kernel gives leak-audit as their child
    /// subreaper (`leakaudit_host_spawn`). False for leak-audit itself, for any other process and
    /// for a pid that is gone.
    static func isStartedByLeakAudit(_ pid: Int32) -> Bool {
        let leakAudit = getpid()
        var current = pid
        for _ in 0..<mostGenerations {
            guard current > 1, current != leakAudit, let parent = parent(of: current) else { return false }
            if parent == leakAudit { return true }
            current = parent
        }
        return false
    }

    /// The parent of `pid` from /proc/<pid>/stat, nil when it cannot be read.
    static func parent(of pid: Int32) -> Int32? {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return parent(inStat: buffer[..<count])
    }

    /// The fourth field of a /proc/<pid>/stat line, "pid (command) state ppid …": the command may
    /// hold spaces and parentheses, so the fields are counted from its last ')'.
    static func parent(inStat line: ArraySlice<UInt8>) -> Int32? {
        guard let close = line.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = line[(close + 1)...].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard fields.count >= 2 else { return nil }
        return Int32(String(decoding: fields[1], as: UTF8.self))
    }
}
