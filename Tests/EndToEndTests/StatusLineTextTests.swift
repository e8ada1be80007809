import LeakAuditCore
import XCTest

@testable import LeakAuditCLI

/// The status line's words, fitted to a terminal's width (TerminalTests draws it on one).
final class StatusLineTextTests: XCTestCase {
    private func recording(_ seconds: Int64 = 12, closest: AuditProgress.BudgetStanding? = nil) -> AuditProgress {
        AuditProgress(
            stage: .recording, elapsed: .seconds(seconds) + .milliseconds(400), attachedProcesses: 2,
            trackedInstancesAlive: 1_204, watchedInstancesAlive: 40_000, typesOverBudget: 1, closestToBudget: closest,
            testsFinished: 14)
    }

    func testTheLineSaysWhatRunsMostImportantFirst() {
        let line = StatusLine.text(
            recording(closest: .init(typeName: "App.Screens.ViewModel", live: 9, max: 10)), frame: 0, columns: 200)
        XCTAssertEqual(
            line,
            "⠋ leak-audit 12.4 s · 2 processes · 1,204 tracked alive · Screens.ViewModel 9/10 · 1 over budget · 14 tests finished"
        )
        // A narrow terminal keeps the first parts whole.
        let narrow = StatusLine.text(
            recording(closest: .init(typeName: "App.ViewModel", live: 9, max: 10)), frame: 1, columns: 55)
        XCTAssertEqual(narrow, "⠙ leak-audit 12.4 s · 2 processes · 1,204 tracked alive")
        XCTAssertEqual(StatusLine.text(recording(), frame: 0, columns: 10), "⠋ leak-aud")
    }

    func testANameFromTheTargetIsEscaped() throws {
        let line = try XCTUnwrap(
            StatusLine.text(
                recording(closest: .init(typeName: "App.X\u{1B}[2J\u{202E}", live: 1, max: 0)), frame: 0, columns: 200))
        XCTAssertFalse(line.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E }, line)
        XCTAssertTrue(line.contains("X\\u{1b}[2J\\u{202e} 1/0"), line)
    }

    func testSlowStepsShowOnlyAfterASecond() {
        let quick = AuditProgress(stage: .symbolizing(stacks: 1_024), stageElapsed: .milliseconds(300))
        XCTAssertNil(StatusLine.text(quick, frame: 0, columns: 100))
        let slow = AuditProgress(stage: .symbolizing(stacks: 1_024), stageElapsed: .milliseconds(1_200))
        XCTAssertEqual(StatusLine.text(slow, frame: 0, columns: 100), "⠋ leak-audit: symbolizing 1,024 stacks…")
        XCTAssertNil(StatusLine.text(AuditProgress(stage: .launching), frame: 0, columns: 100))
        let walk = AuditProgress(stage: .walkingHeap(pid: 4242), elapsed: .seconds(3))
        XCTAssertEqual(
            StatusLine.text(walk, frame: 0, columns: 100),
            "⠋ leak-audit 3.0 s · walking the heap of process 4242 for --retainers…")
    }

    func testDurationsAndCounts() {
        XCTAssertEqual(StatusLine.duration(.milliseconds(59_950)), "59.9 s")
        XCTAssertEqual(StatusLine.duration(.seconds(185)), "3 min 05 s")
        XCTAssertEqual(StatusLine.duration(.seconds(3_725)), "1 h 02 min")
        XCTAssertEqual(StatusLine.grouped(0), "0")
        XCTAssertEqual(StatusLine.grouped(1_024), "1,024")
        XCTAssertEqual(StatusLine.grouped(12_345_678), "12,345,678")
        XCTAssertEqual(StatusLine.displayWidth("ab🦊漢"), 6)
    }
}
