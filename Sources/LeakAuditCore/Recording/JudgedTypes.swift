// Which types a test is judged by: the type's origin (Configuration/TypeOrigin.swift), its budget,
// and whether XCTest keeps its instances. The heap walk after each test and the report both ask.

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

/// Which types of a ledger a test is judged by (`isJudgedPerTest`), each told once: the answer
/// reads the type's name, and a test may leave thousands of instances of one type.
struct JudgedTypes {
    private let types: [UInt32: LifetimeLedger.TypeLedger]
    private let watch: WatchOptions
    private var known: [UInt32: Bool] = [:]

    init(_ types: [UInt32: LifetimeLedger.TypeLedger], watch: WatchOptions) {
        self.types = types
        self.watch = watch
    }

    /// True when the type of id `typeID` is defined and judged per test.
    mutating func contains(_ typeID: UInt32) -> Bool {
        if let answer = known[typeID] { return answer }
        let answer = types[typeID]?.isJudgedPerTest(watch: watch) == true
        known[typeID] = answer
        return answer
    }
}
