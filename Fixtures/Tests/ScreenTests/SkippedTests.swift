// Skipped tests and an exit test under leak-audit, as the runners count them. Swift Testing:
// of the four tests here its runner counts, one runs (`exitsInAChildProcess`, whose exit test
// runs in a child process of the bundle that is not counted again) and three are skipped without
// running (a disabled test, a false condition, a test in a disabled suite). XCTest:
// `SkippedXCTests/testSkipped` runs until it throws XCTSkip, counted as run and as skipped.
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
