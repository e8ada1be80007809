import Foundation
import XCTest

@testable import LeakAuditCore

/// Heap walks stop and copy only processes leak-audit started, by the kernel's parent chain: the
/// pid a channel names is never trusted (docs/reliability.md, "The channel").
final class ProcessLineageTests: XCTestCase {
    func testTheParentIsReadAfterTheCommandsLastParenthesis() {
        XCTAssertEqual(ProcessLineage.parent(inStat: ArraySlice("42 (a) (b) S 17 42 42 0".utf8)), 17)
        XCTAssertEqual(ProcessLineage.parent(inStat: ArraySlice("42 (sleep) R 1 42".utf8)), 1)
        XCTAssertNil(ProcessLineage.parent(inStat: ArraySlice("42 no parenthesis S 17".utf8)))
        XCTAssertNil(ProcessLineage.parent(inStat: ArraySlice("42 (cut) S".utf8)))
    }

    func testOnlyDescendantsOfThisProcessCount() throws {
        XCTAssertEqual(ProcessLineage.parent(of: getpid()), getppid())
        XCTAssertFalse(ProcessLineage.isStartedByLeakAudit(getpid()), "itself")
        XCTAssertFalse(ProcessLineage.isStartedByLeakAudit(getppid()), "its parent")
        XCTAssertFalse(ProcessLineage.isStartedByLeakAudit(1))
        XCTAssertFalse(ProcessLineage.isStartedByLeakAudit(0))
        XCTAssertFalse(ProcessLineage.isStartedByLeakAudit(-1))
        // A child, and the child's child (a shell running sleep).
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "sleep 30 & echo $!; wait"]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        defer { child.terminate() }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        let grandchild = try XCTUnwrap(Int32(line.trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { kill(grandchild, SIGKILL) }
        XCTAssertTrue(ProcessLineage.isStartedByLeakAudit(child.processIdentifier))
        XCTAssertTrue(ProcessLineage.isStartedByLeakAudit(grandchild))
    }
}
