import LeakAuditModel
import XCTest

@testable import LeakAuditCore

/// The heap walk's fuzz entry (HeapSnapshotReplay): its seeds read as the retaining paths they
/// stand for. scripts/fuzz.sh runs millions more inputs under libFuzzer.
final class HeapSnapshotReplayTests: XCTestCase {
    private func retainers(_ input: [UInt8]) -> (retainers: [Retainer], unavailable: [String]) {
        input.withUnsafeBytes(HeapSnapshotReplay.retainers(from:))
    }

    /// Each retainer as one line: count, root kind and name, then each step's via and type.
    private func lines(_ input: [UInt8]?) throws -> [String] {
        let found = retainers(try XCTUnwrap(input))
        XCTAssertEqual(found.unavailable, [])
        return found.retainers.map { retainer in
            "\(retainer.count) \(retainer.root.kind.rawValue) \(retainer.root.name): "
                + retainer.path.map { "\($0.via) \($0.type)" }.joined(separator: " / ")
        }
    }

    func testTheSeedsReadAsThePathsTheyStandFor() throws {
        let seeds = HeapSnapshotReplay.seeds
        // The freed Session beside the live one holds nothing.
        XCTAssertEqual(try lines(seeds["global"]), ["1 global App.store: App.store App.Session / model App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["cycle"]),
            ["1 cycle a cycle of 2 objects that nothing else holds:  App.Node / next App.Node / next App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["array"]), ["3 global App.store: App.store App.Screen / items [App.Model] / [i] App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["dictionary"]),
            [#"1 global App.store: App.store App.Session / cache [Swift.String: App.Model] / ["login"] App.Leaked"#])
        XCTAssertEqual(
            try lines(seeds["closure"]),
            [
                "1 global App.store: App.store App.Screen / onClose context of closure #1 in App.Screen.init() / captured model App.Leaked"
            ])
        XCTAssertEqual(
            try lines(seeds["outside-malloc"]),
            ["1 global App.store: App.store App.Node / next App.Node / next App.Node / next App.Leaked"])
        XCTAssertEqual(
            try lines(seeds["roots"]),
            [
                "1 stack closure #1 in App.Screen.init(): closure #1 in App.Screen.init() App.Screen / state App.LoadState / .loading App.Leaked",
                "1 task closure #1 in App.Screen.init(): closure #1 in App.Screen.init() async task / (in its memory) captured App.Model / captured var App.Leaked",
                "1 threadLocal thread-local storage: thread-local storage App.Leaked",
            ])
        // The last of 50,000 nodes, each held by the one before, and the second, which holds the
        // other 49,998 (the last among them: its bytes are counted there).
        let chain = retainers(try XCTUnwrap(seeds["deep-chain"])).retainers
        XCTAssertEqual(chain.map(\.root.kind), [.global, .global])
        XCTAssertEqual(chain.map(\.path.count), [50_000, 2])
        XCTAssertEqual(chain.map(\.retainedBytes), [0, 49_999 * 24])
    }
}
