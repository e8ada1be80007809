import RecordStreamSupport
import XCTest

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

        // A second definition of the type over budget (another name, max 1,000): damage, and the
        // first definition stands.
        let redefined = report(try XCTUnwrap(seeds["type-redefined"]))
        XCTAssertEqual(redefined.types.map { "\($0.name) max \($0.max) peak \($0.peakLive)" }, ["App.ViewModel max 1 peak 3"])
        XCTAssertEqual(redefined.damagedRecords, 1)
        XCTAssertTrue(redefined.warnings.contains { $0.contains("or defined a type again (the first definition stands)") })
        XCTAssertEqual(redefined.verdict, .budgetExceeded)
        XCTAssertTrue(redefined.isIncomplete)
    }

    /// Once its records are read, the header zeroed (flags and attached fields) or covered with
    /// random words: the type over budget stays in the report, nothing says "not audited", the
    /// header's contradictions are damage with a line each, and no count it makes up is shown.
    func testAHeaderWrittenOverAfterTheRecordsKeepsTheFindingAndIsDamage() throws {
        let seeds = RecordStreamReplay.seeds
        for name in ["header-zeroed", "header-random"] {
            let damaged = report(try XCTUnwrap(seeds[name]))
            XCTAssertNil(damaged.notAudited, name)
            XCTAssertEqual(damaged.types.map(\.name), ["App.ViewModel"], name)
            XCTAssertEqual(damaged.types.map(\.peakLive), [3], name)
            XCTAssertEqual(damaged.verdict, .budgetExceeded, name)
            XCTAssertTrue(damaged.isIncomplete, name)
            XCTAssertTrue(damaged.target.attached, name)
            let headerLines = damaged.warnings.filter { $0.hasPrefix("the header of leak-audit's channel was written over: ") }
            XCTAssertFalse(headerLines.isEmpty, "\(name): \(damaged.warnings)")
            XCTAssertGreaterThanOrEqual(damaged.damagedRecords, UInt64(headerLines.count), name)
            // No figure of ten digits or more: the random words' counts are not printed.
            for warning in damaged.warnings {
                XCTAssertNil(warning.range(of: "[0-9]{10,}", options: .regularExpression), "\(name): \(warning)")
            }
            XCTAssertLessThan(damaged.droppedRecords, 1_000_000, name)
        }
        let zeroed = report(try XCTUnwrap(seeds["header-zeroed"]))
        XCTAssertTrue(
            zeroed.warnings.contains(
                "the header of leak-audit's channel was written over: it says that no process attached, but 1 process wrote records"
            ),
            "\(zeroed.warnings)")
        XCTAssertTrue(
            zeroed.warnings.contains {
                $0.hasSuffix(
                    "its flags say that no process linked LeakMonitor, but types whose budget is declared in code arrived")
            }, "\(zeroed.warnings)")
        XCTAssertEqual(zeroed.target.attachedProcesses, 1)
    }

    /// Every seed cut at every byte: a header cut short, a record cut short. Nothing crashes, and
    /// no type comes out that the whole seed does not define (a slot cut after its tag keeps zero
    /// bytes where the rest of a name was: a prefix of a name the seed defines).
    func testEverySeedCutAtEveryOffsetReadsWithoutForgedTypes() throws {
        for (name, seed) in RecordStreamReplay.seeds {
            let names = Set(report(seed).types.map(\.name) + (report(seed).census?.entries.map(\.name) ?? []))
            for length in 0..<seed.count {
                let cut = report(Array(seed[..<length]))
                for cutName in cut.types.map(\.name) + (cut.census?.entries.map(\.name) ?? []) {
                    let kept = cutName.replacingOccurrences(of: "\0", with: "")
                    XCTAssertTrue(names.contains { $0.hasPrefix(kept) }, "\(name) cut at \(length): \(cutName)")
                }
            }
        }
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
