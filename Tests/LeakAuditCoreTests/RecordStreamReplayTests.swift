import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// The fuzz target's entry (RecordStreamReplay): its seeds read as the reports they stand for, and
/// random and mutated inputs (a fixed seed, so every run is the same) neither crash the reader nor
/// come out clean when damaged. scripts/fuzz.sh runs millions more under libFuzzer.
final class RecordStreamReplayTests: XCTestCase {
    private func report(_ input: [UInt8]) -> AuditReport {
        input.withUnsafeBytes(RecordStreamReplay.report(from:))
    }

    func testTheSeedsReadAsTheRunsTheyStandFor() throws {
        let seeds = RecordStreamReplay.seeds
        let budget = report(try XCTUnwrap(seeds["budget-exceeded"]))
        XCTAssertEqual(budget.verdict, .budgetExceeded)
        XCTAssertEqual(budget.types.map(\.name), ["App.ViewModel"])
        XCTAssertEqual(budget.types.map { [$0.peakLive, $0.liveAtExit, $0.allocatedTotal] }, [[3, 2, 3]])
        XCTAssertEqual(budget.types.first?.allocations.first?.frames.map(\.address), [0x1000, 0x2000, 0x3000])

        let tests = report(try XCTUnwrap(seeds["leaks-per-test"]))
        XCTAssertEqual(tests.damagedRecords, 0, "\(tests.warnings)")
        XCTAssertEqual(tests.testLeaks.map(\.test), ["AppTests.LoginTests/testLogout"])
        XCTAssertEqual(tests.target.processes.map(\.pid), [4242])

        let census = report(try XCTUnwrap(seeds["census"]))
        XCTAssertEqual(census.census?.entries.map(\.name), ["App.Cache"])
        XCTAssertEqual(census.census?.entries.map(\.liveAtExit), [3])
        for report in [budget, tests, census] { XCTAssertFalse(report.isIncomplete, "\(report.warnings)") }
    }

    func testRandomAndMutatedStreamsNeverCrashNorComeOutClean() {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func random() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let seeds = RecordStreamReplay.seeds.sorted { $0.key < $1.key }.map(\.value)
        for round in 0..<2_000 {
            var input: [UInt8]
            if round % 2 == 0 {
                // Pure noise, of every length up to a ring and a half.
                input = (0..<Int(random() % 3_200)).map { _ in UInt8(truncatingIfNeeded: random()) }
            } else {
                // A seed with a few bytes changed: mostly well-formed, damaged somewhere.
                input = seeds[round % seeds.count]
                for _ in 0..<(1 + random() % 8) {
                    input[Int(random() % UInt64(input.count))] = UInt8(truncatingIfNeeded: random())
                }
            }
            let replayed = report(input)
            if replayed.damagedRecords > 0 || replayed.droppedRecords > 0 {
                XCTAssertNotEqual(replayed.verdict, .clean, "round \(round): damage is never clean")
            }
        }
    }
}
