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
        XCTAssertTrue((taken as? RecordingSymbolizer) === prepared)
        // Taken once; other images get a symbolizer of their own.
        XCTAssertFalse((symbolizers.symbolizer(for: [program]) as? RecordingSymbolizer) === prepared)
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
}
