import FoundationEssentials
import LeakAuditModel
import XCTest

/// A target whose malloc puts a 16-byte header before every block (Fixtures/Sources/HeaderedMalloc,
/// as ordo-one/malloc-interposer does): its objects lie 16 bytes into glibc's chunks, so the heap
/// walk finds none of them. The report says the heap's layout was not understood and claims
/// neither that an instance was no longer alive nor that nothing was unreachable.
final class InterposedMallocTests: XCTestCase {
    private let notUnderstood = "the heap's layout was not understood"

    func testRetainersSayTheHeapWasNotUnderstoodNeverNoLongerAlive() throws {
        let audit = try Harness.audit("HeaderedMalloc", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let type = try audit.trackedType(".ReportModel")
        XCTAssertEqual(type.liveAtExit, 3)
        XCTAssertTrue((type.retainers ?? []).isEmpty, "\(type.retainers ?? [])")
        XCTAssertEqual(type.retainersUnavailable.count, 1, "\(type.retainersUnavailable)")
        let reason = try XCTUnwrap(type.retainersUnavailable.first)
        XCTAssertTrue(reason.contains(notUnderstood), reason)
        XCTAssertTrue(reason.contains("16 bytes into malloc's blocks"), reason)
        XCTAssertFalse(reason.contains("no longer alive"), reason)

        let text = Harness.run([Harness.leakAudit, "run", "--retainers", try Harness.fixture("HeaderedMalloc"), "leaky"])
        let prose = Harness.prose(text.stderr)
        XCTAssertTrue(prose.contains(notUnderstood), text.log)
        XCTAssertFalse(prose.contains("no longer alive"), text.log)
    }

    func testTheUnreachableCheckSaysItWasNotMade() throws {
        for variant in ["leaky", "clean"] {
            let audit = try Harness.audit("HeaderedMalloc", [variant], extraOptions: ["--unreachable"])
            XCTAssertEqual(audit.status, variant == "leaky" ? 1 : 0, audit.stderr)
            let unreachable = try XCTUnwrap(audit.report.unreachable, variant)
            XCTAssertEqual(unreachable.processesChecked, 0, variant)
            XCTAssertEqual(unreachable.groups.count, 0, variant)
            XCTAssertEqual(unreachable.unavailable.count, 1, "\(variant): \(unreachable.unavailable)")
            XCTAssertTrue(unreachable.unavailable.first?.contains(notUnderstood) == true, "\(unreachable.unavailable)")

            let text = Harness.run([Harness.leakAudit, "run", "--unreachable", try Harness.fixture("HeaderedMalloc"), variant])
            let prose = Harness.prose(text.stderr)
            XCTAssertTrue(prose.contains(notUnderstood), text.log)
            XCTAssertFalse(prose.contains("is unreachable"), text.log)
            XCTAssertFalse(prose.contains("no unreachable object"), text.log)
        }
    }
}
