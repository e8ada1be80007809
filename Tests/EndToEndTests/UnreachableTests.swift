import FoundationEssentials
import LeakAuditModel
import XCTest

/// The unreachable check of `leak-audit run` (`--unreachable`, and the default with no setup) on
/// the fixtures of every shape a leak takes (Fixtures/Sources/UnreachableShapes), each with a clean
/// twin that must report nothing.
final class UnreachableTests: XCTestCase {
    /// What one shape leaves: structures, objects, the group's shape and path (types without
    /// their module, and how each holds the next).
    private struct Expected {
        var shape: String
        var structures: Int
        var objects: Int
        var kind: UnreachableObjects.Group.Shape
        var path: String
    }

    private let expected: [Expected] = [
        Expected(shape: "pairs", structures: 3, objects: 6, kind: .cycle, path: "PairA / other PairB / other PairA"),
        Expected(
            shape: "closures", structures: 2, objects: 6, kind: .cycle,
            path: "Downloader / onFinish context of closure #1 in makeClosures() / captured downloader Downloader"),
        Expected(
            shape: "families", structures: 2, objects: 10, kind: .cycle,
            path: "File / parent Folder / children [AnyObject] / [i] File"),
        Expected(
            shape: "registry", structures: 1, objects: 6, kind: .cycle,
            path: #"Entry / registry Registry / entries [String: Entry] / ["alpha"] Entry"#),
        Expected(
            shape: "delegates", structures: 4, objects: 8, kind: .cycle,
            path: "Controller / view View / delegate Controller"),
        Expected(
            shape: "enum-ring", structures: 2, objects: 6, kind: .cycle,
            path: "RingNode / link RingNode / link RingNode / link RingNode"),
        Expected(shape: "over-retained", structures: 5, objects: 10, kind: .overRetained, path: "Session"),
        Expected(
            shape: "freed-blocks", structures: 4, objects: 8, kind: .cycle,
            path: "Orphan / peer OrphanPeer / orphan Orphan"),
        Expected(
            shape: "capture-slack", structures: 2, objects: 4, kind: .cycle,
            path: "Stray / partner StrayPartner / stray Stray"),
        Expected(
            shape: "value-slack", structures: 8, objects: 16, kind: .cycle,
            path: "Drifter / partner DrifterPartner / drifter Drifter"),
        Expected(
            shape: "optional-slack", structures: 3, objects: 6, kind: .cycle,
            path: "Drifter / partner DrifterPartner / drifter Drifter"),
        Expected(
            shape: "tail-elements", structures: 2, objects: 6, kind: .cycle,
            path: "Ledger / [0] LedgerLine / ledger Ledger"),
        Expected(
            shape: "private-module", structures: 2, objects: 4, kind: .cycle,
            path: "_ShapeParts.Axle / gear _ShapeParts.Gear / axle _ShapeParts.Axle"),
    ]

    /// The report's `unreachable`; the JSON always has the key (`null` where nothing was checked).
    private func unreachable(_ audit: Harness.Audit) throws -> UnreachableObjects? {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: audit.jsonPath)))
        XCTAssertEqual((json as? [String: Any])?.keys.contains("unreachable"), true, audit.jsonPath)
        return audit.report.unreachable
    }

    /// A path as one line: each step's `via` and its type without its module.
    private func line(_ path: [Retainer.Step]) -> String {
        path.map { step in
            let type = step.type.replacingOccurrences(of: "UnreachableShapes.", with: "")
                .replacingOccurrences(of: "Swift.", with: "")
            return step.via.isEmpty ? type : "\(step.via) \(type)"
        }.joined(separator: " / ")
    }

    func testEachLeakyShapeReportsItsStructuresWithNoSetup() throws {
        for shape in expected {
            let audit = try Harness.audit("UnreachableShapes", ["leaky", shape.shape])
            XCTAssertNil(audit.report.notAudited, shape.shape)
            let checked = try unreachable(audit)
            let found = try XCTUnwrap(checked, shape.shape)
            XCTAssertEqual(found.processesChecked, 1, shape.shape)
            XCTAssertEqual(found.objects, shape.objects, shape.shape)
            XCTAssertGreaterThan(found.bytes, 0, shape.shape)
            XCTAssertEqual(found.groups.count, 1, "\(shape.shape): \(found.groups)")
            let group = try XCTUnwrap(found.groups.first)
            XCTAssertEqual(group.shape, shape.kind, shape.shape)
            XCTAssertEqual(group.count, shape.structures, shape.shape)
            XCTAssertEqual(group.objects, shape.objects, shape.shape)
            XCTAssertEqual(group.bytes, found.bytes, shape.shape)
            XCTAssertEqual(line(group.path), shape.path, shape.shape)
            XCTAssertFalse(group.isInternal, shape.shape)
            // Every object is counted under its type.
            XCTAssertEqual(found.types.reduce(0) { $0 + $1.count }, shape.objects, shape.shape)
            XCTAssertEqual(found.types.reduce(0) { $0 + $1.bytes }, found.bytes, shape.shape)
            XCTAssertEqual(audit.status, 1, "\(shape.shape): \(audit.stderr)")
        }
    }

    func testEachCleanTwinReportsNothing() throws {
        // freed-blocks' clean twin holds its cycles through live malloc blocks: reachable because
        // untyped memory is read as a holder (the conservative roots).
        for shape in expected {
            let audit = try Harness.audit("UnreachableShapes", ["clean", shape.shape])
            XCTAssertNil(audit.report.notAudited, shape.shape)
            let checked = try unreachable(audit)
            let found = try XCTUnwrap(checked, shape.shape)
            XCTAssertEqual(found.objects, 0, "\(shape.shape): \(found.groups)")
            XCTAssertEqual(found.groups, [], shape.shape)
            XCTAssertEqual(audit.status, 0, "\(shape.shape): \(audit.stderr)")
        }
    }

    /// Objects every holder of Fixtures/Sources/ReachableHolders keeps (a global, opaque retained
    /// pointers in C memory, multi-payload enum payloads, waiting threads' locals, a dictionary of
    /// arrays and a `Set`, values read by their layout) are reachable: nothing of the program's is
    /// reported.
    func testEveryReachableHolderReportsNothing() throws {
        let holders = [
            "global-cycle", "opaque-pointers", "enum-payloads", "sleeping-threads", "collections", "closure-queue",
            "value-layouts", "tagged-payloads", "tail-elements",
        ]
        for holder in holders {
            let audit = try Harness.audit("ReachableHolders", [holder])
            let found = try XCTUnwrap(try unreachable(audit), holder)
            XCTAssertEqual(found.processesChecked, 1, holder)
            let programs = found.types.filter { $0.name.hasPrefix("ReachableHolders.") }
            XCTAssertEqual(programs.map(\.name), [], "\(holder): \(found.groups)")
            XCTAssertEqual(found.failingGroups, [], holder)
            XCTAssertEqual(audit.status, 0, "\(holder): \(audit.stderr)")
        }
    }

    /// A `ManagedBuffer`'s elements, allocated past its header, hold what they store: a cycle
    /// through them is one cycle (`Ledger → [0] LedgerLine.ledger → Ledger`, not lines
    /// over-retained), its clean twin leaves nothing, and what only the elements of a global
    /// buffer or of an `AsyncStream`'s pending events hold is reachable (an exit test's spans
    /// and log records that swift-otel's tracer and log processor had yielded to streams that
    /// no service consumed read as over-retained).
    func testManagedBufferElementsHoldWhatTheyStore() throws {
        let leaky = try Harness.audit("UnreachableShapes", ["leaky", "tail-elements"])
        let found = try XCTUnwrap(try unreachable(leaky))
        XCTAssertEqual(
            found.groups.map { "\($0.count) × \($0.shape): \(line($0.path))" },
            [
                "2 × cycle: Ledger / [0] LedgerLine / ledger Ledger"
            ])
        XCTAssertEqual(found.objects, 6)
        XCTAssertEqual(leaky.status, 1, leaky.stderr)
        let clean = try Harness.audit("UnreachableShapes", ["clean", "tail-elements"])
        XCTAssertEqual(try XCTUnwrap(try unreachable(clean)).groups, [])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        let held = try Harness.audit("ReachableHolders", ["tail-elements"])
        let reachable = try XCTUnwrap(try unreachable(held))
        XCTAssertEqual(reachable.processesChecked, 1)
        XCTAssertEqual(reachable.types.filter { $0.name.hasPrefix("ReachableHolders.") }.map(\.name), [], "\(reachable.groups)")
        XCTAssertEqual(held.status, 0, held.stderr)
    }

    /// Objects the optimizer frees where it made them (their deinit's body run in place, then
    /// swift_deallocClassInstance, no destroy word read: Fixtures/Sources/InlinedDeaths, built
    /// with -O) are seen to die: the census counts none of the 64 locks made and dropped, and the
    /// heap walk, which finds none of them, checks the process and finds the leaky twin's cycle.
    /// Unseen, they stayed alive in the ledger, and "64 of 64 objects known alive were not found
    /// in malloc's blocks" left the process unchecked (as every Swift Testing process with few
    /// objects alive at exit was: its cancellation handling drops such a lock for each test).
    func testObjectsFreedInlineAreSeenToDie() throws {
        let path = try Harness.releaseFixture("InlinedDeaths")
        func alive(_ audit: Harness.Audit) -> [String] {
            (audit.report.census?.entries ?? []).filter { $0.liveAtExit > 0 }.map(\.name)
        }
        let clean = try Harness.audit(path: path, ["clean"], extraOptions: ["--census", "--unreachable"])
        XCTAssertEqual(alive(clean), [], clean.stderr)
        let checked = try XCTUnwrap(try unreachable(clean), clean.stderr)
        XCTAssertEqual(checked.processesChecked, 1, clean.stderr)
        XCTAssertEqual(checked.groups, [])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        let leaky = try Harness.audit(path: path, ["leaky"], extraOptions: ["--census", "--unreachable"])
        XCTAssertEqual(alive(leaky), ["InlinedDeaths.Node"], leaky.stderr)
        let found = try XCTUnwrap(try unreachable(leaky), leaky.stderr)
        XCTAssertEqual(found.processesChecked, 1, leaky.stderr)
        XCTAssertEqual(
            found.groups.map { "\($0.count) × \($0.shape): \(line($0.path))" },
            ["1 × cycle: InlinedDeaths.Node / next InlinedDeaths.Node / next InlinedDeaths.Node"])
        XCTAssertEqual(leaky.status, 1, leaky.stderr)
    }

    /// A test bundle's processes are checked at their exit: what XCTest keeps (its observers, its
    /// test cases, leak-audit's own observer among them) is reachable or the harness's, and only
    /// the cycle a test leaves fails.
    func testATestBundleReportsOnlyTheCycleATestLeaves() throws {
        let audit = try Harness.audit(
            "FixturesPackageTests.xctest", ["ScreenTests.CartTests"], extraOptions: ["--unreachable"])
        let found = try XCTUnwrap(try unreachable(audit))
        XCTAssertGreaterThan(found.processesChecked, 0)
        XCTAssertEqual(
            found.failingGroups.map { line($0.path).replacingOccurrences(of: "ScreenTests.", with: "") },
            ["Cart / items [AnyObject] / [0] CartItem / cart Cart"], "\(found.groups)")
        XCTAssertEqual(found.types.filter { $0.name.hasPrefix("LeakAuditTestObserver.") }.map(\.name), [])
        XCTAssertEqual(audit.status, 1, audit.stderr)
    }

    /// A test case's property holds a Catalog whose dictionary's value is a small enum case
    /// written over a large one that named the Catalog (Fixtures/Tests/ScreenTests/
    /// StaleCaseTests.swift): the value is read by its case, so its stale word closes no cycle
    /// that would keep the test case's search out, and nothing is unreachable.
    func testAStaleWordOfAnEnumCaseClosesNoCycle() throws {
        try assertNothingUnreachable(inTestCase: "ScreenTests.CatalogTests")
    }

    /// A nil optional's stale words (a struct of an existential and a `UInt64`, nil by the
    /// existential's metadata word 0, the other words the instance's own address): read by the
    /// value's layout, they hold nothing, and no cycle Reactor → Reactor is reported.
    func testANilOptionalsStaleWordsCloseNoCycle() throws {
        try assertNothingUnreachable(inTestCase: "ScreenTests.NilOptionalTests")
    }

    /// Runs the fixture bundle's test case with `--unreachable`: no object of the fixture's
    /// types is unreachable, no group fails, and the audit exits 0.
    private func assertNothingUnreachable(inTestCase testCase: String, line: UInt = #line) throws {
        let audit = try Harness.audit("FixturesPackageTests.xctest", [testCase], extraOptions: ["--unreachable"])
        let found = try XCTUnwrap(try unreachable(audit), line: line)
        XCTAssertGreaterThan(found.processesChecked, 0, line: line)
        XCTAssertEqual(
            found.types.filter { $0.name.hasPrefix("ScreenTests.") }.map(\.name), [], "\(found.groups)", line: line)
        XCTAssertEqual(found.failingGroups.map { self.line($0.path) }, [], line: line)
        XCTAssertEqual(audit.status, 0, audit.stderr, line: line)
    }

    /// `--unreachable` checks a program that links LeakMonitor too; by default it is audited as
    /// it was, with no unreachable check.
    func testAProgramLinkingLeakMonitorIsCheckedOnlyWhenAsked() throws {
        let byDefault = try Harness.audit("ViewModelRetention")
        let asked = try Harness.audit("ViewModelRetention", extraOptions: ["--unreachable"])
        XCTAssertEqual(
            byDefault.report.types.map(\.name), asked.report.types.map(\.name), "the budgets are judged as before")
        let notChecked = try unreachable(byDefault)
        XCTAssertNil(notChecked)
        let checked = try unreachable(asked)
        let found = try XCTUnwrap(checked)
        XCTAssertEqual(found.processesChecked, 1)
    }
}
