import FoundationEssentials
import LeakAuditModel
import XCTest

/// A target whose malloc puts a 16-byte header before every block (Fixtures/Sources/HeaderedMalloc,
/// as ordo-one/malloc-interposer does): its objects lie 16 bytes into glibc's chunks, where the
/// heap walk reads them once the objects known alive are found there, so that retaining paths and
/// the unreachable check work as on any heap.
final class InterposedMallocTests: XCTestCase {
    private let notUnderstood = "the heap's layout was not understood"

    func testRetainersFindThePathsBehindTheHeaders() throws {
        let audit = try Harness.audit("HeaderedMalloc", ["leaky"], extraOptions: ["--retainers"])
        XCTAssertEqual(audit.status, 1, audit.stderr)
        let type = try audit.trackedType(".ReportModel")
        XCTAssertEqual(type.liveAtExit, 3)
        XCTAssertEqual(type.retainersUnavailable, [])
        let retainers = type.retainers ?? []
        XCTAssertEqual(retainers.map(\.count), [3], "\(retainers)")
        XCTAssertEqual(retainers.first?.root.kind, .global)
        XCTAssertEqual(retainers.first?.root.name, "HeaderedMalloc.ReportCache.models")
        XCTAssertEqual(retainers.first?.path.last?.type, "HeaderedMalloc.ReportModel")

        let text = Harness.run([Harness.leakAudit, "run", "--retainers", try Harness.fixture("HeaderedMalloc"), "leaky"])
        let prose = Harness.prose(text.stderr)
        XCTAssertTrue(prose.contains("HeaderedMalloc.ReportCache.models"), text.log)
        XCTAssertFalse(prose.contains(notUnderstood), text.log)
        XCTAssertFalse(prose.contains("no longer alive"), text.log)
    }

    func testTheUnreachableCheckFindsTheCyclesBehindTheHeaders() throws {
        for variant in ["leaky", "clean"] {
            let audit = try Harness.audit("HeaderedMalloc", [variant], extraOptions: ["--unreachable"])
            XCTAssertEqual(audit.status, variant == "leaky" ? 1 : 0, audit.stderr)
            let unreachable = try XCTUnwrap(audit.report.unreachable, variant)
            XCTAssertEqual(unreachable.processesChecked, 1, variant)
            XCTAssertEqual(unreachable.unavailable, [], variant)
            // Leaky: the 2 cycles of 2 Nodes; clean: nothing.
            let nodes = unreachable.groups.filter { $0.path.contains { $0.type == "HeaderedMalloc.Node" } }
            XCTAssertEqual(nodes.map(\.count), variant == "leaky" ? [2] : [], "\(variant): \(unreachable.groups)")
            XCTAssertEqual(nodes.first?.shape, variant == "leaky" ? .cycle : nil, variant)

            let text = Harness.run([Harness.leakAudit, "run", "--unreachable", try Harness.fixture("HeaderedMalloc"), variant])
            XCTAssertFalse(Harness.prose(text.stderr).contains(notUnderstood), text.log)
        }
    }
}
