import LeakAuditWire

#if canImport(Glibc)
    import Glibc
#endif

/// What to audit: the target and its arguments.
public struct AuditRequest: Sendable {
    /// The program or .xctest bundle, as given on the command line.
    public var target: String
    /// Arguments passed to it unchanged.
    public var arguments: [String]
    /// Budget patterns and the census, for types that never opted in.
    public var watch: WatchOptions
    /// Suppressions and the baseline: which findings fail the run.
    public var policy = FindingPolicy()
    /// The arguments' bytes as the caller received them, passed to the target instead of
    /// `arguments` when set (arguments need not be valid UTF-8).
    public var argumentBytes: [[UInt8]]?

    /// Creates a request.
    public init(target: String, arguments: [String], watch: WatchOptions = WatchOptions()) {
        self.target = target
        self.arguments = arguments
        self.watch = watch
    }
}

/// Everything received from one run of the target, before symbolization.
struct RecordedRun {
    var request: AuditRequest
    var resolvedPath: String
    var outcome: TargetOutcome
    var attached: Bool
    var staticRuntime: Bool
    var recordFormatMismatch = false
    /// One ledger per attached process, by process index: ids and addresses are per process.
    var ledgers: [UInt8: LifetimeLedger]
    var attachedProcesses: Int
    var droppedRecords: UInt64
    var tornSlots: UInt64
    var stackTableFull: Bool
    var typeTableFull = false
    var tooManyProcesses = false
    /// What the target's file says.
    var targetKind: TargetKind? = nil
    /// Swift processes whose allocations were watched.
    var watchedProcesses = 0
    /// Swift processes left out: SwiftPM's manifests and plugins, build helpers.
    var skippedProcesses = 0
    /// A process linking LeakMonitor attached (the preloaded library alone also attaches, to name
    /// tests).
    var instrumented = true
}

/// Runs the target to completion with the channel attached, decoding records as they arrive.
func recordRun(_ request: AuditRequest) throws(LeakAuditError) -> RecordedRun {
    let path = try TargetProcess.resolve(request.target)
    // LEAK_AUDIT_CHANNEL_SLOTS sizes the ring (64 to 2^26 slots, a power of two); tests shrink it to exercise
    // wrap-around and a writer waiting for the reader.
    let requestedSlots = getenv("LEAK_AUDIT_CHANNEL_SLOTS").flatMap { UInt64(String(cString: $0)) }
    let slots = requestedSlots.map { Swift.min(Swift.max($0, 64), 1 << 26) } ?? RecordChannel.defaultSlotCapacity
    let channel = try RecordChannel(slotCapacity: slots)
    var environment = [RecordChannel.environmentVariable: channel.environmentValue]
    // What the file is decides the advice when nothing could be audited.
    let targetKind = TargetKind.inspect(path: path)
    var watch = request.watch
    // Test bundles and `swift test` name the test of each allocation, with no option.
    let base = path.split(separator: "/").last.map(String.init) ?? path
    watch.attributesTests =
        base.hasSuffix(".xctest") || base == "swift" || base == "swift-test" || targetKind == .swiftTestBundle
        || watch.leaksPerTest
    let preloadAvailable = (try? preloadLibraryPath()) != nil
    // A test run watches every class, so that it can say how many objects its tests made and judge
    // each test by all of them.
    watch.watchesEveryClass = watch.attributesTests && preloadAvailable
    if watch.leaksPerTest {
        // Without the libraries no test is named, and every test would look clean.
        _ = try preloadLibraryPath()
        _ = try preloadLibraryPath(named: "libLeakAuditTestObserver.so")
    }
    if watch.watchesAllocations || (watch.attributesTests && preloadAvailable) {
        // Types that never opted in are watched from a preloaded copy of the shim.
        let preload = try preloadLibraryPath()
        let existing = getenv("LD_PRELOAD").map { String(cString: $0) } ?? ""
        environment["LD_PRELOAD"] = existing.isEmpty ? preload : "\(preload):\(existing)"
        environment[String(cString: LA_WIRE_ENV_WATCH)] = watch.environmentValue(targetPath: realPath(path))
    } else {
        // A value inherited from an enclosing run would name patterns this run does not have.
        environment[String(cString: LA_WIRE_ENV_WATCH)] = ""
    }
    let process = try TargetProcess.spawn(
        executablePath: path,
        displayName: request.target,
        arguments: request.argumentBytes ?? request.arguments.map { Array($0.utf8) },
        extraEnvironment: environment
    )
    var decoder = RecordDecoder()
    // One slot per possible process index: an array access per event, not a hash lookup.
    var ledgers = [LifetimeLedger?](repeating: nil, count: Int(LA_WIRE_MAX_PROCESSES))
    let watchesAllocations = watch.watchesAllocations
    func apply(_ event: WireEvent, _ process: UInt8) {
        let slot = Int(process)
        if ledgers[slot] == nil { ledgers[slot] = LifetimeLedger(watchesAllocations: watchesAllocations) }
        ledgers[slot]?.apply(event)
    }
    let outcome: TargetOutcome
    while true {
        if let ended = process.poll() {
            outcome = ended
            break
        }
        decoder.decode(channel, targetFinished: false, into: apply)
        usleep(1_000)
    }
    decoder.decode(channel, targetFinished: true, into: apply)
    let flags = channel.flags
    var effective = request
    effective.watch = watch
    return RecordedRun(
        request: effective,
        resolvedPath: path,
        outcome: outcome,
        attached: channel.attachedPID != 0,
        staticRuntime: flags & UInt32(LA_FLAG_STATIC_RUNTIME) != 0,
        recordFormatMismatch: flags & UInt32(LA_FLAG_VERSION_MISMATCH) != 0,
        ledgers: Dictionary(
            uniqueKeysWithValues: ledgers.enumerated().compactMap { index, ledger in ledger.map { (UInt8(index), $0) } }),
        attachedProcesses: Swift.min(channel.attachedProcesses, Int(LA_WIRE_MAX_PROCESSES)),
        droppedRecords: channel.droppedRecords,
        tornSlots: decoder.tornSlots,
        stackTableFull: flags & UInt32(LA_FLAG_STACK_TABLE_FULL) != 0,
        typeTableFull: flags & UInt32(LA_FLAG_TYPE_TABLE_FULL) != 0,
        tooManyProcesses: flags & UInt32(LA_FLAG_TOO_MANY_PROCESSES) != 0,
        targetKind: targetKind,
        watchedProcesses: channel.watchedProcesses,
        skippedProcesses: channel.skippedProcesses,
        instrumented: flags & UInt32(LA_FLAG_INSTRUMENTED) != 0
    )
}

/// A library built next to the leak-audit executable: libLeakAuditPreload.so by default.
func preloadLibraryPath(named name: String = "libLeakAuditPreload.so") throws(LeakAuditError) -> String {
    let executable = realPath("/proc/self/exe")
    let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    let path = directory + "/" + name
    guard access(path, R_OK) == 0 else { throw .preloadLibraryMissing(path: path) }
    return path
}

/// The absolute, symlink-free form of `path`, or `path` itself when it cannot be resolved.
func realPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}
