// A test case's property holds a Catalog whose dictionary's value, a struct, ends with an enum:
// `.small(Crate)` written over `.large(Crate, Crate, Catalog)` as generic code writes a case (the
// payload's word and the tag, nothing else), so the value's last word is still the Catalog's
// address. Read as a reference, it would close a cycle Catalog → dictionary → Catalog, which the
// search from the test cases does not enter (a cycle outlives its test case): a false unreachable
// cycle. Read field by field and by its case (`.small` holds one word), it holds nothing, and the
// test case reaches both. Clean: nothing is unreachable (Tests/EndToEndTests/UnreachableTests.swift).

import XCTest

final class Crate {}

final class Catalog {
    var entries: [String: Entry] = [:]
}

/// A dictionary's value: a struct, read field by field, whose last field is the enum.
struct Entry {
    var labels: [String]
    var slot: Slot
}

/// A multi-payload enum whose cases' payloads differ in size: its tag lies in the spare bits of
/// its last word, which `.small` does not otherwise use.
enum Slot {
    case large(Crate, Crate, Catalog)
    case small(Crate)
    case empty
}

final class CatalogTests: XCTestCase {
    var catalog: Catalog?
    var crates: [Crate] = []

    func testKeepsCatalogWithStaleWord() {
        let catalog = Catalog()
        let (first, second, small) = (Crate(), Crate(), Crate())
        crates = [first, second, small]
        var value = Slot.large(first, second, catalog)
        // The payload's word (the new reference retained, the old one released) and the tag's
        // byte of `.small(small)`; the rest as `.large` left it.
        let tagged = Slot.small(small)
        withUnsafeMutableBytes(of: &value) { target in
            withUnsafeBytes(of: tagged) { source in
                Unmanaged.passUnretained(first).release()
                target.storeBytes(of: UInt(bitPattern: Unmanaged.passRetained(small).toOpaque()), as: UInt.self)
                target[23] = source[23]
            }
        }
        guard case .small(let read) = value else { return XCTFail("the value is not .small") }
        XCTAssertTrue(read === small)
        catalog.entries["only"] = Entry(labels: ["first"], slot: value)
        // The stale word must be in the dictionary's storage, after the payload's word: else the
        // test it serves cannot fail.
        let storage = unsafeBitCast(catalog.entries, to: UnsafeRawPointer.self)
        let catalogAddress = UInt(bitPattern: Unmanaged.passUnretained(catalog).toOpaque())
        let smallAddress = UInt(bitPattern: Unmanaged.passUnretained(small).toOpaque())
        let found = (0..<64).contains { index in
            storage.load(fromByteOffset: index * 8, as: UInt.self) == smallAddress
                && storage.load(fromByteOffset: index * 8 + 16, as: UInt.self) & 0x0FFF_FFFF_FFFF_FFF8 == catalogAddress
        }
        XCTAssertTrue(found, "no stale word in the dictionary's storage")
        self.catalog = catalog
    }
}
