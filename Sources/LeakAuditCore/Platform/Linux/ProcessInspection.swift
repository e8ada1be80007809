import LeakAuditFiles
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// What `leak-audit inspect` needs of a running process that leak-audit did not start: whether it
/// may be stopped (it exists, is the same user's, is traced by no one else, is Swift), read from
/// /proc before anything stops it; and, once it is copied, its loaded images from its mappings and
/// their ELF program headers, as the shim records them for a process it runs in.
enum ProcessInspection {
    /// The process `pid`, or the one clear reason it cannot be inspected.
    static func describe(_ pid: Int32) throws(LeakAuditError) -> InspectedProcess {
        guard let status = ProcessCopier.procFile("/proc/\(pid)/status"), !status.isEmpty else {
            throw .processNotFound(pid: pid)
        }
        var fields: [Substring: Substring] = [:]
        for line in status.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon]] = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
        }
        if fields["State"]?.first == "Z" || fields["State"]?.first == "X" { throw .processNotFound(pid: pid) }
        // Real, effective, saved and filesystem uids: tracing needs them all to be leak-audit's.
        let uids = (fields["Uid"] ?? "").split(whereSeparator: { $0 == "\t" || $0 == " " }).compactMap { UInt32($0) }
        let own = geteuid()
        if own != 0, uids.contains(where: { $0 != own }) {
            throw .processNotPermitted(
                pid: pid,
                detail:
                    "it runs as another user (uid \(uids.first { $0 != own } ?? 0)); run leak-audit as the user the process runs as"
            )
        }
        if let tracer = fields["TracerPid"].flatMap({ Int32($0) }), tracer != 0 {
            throw .processNotPermitted(
                pid: pid, detail: "it is traced already (by pid \(tracer), a debugger?); detach that tracer first")
        }
        let name = String((ProcessCopier.procFile("/proc/\(pid)/comm") ?? "").split(separator: "\n").first ?? "")
        let commandLine = (ProcessCopier.procFile("/proc/\(pid)/cmdline") ?? "")
            .split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init)
        var executable = ""
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        if length > 0 { executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        // The file as the process mapped it, even if it was replaced or deleted since.
        let kind = length > 0 ? TargetKind.inspect(path: "/proc/\(pid)/exe") : .other
        let maps = ProcessCopier.procFile("/proc/\(pid)/maps") ?? ""
        let loadsSwiftRuntime = maps.split(separator: "\n").contains { $0.hasSuffix("/libswiftCore.so") }
        guard loadsSwiftRuntime || [.dynamicSwift, .swiftTestBundle, .staticSwift].contains(kind) else {
            if maps.isEmpty && ProcessCopier.procFile("/proc/\(pid)/status") == nil { throw .processNotFound(pid: pid) }
            throw .processNotSwift(pid: pid, name: name)
        }
        return InspectedProcess(
            pid: pid, name: name, executablePath: executable, commandLine: commandLine,
            kind: loadsSwiftRuntime && kind == .staticSwift ? .dynamicSwift : kind)
    }

    /// Why ptrace may be refused here, for a process that is not leak-audit's child: Yama's
    /// `ptrace_scope` as the kernel has it.
    static var tracingAdvice: String {
        let scope = ProcessCopier.procFile("/proc/sys/kernel/yama/ptrace_scope")?.first { !$0.isWhitespace }
        switch scope {
        case "1":
            return
                "kernel.yama.ptrace_scope is 1, so only a process's ancestors may trace it: set it to 0 (sysctl), or give leak-audit CAP_SYS_PTRACE"
        case "2", "3":
            return "kernel.yama.ptrace_scope is \(scope.map(String.init) ?? ""), which keeps leak-audit from tracing it"
        default:
            return "a container without CAP_SYS_PTRACE, or a seccomp profile that blocks ptrace, keeps leak-audit from tracing it"
        }
    }

    /// The ELF images mapped in `snapshot`: each file mapped from its start (offset 0), with its
    /// load bias and the runtime range of its PT_LOAD segments (so .bss, mapped anonymously after
    /// the file, is the image's data) and its GNU build-id, read from the file's program headers.
    static func modules(of snapshot: ProcessSnapshot) -> [ModuleImage] {
        var modules: [ModuleImage] = []
        var seen = Set<String>()
        for region in snapshot.regions where region.fileOffset == 0 && region.path.hasPrefix("/") {
            guard !region.path.hasPrefix("/dev/"), !region.path.hasSuffix(" (deleted)"), !seen.contains(region.path),
                let headers = ProgramHeaders(path: region.path, inode: region.inode)
            else { continue }
            seen.insert(region.path)
            // The mapping at offset 0 holds the lowest segment, page-aligned down.
            let pageMask = UInt64(sysconf(Int32(_SC_PAGESIZE))) - 1
            let bias = region.start &- (headers.lowestAddress & ~pageMask)
            modules.append(
                ModuleImage(
                    path: region.path, buildID: headers.buildID, loadBias: bias, start: bias &+ headers.lowestAddress,
                    end: bias &+ headers.highestAddress))
        }
        return modules
    }
}

/// What an ELF file's program headers say of its loaded image: the link-time range of its PT_LOAD
/// segments and its GNU build-id note.
struct ProgramHeaders {
    var lowestAddress: UInt64 = .max
    var highestAddress: UInt64 = 0
    var buildID: [UInt8] = []

    /// nil when the file is not a 64-bit little-endian ELF file with loadable segments, or not the
    /// inode that was mapped.
    init?(path: String, inode: UInt64) {
        guard let (descriptor, header, _) = ELFFile.open(path, inode: inode == 0 ? nil : inode) else { return nil }
        defer { close(descriptor) }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 20 else { return nil }
            return ELFFile.read(descriptor, offset, count)
        }
        let u32 = ELFFile.u32
        let u64 = ELFFile.u64
        let tableOffset = u64(header, 0x20)
        let entrySize = Int(ELFFile.u16(header, 0x36))
        let count = Int(ELFFile.u16(header, 0x38))
        guard entrySize >= 56, count > 0, let table = read(tableOffset, entrySize * count) else { return nil }
        for index in 0..<count {
            let base = index * entrySize
            let type = u32(table, base)
            let offset = u64(table, base + 0x08)
            let address = u64(table, base + 0x10)
            let fileSize = u64(table, base + 0x20)
            let memorySize = u64(table, base + 0x28)
            if type == 1 {  // PT_LOAD
                lowestAddress = Swift.min(lowestAddress, address)
                highestAddress = Swift.max(highestAddress, address &+ memorySize)
            } else if type == 4, buildID.isEmpty, fileSize < 1 << 16, let notes = read(offset, Int(fileSize)) {  // PT_NOTE
                var cursor = 0
                while cursor + 12 <= notes.count {
                    let nameSize = Int(u32(notes, cursor))
                    let descriptionSize = Int(u32(notes, cursor + 4))
                    let noteType = u32(notes, cursor + 8)
                    let nameEnd = cursor + 12 + (nameSize + 3) & ~3
                    let end = nameEnd + (descriptionSize + 3) & ~3
                    guard end <= notes.count else { break }
                    if noteType == 3, nameSize == 4, notes[(cursor + 12)..<(cursor + 16)] == [0x47, 0x4E, 0x55, 0] {  // "GNU"
                        buildID = Array(notes[nameEnd..<(nameEnd + descriptionSize)])
                        break
                    }
                    cursor = end
                }
            }
        }
        guard lowestAddress < highestAddress else { return nil }
    }
}
