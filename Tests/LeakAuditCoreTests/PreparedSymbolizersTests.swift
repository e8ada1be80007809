import LeakAuditWire
import Synchronization
import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

/// The symbolizers made while a process waits at its end: given the return addresses of the
/// stacks its report will show, on another thread, then taken by the report.
final class PreparedSymbolizersTests: XCTestCase {
    /// Records each address asked, from whichever thread.
    private final class RecordingSymbolizer: AddressSymbolizer, @unchecked Sendable {
        let asked = Mutex<[UInt64]>([])
        func symbolize(_ returnAddress: UInt64) -> [SymbolizedFrame] {
            asked.withLock { $0.append(returnAddress) }
            return [SymbolizedFrame(address: returnAddress, function: nil)]
        }
        func variable(at address: UInt64) -> String? { nil }
        func closureParameters(at address: UInt64) -> [(name: String, type: String?)] { [] }
        var problems: [String] { [] }
    }

    private let program = ModuleImage(path: "/app/App", buildID: [], loadBias: 0, start: 0x1000, end: 0x2000)

    /// A process's ledger: a model of the program's and a Foundation class alive, each from a
    /// stack of its own, and a second model's stack whose instance was freed.
    private func ledger() -> LifetimeLedger {
        var ledger = LifetimeLedger()
        ledger.apply(.moduleLoaded(program))
        ledger.apply(.typeDefined(id: 1, name: "App.Model", max: 0))
        // Watched by the census alone, as the toolchain's classes are: no budget.
        ledger.apply(.typeDefined(id: 2, name: "Foundation.NSLock", max: Int.max, budget: .none))
        ledger.apply(.stackDefined(id: 1, returnAddresses: [0x1010, 0x1020], truncated: false))
        ledger.apply(.stackDefined(id: 2, returnAddresses: [0x1030, 0x1020], truncated: false))
        ledger.apply(.stackDefined(id: 3, returnAddresses: [0x1040], truncated: false))
        ledger.apply(.allocated(typeID: 1, object: 0xA0, stackID: 1, sequence: 0))
        ledger.apply(.allocated(typeID: 2, object: 0xB0, stackID: 2, sequence: 1))
        ledger.apply(.allocated(typeID: 1, object: 0xC0, stackID: 3, sequence: 2))
        ledger.apply(.deallocated(typeID: 1, object: 0xC0, sequence: 3))
        return ledger
    }

    /// Waits until `symbolizer` was asked `count` addresses (the preparing thread's work), at most
    /// five seconds.
    private func waitUntil(_ symbolizer: RecordingSymbolizer, asked count: Int) {
        let deadline = Date(timeIntervalSinceNow: 5)
        while symbolizer.asked.withLock({ $0.count }) < count, Date() < deadline { usleep(1_000) }
    }

    func testTheStacksOfTheInstancesAliveOfTheTypesTheReportShowsAreSymbolizedAndTheSymbolizerTakenOnce() throws {
        var made: [RecordingSymbolizer] = []
        let symbolizers = PreparedSymbolizers(watch: WatchOptions(census: true)) { _ in
            let symbolizer = RecordingSymbolizer()
            made.append(symbolizer)
            return symbolizer
        }
        symbolizers.prepare(ledger())
        XCTAssertEqual(made.count, 1)
        let prepared = try XCTUnwrap(made.first)
        // The model alive: its stack's two addresses. Not the Foundation class's (folded in the
        // census), nor the freed model's.
        waitUntil(prepared, asked: 2)
        XCTAssertEqual(prepared.asked.withLock { $0 }, [0x1010, 0x1020])
        let taken = symbolizers.symbolizer(for: [program])
        XCTAssertTrue((taken.symbolizer as? RecordingSymbolizer) === prepared)
        XCTAssertNotNil(taken.grouping)
        // Taken once; other images get a symbolizer of their own, and no grouping.
        let again = symbolizers.symbolizer(for: [program])
        XCTAssertFalse((again.symbolizer as? RecordingSymbolizer) === prepared)
        XCTAssertNil(again.grouping)
        XCTAssertEqual(made.count, 2)
        // Once the report took its symbolizers, nothing more is prepared.
        symbolizers.prepare(ledger())
        XCTAssertEqual(made.count, 2)
    }

