import CLeakAuditHost
import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// Linux: posix_spawn, an inherited memfd for the ring, LD_PRELOAD for the helper libraries,
/// `/proc/self/exe` to find them, ELF headers to tell what a target is, and elfutils' libdw to
/// symbolize.
struct LinuxPlatform: AuditPlatform {
    func resolveExecutable(_ command: String) throws(LeakAuditError) -> String {
        try TargetProcess.resolve(command)
    }

    func inspectExecutable(at path: String) -> TargetKind {
        TargetKind.inspect(path: path)
    }

    func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    func helperLibrary(_ library: HelperLibrary) throws(LeakAuditError) -> String {
        let name =
            switch library {
            case .preload: "libLeakAuditPreload.so"
            case .testObserver: "libLeakAuditTestObserver.so"
            }
        let executable = canonicalPath("/proc/self/exe")
        let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let path = directory + "/" + name
        guard access(path, R_OK) == 0 else { throw .preloadLibraryMissing(path: path) }
        return path
    }

    func environment(preloading library: String, inherited: [String: String]) -> [String: String] {
        let existing = inherited["LD_PRELOAD"] ?? ""
        return ["LD_PRELOAD": existing.isEmpty ? library : "\(library):\(existing)"]
    }

    func shellVariables(starting path: String, inherited: [String: String]) -> [String: String] {
        // bash and zsh set `_` to the path of the command they run. SwiftPM keys its cache of
        // evaluated manifests on its whole environment, `_` included: a `swift test` that saw
        // `_=/…/leak-audit` where a plain run saw `_=/…/swift` compiled and ran every manifest of
        // the package graph again (about 1.5 s for 16 manifests), after each plain run and before
        // the next. A `_` that names another program (`timeout leak-audit run …`) is what the
        // plain run under that program sees too, and stays.
        guard let underscore = inherited["_"], canonicalPath(underscore) == canonicalPath("/proc/self/exe") else {
            return [:]
        }
        return ["_": path]
    }

    func makeSharedRegion(byteCount: Int) throws(LeakAuditError) -> any SharedRegion {
        try MemfdRegion(byteCount: byteCount)
    }

    func launch(executablePath: String, displayName: String, arguments: [[UInt8]], environment: [String: String])
        throws(LeakAuditError) -> any RunningTarget
    {
        try TargetProcess.spawn(
            executablePath: executablePath, displayName: displayName, arguments: arguments, extraEnvironment: environment)
    }

    func makeSymbolizer(modules: [ModuleImage]) -> any AddressSymbolizer {
        Symbolizer(modules: modules, separateDebugInfo: false, libdw: { LibDW.loaded }, shared: .process)
    }

    func prepareImage(_ image: ModuleImage) {
        // On the same thread, first: the walk at the process's exit reads these while it is
        // stopped, and may come before the report.
        let forTheWalks: @Sendable () -> Void = {
            ForeignClassSymbols.prepare(path: image.path)
            ShimStateLocator.prepare(path: image.path)
        }
        SharedModuleResolvers.process.prepare(image, separateDebugInfo: false, libdw: { LibDW.loaded }, first: forTheWalks)
    }

    func copyProcess(_ pid: Int32, takingPreparedMemory: Bool) -> Result<ProcessSnapshot, SnapshotFailure> {
        // The pid comes from the channel: only a process leak-audit started is stopped and read.
        guard ProcessLineage.isStartedByLeakAudit(pid) else { return .failure(.notStartedByLeakAudit) }
        return ProcessCopier.copy(pid, prepared: takingPreparedMemory ? PreparedCopies.process.take(pid) : [:])
    }

    func prepareCopy(of pid: Int32) {
        guard ProcessLineage.isStartedByLeakAudit(pid) else { return }
        PreparedCopies.process.prepare(pid)
    }

    func discardPreparedCopies() { PreparedCopies.process.discard() }

    func immutableGlobalReferences(of pid: Int32, modules: [ModuleImage]) -> Set<UInt64> {
        guard ProcessLineage.isStartedByLeakAudit(pid) else { return [] }
        let symbolizer = Symbolizer(modules: modules, separateDebugInfo: false, libdw: { LibDW.loaded }, shared: .process)
        var references: Set<UInt64> = []
        // One word each; the storage is not changed once set, so it is read without stopping the
        // process (a global not initialized yet reads 0).
        for storage in symbolizer.immutableClassGlobals() where storage.count == 8 {
            var word: UInt64 = 0
            if leakaudit_host_read_memory(pid, storage.lowerBound, &word, 8) == 8, word != 0 { references.insert(word) }
        }
        return references
    }

    func describeProcess(_ pid: Int32) throws(LeakAuditError) -> InspectedProcess {
        try ProcessInspection.describe(pid)
    }

    func copyInspectedProcess(_ pid: Int32) throws(LeakAuditError) -> ProcessSnapshot {
        switch ProcessCopier.copy(pid) {
        case .success(let snapshot): return snapshot
        case .failure(.processGone): throw .processNotFound(pid: pid)
        case .failure(.notPermitted): throw .processNotPermitted(pid: pid, detail: ProcessInspection.tracingAdvice)
        case .failure(let failure): throw .processCopyFailed(pid: pid, reason: failure.message)
        }
    }

    func loadedModules(of snapshot: ProcessSnapshot) -> [ModuleImage] {
        ProcessInspection.modules(of: snapshot)
    }

    func foreignClasses(in modules: [ModuleImage]) -> ForeignClasses {
        ForeignClassSymbols.classes(in: modules)
    }
}

/// An anonymous shared file (memfd), mapped here. No child inherits it (close-on-exec): the target
/// finds it by leak-audit's pid and the descriptor (`<pid>:<fd>`) and opens it through /proc, which
/// only the same user's processes may (docs/reliability.md, "The channel").
final class MemfdRegion: SharedRegion {
    let base: UnsafeMutableRawPointer
    let length: Int
    /// The memfd, which the target maps again from /proc.
    let fileDescriptor: Int32

    var handle: String { "\(getpid()):\(fileDescriptor)" }

    init(byteCount: Int) throws(LeakAuditError) {
        let fd = leakaudit_host_memfd_create("leak-audit-records")
        guard fd >= 0 else { throw .channelUnavailable(call: "memfd_create", errno: errno) }
        guard ftruncate(fd, off_t(byteCount)) == 0 else {
            let code = errno
            close(fd)
            throw .channelUnavailable(call: "ftruncate", errno: code)
        }
        // A process of the run that truncated the channel would make every read of it a SIGBUS:
        // its size is sealed before any process can open it (docs/reliability.md, "The channel").
        guard leakaudit_host_seal_size(fd) == 0 else {
            let code = errno
            close(fd)
            throw .channelUnavailable(call: "fcntl(F_ADD_SEALS)", errno: code)
        }
        guard let mapped = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0),
            mapped != MAP_FAILED
        else {
            let code = errno
            close(fd)
            throw .channelUnavailable(call: "mmap", errno: code)
        }
        base = mapped
        length = byteCount
        fileDescriptor = fd
    }

    deinit {
        munmap(base, length)
        close(fileDescriptor)
    }
}

extension SharedRegion {
    /// The memfd of a region made by `LinuxPlatform`, -1 for one in other memory.
    var fileDescriptor: Int32 { (self as? MemfdRegion)?.fileDescriptor ?? -1 }
}
