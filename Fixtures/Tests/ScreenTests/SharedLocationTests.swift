// Swift Testing tests that share a name and a source location, in different types: what a macro
// makes that declares a `@Test` function in each type it expands into (the tests all get the
// location of the macro's use). Written out here as Swift Testing's `@Test` macro expands, a test
// content record each, with no macro target of our own. Their IDs differ by their types alone,
// and leak-audit must still tell them apart. Two pairs, each a leaky test that keeps what it makes
// in a static list and its clean twin that releases its own; in one pair the leaky test is
// declared first and sorts first by name, in the other the clean one, so that whichever order the
// runner meets them in, a test mistaken for its twin blames the wrong one of a pair.
import Synchronization
import Testing

final class Ledger: Sendable {
    let entries: Int
    init(entries: Int) { self.entries = entries }
}

final class Voucher: Sendable {
    let amount: Int
    init(amount: Int) { self.amount = amount }
}

enum SharedLocationArchive {
    static let ledgers = Mutex<[Ledger]>([])
    static let vouchers = Mutex<[Voucher]>([])
}

/// The location each pair's tests have, as a macro's use would give it.
private let ledgersLocation = SourceLocation(fileID: #fileID, filePath: #filePath, line: #line, column: 1)
private let vouchersLocation = SourceLocation(fileID: #fileID, filePath: #filePath, line: #line, column: 1)

struct KeepsLedgers {
    static func check() {
        let ledgers = (1...3).map { Ledger(entries: $0) }
        SharedLocationArchive.ledgers.withLock { $0 += ledgers }
        #expect(ledgers.count == 3)
    }

    @Sendable static func test() async -> Test {
        .__function(
            named: "check()", in: KeepsLedgers.self, xcTestCompatibleSelector: nil, traits: [],
            sourceLocation: ledgersLocation, parameters: [], testFunction: { check() })
    }

    @section("swift5_tests") @used
    static let record: __TestContentRecord = (
        0x7465_7374,  // 'test'
        0, { outValue, type, _, _ in Test.__store(KeepsLedgers.test, into: outValue, asTypeAt: type) }, 0, 0
    )
}

struct ReleasesLedgers {
    static func check() {
        let ledgers = (1...2).map { Ledger(entries: $0) }
        #expect(ledgers.count == 2)
    }

    @Sendable static func test() async -> Test {
        .__function(
            named: "check()", in: ReleasesLedgers.self, xcTestCompatibleSelector: nil, traits: [],
            sourceLocation: ledgersLocation, parameters: [], testFunction: { check() })
    }

    @section("swift5_tests") @used
    static let record: __TestContentRecord = (
        0x7465_7374,  // 'test'
        0, { outValue, type, _, _ in Test.__store(ReleasesLedgers.test, into: outValue, asTypeAt: type) }, 0, 0
    )
}

struct ClearsVouchers {
    static func check() {
        let vouchers = (1...2).map { Voucher(amount: $0) }
        #expect(vouchers.count == 2)
    }

    @Sendable static func test() async -> Test {
        .__function(
            named: "check()", in: ClearsVouchers.self, xcTestCompatibleSelector: nil, traits: [],
            sourceLocation: vouchersLocation, parameters: [], testFunction: { check() })
    }

    @section("swift5_tests") @used
    static let record: __TestContentRecord = (
        0x7465_7374,  // 'test'
        0, { outValue, type, _, _ in Test.__store(ClearsVouchers.test, into: outValue, asTypeAt: type) }, 0, 0
    )
}

struct KeepsVouchers {
    static func check() {
        let vouchers = (1...3).map { Voucher(amount: $0) }
        SharedLocationArchive.vouchers.withLock { $0 += vouchers }
        #expect(vouchers.count == 3)
    }

    @Sendable static func test() async -> Test {
        .__function(
            named: "check()", in: KeepsVouchers.self, xcTestCompatibleSelector: nil, traits: [],
            sourceLocation: vouchersLocation, parameters: [], testFunction: { check() })
    }

    @section("swift5_tests") @used
    static let record: __TestContentRecord = (
        0x7465_7374,  // 'test'
        0, { outValue, type, _, _ in Test.__store(KeepsVouchers.test, into: outValue, asTypeAt: type) }, 0, 0
    )
}