    func testWithoutTheCensusOnlyTheTypesOverBudgetOrJudgedAreSymbolizedAndWithItsInternalsAllAre() throws {
        var made: [RecordingSymbolizer] = []
        let make: ([ModuleImage]) -> any AddressSymbolizer = { _ in
            let symbolizer = RecordingSymbolizer()
            made.append(symbolizer)
            return symbolizer
        }
        // The model is over its budget (max 0): its stack. The Foundation class is not, and is
        // judged by no test.
        PreparedSymbolizers(watch: WatchOptions(), make: make).prepare(ledger())
        waitUntil(try XCTUnwrap(made.last), asked: 2)
        XCTAssertEqual(made.last?.asked.withLock { $0 }, [0x1010, 0x1020])
        // `--census-all`: the Foundation class's stack too, each address once.
        PreparedSymbolizers(watch: WatchOptions(census: true, censusShowsInternals: true), make: make).prepare(ledger())
        waitUntil(try XCTUnwrap(made.last), asked: 3)
        XCTAssertEqual(made.last?.asked.withLock { $0 }, [0x1010, 0x1020, 0x1030])
    }

    /// The report's grouping takes from the prepared one the frames of each stack still made of the
    /// same return addresses, without asking the symbolizer again, and symbolizes anew a stack
    /// defined again since with other addresses (a damaged stream may), and any other.
    func testTheReportsGroupingTakesThePreparedStacksThatAreStillTheSame() throws {
        let symbolizer = RecordingSymbolizer()
        let symbolizers = PreparedSymbolizers(watch: WatchOptions(census: true)) { _ in symbolizer }
        var ledger = ledger()
        symbolizers.prepare(ledger)
        waitUntil(symbolizer, asked: 2)
        let taken = symbolizers.symbolizer(for: [program])
        XCTAssertEqual(symbolizer.asked.withLock { $0 }, [0x1010, 0x1020])
        // A second instance from stack 2, and stack 1 defined again with another address.
        ledger.apply(.allocated(typeID: 1, object: 0xD0, stackID: 2, sequence: 4))
        ledger.apply(.stackDefined(id: 1, returnAddresses: [0x1050], truncated: false))
        let grouping = AllocationGrouping(ledger: ledger, symbolizer: taken.symbolizer, progress: nil, taking: taken.grouping)
        XCTAssertEqual(grouping.frames(ofStack: 1).map(\.address), [0x1050])
        XCTAssertEqual(grouping.frames(ofStack: 2).map(\.address), [0x1030, 0x1020])
        // 0x1020 was symbolized while preparing; 0x1050 and 0x1030 now.
        XCTAssertEqual(symbolizer.asked.withLock { $0 }, [0x1010, 0x1020, 0x1050, 0x1030])
    }

    /// The stacks prepared are those of the instances alive, with their types, each pair once.
    func testTheStacksOfTheLiveInstancesAreEachPairOnce() {
        var ledger = ledger()
        ledger.apply(.allocated(typeID: 1, object: 0xD0, stackID: 1, sequence: 4))
        ledger.apply(.allocated(typeID: 2, object: 0xE0, stackID: 1, sequence: 5))
        let pairs = ledger.stacksOfLiveInstances { _ in true }.map { [$0.stackID, $0.typeID] }
        XCTAssertEqual(pairs, [[1, 1], [1, 2], [2, 2]])
        XCTAssertEqual(ledger.stacksOfLiveInstances { $0 == 2 }.map(\.stackID), [1, 2])
    }

    /// With `--leaks-per-test`, the stacks of what tests left and released later are prepared too,
    /// after those of the instances alive: the report's global-state step reads their lines.
    func testWithLeaksPerTestTheStacksOfWhatTestsLeftAndReleasedLaterArePreparedToo() throws {
        var ledger = ledger()
        ledger.apply(.testDefined(id: 0, name: "AppTests/keeps()"))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_STARTED), sequence: 4))
        ledger.apply(.allocated(typeID: 1, object: 0xD0, stackID: 3, sequence: 5, test: 0))
        ledger.apply(.testPhase(id: 0, phase: UInt32(LA_TEST_FINISHED), sequence: 6))
        ledger.apply(.deallocated(typeID: 1, object: 0xD0, sequence: 7))
        var made: [RecordingSymbolizer] = []
        let make: ([ModuleImage]) -> any AddressSymbolizer = { _ in
            let symbolizer = RecordingSymbolizer()
            made.append(symbolizer)
            return symbolizer
        }
        var watch = WatchOptions()
        watch.leaksPerTest = true
        PreparedSymbolizers(watch: watch, make: make).prepare(ledger)
        waitUntil(try XCTUnwrap(made.last), asked: 3)
        XCTAssertEqual(made.last?.asked.withLock { $0 }, [0x1010, 0x1020, 0x1040])
        // Without it, only the model alive over its budget.
        PreparedSymbolizers(watch: WatchOptions(), make: make).prepare(ledger)
        waitUntil(try XCTUnwrap(made.last), asked: 2)
        usleep(50_000)
        XCTAssertEqual(made.last?.asked.withLock { $0 }, [0x1010, 0x1020])
    }
}
