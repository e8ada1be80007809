import XCTest

@testable import LeakAuditCore

/// AddressTable against a Dictionary doing the same work: growth, shrinking, backward-shift
/// removal across collisions and the wrap-around, and the address 0.
final class AddressTableTests: XCTestCase {
    func testMatchesADictionaryOverRandomInsertionsAndRemovals() {
        var generator = SystemRandomNumberGenerator()
        var table = AddressTable<UInt32>()
        var expected: [UInt64: UInt32] = [:]
        // A small address space, so that addresses recur, collide and are removed while others
        // sit behind them in a probe sequence; 16-byte aligned, as objects are, plus the odd one.
        for step in 0..<200_000 {
            let address = UInt64.random(in: 0..<3_000, using: &generator) * (step % 7 == 0 ? 8 : 16)
            let value = UInt32(truncatingIfNeeded: step)
            // Grow to a few thousand entries, then shrink back to a handful, twice.
            let phase = (step / 50_000) % 2
            if Int.random(in: 0..<10, using: &generator) < (phase == 0 ? 7 : 2) {
                XCTAssertEqual(table.updateValue(value, forKey: address), expected.updateValue(value, forKey: address))
            } else {
                XCTAssertEqual(table.removeValue(forKey: address), expected.removeValue(forKey: address))
            }
            if step % 997 == 0 {
                XCTAssertEqual(table.count, expected.count)
                for (key, value) in expected { XCTAssertEqual(table[key], value, "address \(key)") }
            }
        }
        XCTAssertEqual(table.count, expected.count)
        XCTAssertEqual(Set(table.keys), Set(expected.keys))
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: table.entries.map { ($0.key, $0.value) }), expected)
    }

    func testTheAddressZeroIsAnEntryLikeAnyOther() {
        var table = AddressTable<UInt32>()
        XCTAssertNil(table[0])
        table[0] = 7
        table[16] = 8
        XCTAssertEqual(table[0], 7)
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table.removeValue(forKey: 0), 7)
        XCTAssertNil(table.removeValue(forKey: 0))
        XCTAssertNil(table[0])
        XCTAssertEqual(table.keys, [16])
        XCTAssertEqual(table.count, 1)
        table[16] = nil
        XCTAssertTrue(table.isEmpty)
        table[0] = 9
        XCTAssertFalse(table.isEmpty)
    }

    func testAMillionAddressesGrowAndGiveTheirMemoryBack() {
        var table = AddressTable<LifetimeLedger.Instance>()
        for index in 1...1_000_000 {
            table[UInt64(index) << 4] = LifetimeLedger.Instance(stackID: UInt32(index % 1024), sequence: UInt64(index))
        }
        XCTAssertEqual(table.count, 1_000_000)
        XCTAssertEqual(table[UInt64(123_456) << 4]?.sequence, 123_456)
        XCTAssertEqual(table[UInt64(123_456) << 4]?.test, nil)
        for index in 1...999_999 { table[UInt64(index) << 4] = nil }
        XCTAssertEqual(table.count, 1)
        XCTAssertEqual(table.values.map(\.sequence), [1_000_000])
    }

    func testACopyIsAValueOfItsOwn() {
        // The slots are shared until one side changes: then that side copies them.
        var original = AddressTable<UInt32>()
        for index in 1...100 { original[UInt64(index) << 4] = UInt32(index) }
        var copy = original
        copy[16] = 1000
        copy[32] = nil
        copy[UInt64(500) << 4] = 500
        XCTAssertEqual(original[16], 1)
        XCTAssertEqual(original[32], 2)
        XCTAssertNil(original[UInt64(500) << 4])
        XCTAssertEqual(original.count, 100)
        XCTAssertEqual(copy[16], 1000)
        XCTAssertNil(copy[32])
        XCTAssertEqual(copy.count, 100)
        original[48] = nil
        XCTAssertEqual(copy[48], 3, "a removal in the original leaves the copy alone")
    }
}
