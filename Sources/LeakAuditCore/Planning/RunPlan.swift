import LeakAuditModel
import LeakAuditWire

/// What leak-audit decided before starting the target: which program it is, what its file is,
/// how it is watched, and what its environment must hold for that.
struct RunPlan {
    /// The program, found as a shell would find it.
    var executablePath: String
    /// What the program's file is (nil when it was not inspected): decides the advice when
    /// nothing could be audited.
    var targetKind: TargetKind?
    /// The request's watch options with what the target adds: test runs name the test of each
    /// allocation and watch every class.
    var watch: WatchOptions
    /// Variables added to the target's environment (the channel's comes when it exists).
    var environment: [String: String] = [:]

    /// Plans the run of `request` on `platform`: finds the target, inspects it, and decides how to
    /// watch it and which helper library to preload.
    ///
    /// - Throws: when the target cannot be found or a needed helper library is missing.
    init(_ request: AuditRequest, on platform: some AuditPlatform, inherited: [String: String])
        throws(LeakAuditError)
    {
        let path = try platform.resolveExecutable(request.target)
        let targetKind = platform.inspectExecutable(at: path)
        var watch = request.configuration.watch
        // Test bundles and `swift test` name the test of each allocation, with no option.
        let base = path.split(separator: "/").last.map(String.init) ?? path
        watch.attributesTests =
            base.hasSuffix(".xctest") || base == "swift" || base == "swift-test" || targetKind == .swiftTestBundle
            || watch.leaksPerTest
        let preload = try? platform.helperLibrary(.preload)
        // A test run watches every class, so that it can say how many objects its tests made and
        // judge each test by all of them.
        watch.watchesEveryClass = watch.attributesTests && preload != nil
        if watch.leaksPerTest {
            // Without the libraries no test is named, and every test would look clean.
            _ = try platform.helperLibrary(.preload)
            _ = try platform.helperLibrary(.testObserver)
        }
        // The unreachable check needs the preloaded library in programs that link no LeakMonitor:
        // asked for, it must be there; by default, it is done where it is.
        if watch.unreachable { _ = try platform.helperLibrary(.preload) }
        watch.unreachableByDefault = watch.unreachableByDefault && preload != nil
        var environment: [String: String] = [:]
        if watch.watchesAllocations || (watch.attributesTests && preload != nil) || watch.checksUnreachable {
            // Types that never opted in are watched from a preloaded copy of the shim.
            let library = try platform.helperLibrary(.preload)
            environment = platform.environment(preloading: library, inherited: inherited)
            environment[LA_WIRE_ENV_WATCH] = watch.environmentValue(
                targetPath: platform.canonicalPath(path))
        } else {
            // A value inherited from an enclosing run would name patterns this run does not have.
            environment[LA_WIRE_ENV_WATCH] = watch.walksHeaps ? watch.environmentValue(targetPath: path) : ""
        }
        environment.merge(platform.shellVariables(starting: path, inherited: inherited)) { _, shell in shell }
        var channelWatchLines: [UInt8]? = nil
        if let value = environment[LA_WIRE_ENV_WATCH],
            LA_WIRE_ENV_WATCH.utf8.count + 1 + value.utf8.count + 1 > Self.mostEnvironmentStringBytes
        {
            // "NAME=value" and its NUL: execve refuses a longer string (E2BIG), and the target would
            // not start at all. The lines go into the channel's file instead, which writers read.
            guard value.utf8.count <= Int(LA_WIRE_MAX_WATCH_BYTES) else {
                throw .configurationTooLarge(
                    bytes: value.utf8.count, budgets: watch.budgets.count, limit: Int(LA_WIRE_MAX_WATCH_BYTES))
            }
            channelWatchLines = Array(value.utf8)
            environment[LA_WIRE_ENV_WATCH] = LA_WIRE_WATCH_IN_CHANNEL
        }
        self.init(executablePath: path, targetKind: targetKind, watch: watch, environment: environment)
        self.channelWatchLines = channelWatchLines
    }

    /// LEAK_AUDIT_WATCH's lines when they are too long for the environment: the channel holds them
    /// after its ring, and the variable says so (docs/record-format.md, "LEAK_AUDIT_WATCH").
    var channelWatchLines: [UInt8]? = nil

    /// The longest string, its NUL included, that Linux passes to a program in its environment
    /// (MAX_ARG_STRLEN: 32 pages of 4 KiB): a longer watch list goes through the channel.
    static let mostEnvironmentStringBytes = 32 * 4096

    init(executablePath: String, targetKind: TargetKind? = nil, watch: WatchOptions, environment: [String: String] = [:]) {
        self.executablePath = executablePath
        self.targetKind = targetKind
        self.watch = watch
        self.environment = environment
    }
}
