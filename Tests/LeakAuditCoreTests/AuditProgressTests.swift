import LeakAuditWire
import Synchronization
import XCTest

@testable import LeakAuditCore

/// What a live display hears of an audit under way: the ledgers' tally and when it is reported.
final class AuditProgressTests: XCTestCase {
    func testTheTallyCountsBudgetedAndWatchedInstancesAndFinishedTests() {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 0, name: "App.ViewModel", max: 2))
        ledger.apply(.typeDefined(id: 1, name: "App.Cache", max: 10))
        ledger.apply(.typeDefined(id: 2, name: "Swift.Box", max: 0, budget: .none))
        var sequence: UInt64 = 0
        func alloc(_ type: UInt32, _ object: UInt64) {
            ledger.apply(.allocated(typeID: type, object: object, stackID: 0, sequence: sequence))
            sequence += 1
        }
        for object in UInt64(1)...3 { alloc(0, object * 16) }
        ledger.apply(.deallocated(typeID: 0, object: 16, sequence: sequence))
        for object in UInt64(10)...14 { alloc(1, object * 16) }
        for object in UInt64(20)...26 { alloc(2, object * 16) }
        ledger.apply(.testDefined(id: 0, name: "AppTests.A/testOne"))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_STARTED), sequence: 100))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_FINISHED), sequence: 101))
        ledger.apply(.testDefined(id: 1, name: "AppTests.A/testTwo"))
        ledger.apply(.testPhase(id: 1, phase: UInt32(LA_TEST_STARTED), sequence: 102))

        let tally = ledger.progressTally()
        XCTAssertEqual(tally.trackedAlive, 2 + 5)
        XCTAssertEqual(tally.watchedAlive, 2 + 5 + 7)
        XCTAssertEqual(tally.typesOverBudget, 1, "ViewModel peaked at 3 over 2")
        // ViewModel stands at 2 of 2, Cache at 5 of 10: ViewModel is the closer.
        XCTAssertEqual(tally.closest, .init(typeName: "App.ViewModel", live: 2, max: 2))
        XCTAssertTrue(tally.testsSeen)
        XCTAssertEqual(tally.testsFinished, 1, "the second test still runs")
    }

    func testAProgramWithoutTestsHasNoTestCountAndNothingAliveHasNoStanding() {
        var ledger = LifetimeLedger()
        ledger.apply(.typeDefined(id: 0, name: "App.ViewModel", max: 1))
        let tally = ledger.progressTally()
        XCTAssertFalse(tally.testsSeen)
        XCTAssertNil(tally.closest)
        XCTAssertEqual(tally.trackedAlive, 0)
    }

    func testTheClosestOfSeveralProcessesIsTheLargestShareOfItsBudget() {
        var total = ProgressTally()
        total.add(ProgressTally(trackedAlive: 9, closest: .init(typeName: "A", live: 9, max: 10)))
        total.add(ProgressTally(trackedAlive: 3, closest: .init(typeName: "B", live: 3, max: 2)))
        total.add(ProgressTally(trackedAlive: 50, closest: .init(typeName: "C", live: 50, max: 100)))
        XCTAssertEqual(total.closest?.typeName, "B")
        XCTAssertEqual(total.trackedAlive, 62)
        // Any instance of a type whose budget is 0 is furthest over it.
        total.consider(.init(typeName: "D", live: 1, max: 0))
        XCTAssertEqual(total.closest?.typeName, "D")
    }

    func testAStageIsReportedWhenItBeginsAndCountsNoMoreOftenThanTheInterval() {
        let heard = Mutex<[AuditProgress]>([])
        let reporter = ProgressReporter { progress in heard.withLock { $0.append(progress) } }
        reporter.begin(.launching)
        XCTAssertFalse(reporter.isDue(), "a snapshot was just made")
        reporter.begin(.symbolizing(stacks: 0))
        // Stacks symbolized within the interval are counted, not reported.
        for _ in 0..<5 { reporter.symbolizedStack() }
        var stages = heard.withLock { $0.map(\.stage) }
        XCTAssertEqual(stages, [.launching, .symbolizing(stacks: 0)])
        usleep(UInt32(ProgressReporter.interval.components.attoseconds / 1_000_000_000_000) + 20_000)
        XCTAssertTrue(reporter.isDue())
        reporter.symbolizedStack()
        stages = heard.withLock { $0.map(\.stage) }
        XCTAssertEqual(stages.last, .symbolizing(stacks: 6))
    }

    func testTheRecordingSnapshotCarriesTheTally() {
        let heard = Mutex<[AuditProgress]>([])
        let reporter = ProgressReporter { progress in heard.withLock { $0.append(progress) } }
        reporter.begin(.launching)
        reporter.recording(
            ProgressTally(
                trackedAlive: 4, watchedAlive: 9, typesOverBudget: 1, closest: .init(typeName: "A", live: 4, max: 2),
                testsSeen: true, testsFinished: 3),
            attachedProcesses: 2)
        let last = heard.withLock { $0.last }
        XCTAssertEqual(last?.stage, .recording)
        XCTAssertEqual(last?.attachedProcesses, 2)
        XCTAssertEqual(last?.trackedInstancesAlive, 4)
        XCTAssertEqual(last?.watchedInstancesAlive, 9)
        XCTAssertEqual(last?.typesOverBudget, 1)
        XCTAssertEqual(last?.closestToBudget, .init(typeName: "A", live: 4, max: 2))
        XCTAssertEqual(last?.testsFinished, 3)
    }
}
