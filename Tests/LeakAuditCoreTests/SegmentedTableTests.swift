import XCTest

@testable import LeakAuditCore

/// SegmentedTable against a Dictionary doing the same work (the address 0 among the others):
/// growth and shrinking of segments of any capacity, backward-shift removal across collisions and
/// the wrap-around, the nursery in front of the segments (whose entries move to their segments when
/// two later addresses need their set), the insertion slot, insertion at a vacancy, copies, and how
/// full it keeps its slots.
final class SegmentedTableTests: XCTestCase {
    func testMatchesADictionaryOverRandomInsertionsAndRemovals() {
        var generator = SystemRandomNumberGenerator()
        let table = SegmentedTable()
        defer { table.deallocate() }
        var expected: [UInt64: UInt64] = [:]
        // A small address space, so that addresses recur, collide and are removed while others
        // sit behind them in a probe sequence; 16-byte aligned, as objects are, plus the odd one.
        for step in 0..<200_000 {
            let address = UInt64.random(in: 0..<6_000, using: &generator) * (step % 7 == 0 ? 8 : 16)
            let value = UInt64(step) << 20 | 1
            // Grow to a few thousand entries, then shrink back to a handful, twice.
            let phase = (step / 50_000) % 2
            switch Int.random(in: 0..<10, using: &generator) {
            case 0 where address != 0:
                let slot = table.insertionSlot(forKey: address)
                XCTAssertEqual(slot.existed, expected[address] != nil)
                slot.value.pointee = value
                expected[address] = value
            case 1 where address != 0:
                // A vacancy only for an address the table does not hold, in the nursery or a
                // segment (which `settled` says whether to look at).
                if let vacancy = table.vacancy(forKey: address) {
                    XCTAssertNil(expected[address], "address \(address)")
                    table.insert(value, forKey: address, at: vacancy)
                    expected[address] = value
                } else {
                    XCTAssertNotNil(expected[address], "address \(address)")
                }
            case let draw where draw < (phase == 0 ? 7 : 2):
                XCTAssertEqual(table.updateValue(value, forKey: address), expected.updateValue(value, forKey: address))
            default:
                XCTAssertEqual(table.removeValue(forKey: address), expected.removeValue(forKey: address))
            }
            if step % 997 == 0 {
                XCTAssertEqual(table.count, expected.count)
                for (key, value) in expected { XCTAssertEqual(table[key], value, "address \(key)") }
            }
        }
        XCTAssertEqual(table.count, expected.count)
        var seen: [UInt64: UInt64] = [:]
        table.forEach { seen[$0] = $1 }
        XCTAssertEqual(seen, expected)
    }

    /// Between about a third and three quarters of the slots hold an entry at every size, growing
    /// and shrinking: no size leaves the table at a quarter full, as a power-of-two table just
    /// past a doubling would be, and a table emptied gives its slots back.
    func testAMillionAddressesKeepTheTableFullAndGiveTheirMemoryBack() {
        let table = SegmentedTable()
        defer { table.deallocate() }
        for index in 1...1_000_000 {
            table[UInt64(index) << 4] = UInt64(index)
            if index % 50_000 == 0 {
                let load = Double(index) / Double(table.slotCount)
                XCTAssertGreaterThan(load, 0.4, "\(index) entries in \(table.slotCount) slots")
                XCTAssertLessThanOrEqual(load, 0.75, "\(index) entries in \(table.slotCount) slots")
                // The estimate from one segment, which decides whether the decoder prefetches.
                XCTAssertEqual(Double(table.estimatedCount), Double(index), accuracy: Double(index) * 0.25)
            }
        }
        XCTAssertEqual(table.count, 1_000_000)
        // Linear probing at most three quarters full keeps an entry within a few slots of its
        // first one, when the hash spreads addresses (consecutive ones, here) over the slots.
        XCTAssertLessThan(table.averageDisplacement, 2, "addresses pile up: the hash does not spread them")
        XCTAssertEqual(table[UInt64(123_456) << 4], 123_456)
        for index in 1...999_999 { table[UInt64(index) << 4] = nil }
        XCTAssertEqual(table.count, 1)
        XCTAssertEqual(table[UInt64(1_000_000) << 4], 1_000_000)
        XCTAssertLessThan(table.slotCount, 64 * 16, "emptied segments shrink back")
    }

    /// A copy changes apart from its original, the address 0 (kept aside, since it marks empty
    /// slots) included.
    func testACopyHasMemoryOfItsOwn() {
        let original = SegmentedTable()
        defer { original.deallocate() }
        XCTAssertNil(original[0])
        for index in 1...1_000 { original[UInt64(index) << 4] = UInt64(index) }
        original[0] = 99
        XCTAssertEqual(original.count, 1_001)
        let copy = original.copy()
        defer { copy.deallocate() }
        copy[16] = 1000
        copy[32] = nil
        copy[0] = nil
        XCTAssertEqual(original[16], 1)
        XCTAssertEqual(original[32], 2)
        XCTAssertEqual(original[0], 99)
        XCTAssertEqual(original.count, 1_001)
        XCTAssertEqual(copy[16], 1000)
        XCTAssertNil(copy[32])
        XCTAssertNil(copy[0])
        XCTAssertEqual(copy.count, 999)
        XCTAssertEqual(original.removeValue(forKey: 0), 99)
        XCTAssertNil(original[0])
    }
}
