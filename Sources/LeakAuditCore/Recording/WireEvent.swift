import LeakAuditModel
import LeakAuditWire

/// One decoded record of the stream, in the order the target committed them.
enum WireEvent: Equatable {
    /// A tracked type, at its first validation or allocation; again when its budget's source
    /// changes (the later definition wins).
    /// `heldByXCTest`: the type descends from XCTestCase, whose instances XCTest keeps until the run
    /// ends.
    case typeDefined(id: UInt32, name: String, max: Int, budget: WireBudget = .code, heldByXCTest: Bool = false)
    /// A distinct allocation stack: raw return addresses, innermost first.
    case stackDefined(id: UInt32, returnAddresses: [UInt64], truncated: Bool)
    /// An ELF image loaded in the target.
    case moduleLoaded(ModuleImage)
    /// An instance passed validation; `sequence` orders it against every other event; `test` is
    /// the id of the test running when it was allocated; `time` is when, in milliseconds since the
    /// channel was created.
    case allocated(typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32? = nil, time: UInt64 = 0)
    /// A test of this process, by id.
    case testDefined(id: UInt32, name: String)
    /// A test changed phase (LA_TEST_STARTED, _FINISHED, _SETTLED).
    case testPhase(id: UInt32, phase: UInt32, sequence: UInt64, time: UInt64 = 0)
    /// A tracked instance was deallocated.
    case deallocated(typeID: UInt32, object: UInt64, sequence: UInt64, time: UInt64 = 0)
    /// The process that writes under this index attached: its pid, command line and LA_PROCESS_*
    /// flags.
    case processAttached(AttachedProcess)
}

/// A process of the run that attached to the channel, as it described itself.
struct AttachedProcess: Equatable {
    /// Its process id.
    var pid: Int32
    /// Its command line: the program as started, then its arguments.
    var commandLine: [String]
    /// LA_PROCESS_* flags.
    var flags: UInt32
    /// Its parent's pid when it attached; 0 when its LeakMonitor did not say.
    var parentPID: Int32 = 0

    /// XCTest or Swift Testing is loaded.
    var isTestBundle: Bool { flags & UInt32(LA_PROCESS_TEST_BUNDLE) != 0 }
    /// It runs Swift Testing's tests rather than XCTest's.
    var runsSwiftTesting: Bool { flags & UInt32(LA_PROCESS_SWIFT_TESTING) != 0 }
    /// Every test it runs is reported, so a count of 0 means that none ran.
    var testsObserved: Bool { flags & UInt32(LA_PROCESS_TESTS_OBSERVED) != 0 }
    /// Every test it skips is reported, so a count of 0 means that none was skipped.
    var skipsObserved: Bool { flags & UInt32(LA_PROCESS_SKIPS_OBSERVED) != 0 }
    /// It links LeakMonitor: the unreachable check by default is not for it.
    var linksMonitor: Bool { flags & UInt32(LA_PROCESS_LINKS_MONITOR) != 0 }
}

/// Where a type's budget came from, as the target recorded it.
enum WireBudget: Equatable {
    /// Declared in code: the type's `max`.
    case code
    /// The budget pattern at this position of LEAK_AUDIT_WATCH.
    case pattern(index: Int)
    /// None: tracked for the census only.
    case none
}
