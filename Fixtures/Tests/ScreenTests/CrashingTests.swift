// A test process that crashes in the middle of a test: CrashingTests/testASettles finishes and lets
// go of its draft; CrashingTests/testBCrashes keeps a draft alive and traps when FIXTURE_CRASH is
// set (without it, it passes and lets go: the clean twin). The crashed test is no test's leak: it
// never finished, and the report says which process ended and in which test.
import XCTest

final class Draft {
    var text = ""
}

final class CrashingTests: XCTestCase {
    func testASettles() {
        let draft = Draft()
        draft.text = "saved"
        XCTAssertEqual(draft.text, "saved")
    }

    func testBCrashes() {
        let draft = Draft()
        withExtendedLifetime(draft) {
            if ProcessInfo.processInfo.environment["FIXTURE_CRASH"] == "1" { fatalError("the test crashes, as asked") }
        }
        XCTAssertEqual(draft.text, "")
    }
}

/// Runs a test of this bundle in a child process, as crash tests do: the child's test is this
/// test's work, and the runner counts one test.
final class ChildRunTests: XCTestCase {
    func testRunsATestInAChildProcess() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["ScreenTests.CrashingTests/testASettles"]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        child.waitUntilExit()
        XCTAssertEqual(child.terminationStatus, 0)
    }
}
