// Skipped tests and an exit test under leak-audit, as the runners count them. Swift Testing:
// of the five tests here its runner counts, two run (`exitsInAChildProcess`, whose exit test runs
// in a child process of the bundle that is not counted again, and `seesItsOwnWarning`) and three
// are skipped without running (a disabled test, a false condition, a test in a disabled suite). XCTest:
// `SkippedXCTests/testSkipped` runs until it throws XCTSkip, counted as run and as skipped.
import Synchronization
import Testing
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SkippingSwiftTests {
    @Test(.disabled("shows how a skipped test is counted")) func skippedByTrait() {}

    @Test(.enabled(if: ProcessInfo.processInfo.environment["FIXTURE_NEVER_SET"] != nil))
    func skippedByCondition() {}

    @Test func exitsInAChildProcess() async {
        await #expect(processExitsWith: .failure) { exit(EXIT_FAILURE) }
    }

    /// The JUnit report the observer asks the runner for must change nothing else: an issue
    /// recorded as a warning still reaches an issue-handling trait. With FIXTURE_CRASH set it
    /// traps instead: the run never ends, and never writes its report.
    @Test func seesItsOwnWarning() async throws {
        if ProcessInfo.processInfo.environment["FIXTURE_CRASH"] == "1" { fatalError("the run crashes, as asked") }
        let seen = Mutex(0)
        let counting = IssueHandlingTrait.compactMapIssues { issue in
            if issue.severity == .warning { seen.withLock { $0 += 1 } }
            return nil
        }
        try await counting.provideScope(for: try #require(Test.current), testCase: Test.Case.current) {
            Issue.record("a warning", severity: .warning)
        }
        #expect(seen.withLock { $0 } == 1)
    }
}

@Suite(.disabled("shows how a skipped suite's tests are counted")) struct SkippedSwiftSuite {
    @Test func insideASkippedSuite() {}
}

final class SkippedXCTests: XCTestCase {
    func testSkipped() throws {
        throw XCTSkip("shows how XCTest's skipped tests are counted")
    }

    func testRuns() {
        XCTAssertTrue(true)
    }
}
