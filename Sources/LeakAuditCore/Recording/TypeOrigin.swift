/// Where a recorded type comes from, told by the module its name starts with: the toolchain's and
/// the test harnesses' types, which users cannot act on, apart from the package's own. Both the
/// heap walk after each test and the report ask which types a test is judged by, so the answer
/// sits here, with the ledger both read.
enum TypeOrigin {
    /// Modules of the toolchain whose types users cannot act on.
    static let internalModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "_RegexParser", "Foundation", "FoundationEssentials",
        "FoundationInternationalization", "FoundationNetworking", "FoundationXML", "CoreFoundation", "XCTest",
        "Testing", "_Testing_Foundation", "Dispatch", "Synchronization", "Observation", "Distributed", "RegexBuilder",
        "__C", "_SwiftConcurrencyShims",
    ]

    /// Modules of the test harnesses, whose objects (test cases, runners, locks) live as long as
    /// the harness needs them.
    static let harnessModules: Set<String> = ["XCTest", "Testing", "_Testing_Foundation", "_TestingInterop", "_TestDiscovery"]

    /// True for a type of the Swift runtime, Foundation, XCTest or another toolchain library.
    static func isInternalType(_ name: String) -> Bool {
        let module = name.prefix { $0 != "." && $0 != "<" }
        return internalModules.contains(String(module)) || module.hasPrefix("_")
    }

    /// True for a type of XCTest or Swift Testing.
    static func isHarnessType(_ name: String) -> Bool {
        harnessModules.contains(String(name.prefix { $0 != "." && $0 != "<" }))
    }
}

extension LifetimeLedger.TypeLedger {
    /// True for a type whose instances a test can leak: one with a budget, or with every class
    /// watched, one of the package's own classes; never the harness's, the toolchain's, or a test
    /// case class (XCTest keeps those).
    func isJudgedPerTest(watch: WatchOptions) -> Bool {
        if TypeOrigin.isHarnessType(name) { return false }
        if budget != .none { return true }
        return (watch.census || watch.watchesEveryClass) && !TypeOrigin.isInternalType(name) && !heldByXCTest
    }
}
