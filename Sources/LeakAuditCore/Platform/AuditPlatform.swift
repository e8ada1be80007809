import LeakAuditModel

// The seam between the pipeline and the operating system. Audit.swift and everything it calls see
// only these protocols; Platform/Linux/ implements them (posix_spawn, memfd, /proc, ELF, libdw,
// LD_PRELOAD). A second platform would add a folder beside Linux/ and a line in
// `currentPlatform()`, and change nothing in the pipeline.

/// What an audit needs from the operating system: finding, inspecting and starting the target,
/// sharing the record ring with it, loading leak-audit's helper libraries into it, and
/// symbolizing the addresses it recorded.
protocol AuditPlatform {
    /// Finds `command` as a shell would: a path when it contains a slash, else on PATH.
    func resolveExecutable(_ command: String) throws(LeakAuditError) -> String

    /// What the executable at `path` is, as far as auditing it goes.
    func inspectExecutable(at path: String) -> TargetKind

    /// The absolute, symlink-free form of `path`, or `path` itself when it cannot be resolved.
    func canonicalPath(_ path: String) -> String

    /// The path of one of leak-audit's helper libraries, built beside the leak-audit executable.
    ///
    /// - Throws: `LeakAuditError.preloadLibraryMissing` when it is not there.
    func helperLibrary(_ library: HelperLibrary) throws(LeakAuditError) -> String

    /// The environment variables that make a started program load `library` before its own,
    /// keeping what `inherited` already asks to load.
    func environment(preloading library: String, inherited: [String: String]) -> [String: String]

    /// The variables a shell gives a program it starts that would otherwise name leak-audit in
    /// the target's environment: `_`, the program's path as the shell found it (`path`), when the
    /// shell that started leak-audit put leak-audit's own path there.
    func shellVariables(starting path: String, inherited: [String: String]) -> [String: String]

    /// Memory of `byteCount` zeroed bytes that the target and every process it starts can map.
    func makeSharedRegion(byteCount: Int) throws(LeakAuditError) -> any SharedRegion

    /// Starts `executablePath` with `arguments` (argv[1...], as bytes) and `environment` added to
    /// leak-audit's own, forwarding the signals that stop a run to it.
    func launch(executablePath: String, displayName: String, arguments: [[UInt8]], environment: [String: String])
        throws(LeakAuditError) -> any RunningTarget

    /// A symbolizer for the images one process had loaded.
    func makeSymbolizer(modules: [ModuleImage]) -> any AddressSymbolizer

    /// Begins, in the background, reading what the heap walks and the report will read of
    /// `image`'s file (the foreign classes and the shim's state it defines; its symbol tables
    /// and compile units, for `makeSymbolizer`'s symbolizers), so that they wait less for it:
    /// the walk at a process's exit stops it, and the report comes after the run.
    func prepareImage(_ image: ModuleImage)

    /// Stops every thread of process `pid` (a descendant), copies its memory and registers, and
    /// lets it run on; with `takingPreparedMemory`, into the memory `prepareCopy` made for it, where
    /// that still fits (a walk at exit's copy, not the one that asks what test case objects hold).
    func copyProcess(_ pid: Int32, takingPreparedMemory: Bool) -> Result<ProcessSnapshot, SnapshotFailure>

    /// Begins, in the background, making the memory a copy of process `pid` (a descendant that
    /// waits at its end) will be made in, so that its walk at exit waits less for it.
    func prepareCopy(of pid: Int32)

    /// Gives back the memory `prepareCopy` made for copies that never came.
    func discardPreparedCopies()

    /// The objects that the `let` globals and `static let`s of a class type of process `pid` (a
    /// descendant, with the images it loaded) hold now, read while it runs: a reference stored
    /// there once stays until the process ends. Empty when none is known.
    func immutableGlobalReferences(of pid: Int32, modules: [ModuleImage]) -> Set<UInt64>

    /// The running process `pid` that `leak-audit inspect` was pointed at, read without stopping
    /// it.
    ///
    /// - Throws: `LeakAuditError` when it is gone, another user's, traced already, or not Swift.
    func describeProcess(_ pid: Int32) throws(LeakAuditError) -> InspectedProcess

    /// Stops every thread of process `pid` (any the user may trace, not only a descendant),
    /// copies its memory and registers, and lets it run on; the copy says how long it was stopped.
    ///
    /// - Throws: `LeakAuditError` when it cannot be stopped or copied; it then runs on untouched.
    func copyInspectedProcess(_ pid: Int32) throws(LeakAuditError) -> ProcessSnapshot

    /// The ELF images loaded in a copied process, from its mappings and their files.
    func loadedModules(of snapshot: ProcessSnapshot) -> [ModuleImage]

    /// The first words of the C and C++ objects whose layout the heap walk knows (an ICU
    /// `UnicodeString`, a C block on the heap), from the symbols of the libraries `modules` name.
    func foreignClasses(in modules: [ModuleImage]) -> ForeignClasses
}

/// leak-audit's libraries that a target may load.
enum HelperLibrary: Sendable {
    /// The capture shim, preloaded to watch types that never opted in (and to name tests).
    case preload
    /// The XCTest observer and Swift Testing probe, loaded by the preloaded shim into test bundles.
    case testObserver
}

/// Memory shared with the target's processes, mapped in leak-audit for as long as this lives.
protocol SharedRegion: AnyObject {
    /// The first byte.
    var base: UnsafeMutableRawPointer { get }
    /// Its size in bytes.
    var length: Int { get }
    /// How the target's processes find it: the value of LEAK_AUDIT_CHANNEL.
    var handle: String { get }
}

/// A started target.
protocol RunningTarget {
    /// The outcome once the target has ended, without waiting; nil while it runs.
    func poll() -> TargetOutcome?
    /// Sends `signal` to the target.
    func send(_ signal: Int32)
    /// The signal leak-audit itself received (and passed to the target), if any.
    var receivedSignal: Int32? { get }
    /// Whether process `pid` of the target's tree has ended: it is gone, or a zombie.
    func hasEnded(process pid: Int32) -> Bool
    /// Waits up to `microseconds` between two passes of the reader, and no longer once the target
    /// has ended, so that its end is seen at once.
    func pause(microseconds: UInt32)
}

/// Turns return addresses recorded in a target into frames, out of the target's process.
protocol AddressSymbolizer {
    /// The frames at `returnAddress`: inlined frames first, the physical frame last; never empty.
    func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame]
    /// The global or static variable whose storage holds `address`, demangled; nil if unknown.
    func variable(at address: UInt64) -> String?
    /// The parameters, captures among them, of the closure whose code is at `address`: names as
    /// in the source and their types' names; empty when unknown.
    func closureParameters(at address: UInt64) -> [(name: String, type: String?)]
    /// Why some frames have less detail than they could (missing or unreadable debug
    /// information), once each, as lines for the report.
    var problems: [String] { get }
}

/// The platform leak-audit runs on.
func currentPlatform() -> some AuditPlatform {
    #if os(Linux)
        LinuxPlatform()
    #else
        #error("leak-audit runs on Linux; a second platform implements AuditPlatform (Platform/AuditPlatform.swift)")
    #endif
}
