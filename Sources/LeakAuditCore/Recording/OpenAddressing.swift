/// The hash and the probe sequence that the reader's open-addressing tables share
/// (`AddressTable`, `SegmentedTable`, `WordCounter`). Keys are object addresses (16-byte
/// aligned) or words the reader makes (a type and a site), never chosen by anyone who could aim at
/// a hash (a hostile target can only slow its own audit): a multiplicative (Fibonacci) hash
/// spreads them well, and linear probing from a key's home slot keeps a lookup in one or two cache
/// lines. The key 0 marks an empty slot; each table keeps it aside.
enum OpenAddressing {
    /// 2^64 divided by the golden ratio, made odd: multiplying by it carries every bit of a key
    /// into the high bits of the product.
    static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The hash of a word whose every bit counts.
    @inline(__always)
    static func hash(word: UInt64) -> UInt64 { word &* multiplier }

    /// The hash of an object's address: its bits above the 16-byte alignment.
    @inline(__always)
    static func hash(address: UInt64) -> UInt64 { hash(word: address >> 4) }

    /// The home slot of `hash` in a table whose capacity is a power of two, `mask` being that
    /// capacity minus one: the bits of the hash from bit 32 up.
    @inline(__always)
    static func home(_ hash: UInt64, mask: Int) -> Int { Int(truncatingIfNeeded: hash >> 32) & mask }

    /// The home slot of the hash of a word the reader makes (a type and a site, `WordCounter`), in
    /// a table whose capacity is a power of two, `mask` being that capacity minus one: the bits of
    /// the hash from bit 40 up. Such tables hold a few words counted millions of times, and from
    /// bit 32 up two of a census's site words shared a probe sequence (`--census` over `heap
    /// 1000000`: two more instructions an instance).
    @inline(__always)
    static func home(ofWordHash hash: UInt64, mask: Int) -> Int { Int(truncatingIfNeeded: hash >> 40) & mask }

    /// The home slot of `hash` among `capacity` slots, any number: bits 26 to 57 of the hash
    /// scaled to the capacity, which leaves the top bits free to pick one of several tables.
    @inline(__always)
    static func home(_ hash: UInt64, capacity: Int) -> Int {
        // (Shifts bind tighter than products in Swift: the product is parenthesised.)
        Int(truncatingIfNeeded: (((hash >> 26) & 0xFFFF_FFFF) &* UInt64(truncatingIfNeeded: capacity)) >> 32)
    }

    /// The slot after `index` in a table of `capacity` slots, wrapping around at its end.
    @inline(__always)
    static func next(after index: Int, capacity: Int) -> Int {
        let next = index &+ 1
        return next == capacity ? 0 : next
    }

    /// The slot of a key, probing from its `home` on and wrapping around: the slot that holds it
    /// (`isKey`), with `found` true, or the first empty one (`isEmpty`), where it would go. A table
    /// at most three quarters full has an empty slot on every probe sequence.
    @inline(__always)
    static func find(from home: Int, capacity: Int, isKey: (Int) -> Bool, isEmpty: (Int) -> Bool) -> (
        index: Int, found: Bool
    ) {
        find(from: home, isKey: isKey, isEmpty: isEmpty) { next(after: $0, capacity: capacity) }
    }

    /// `find(from:capacity:isKey:isEmpty:)` in a table whose capacity is a power of two, `mask`
    /// being that capacity minus one: the step wraps by the mask, with no comparison.
    @inline(__always)
    static func find(from home: Int, mask: Int, isKey: (Int) -> Bool, isEmpty: (Int) -> Bool) -> (
        index: Int, found: Bool
    ) {
        find(from: home, isKey: isKey, isEmpty: isEmpty) { ($0 &+ 1) & mask }
    }

    @inline(__always)
    private static func find(from home: Int, isKey: (Int) -> Bool, isEmpty: (Int) -> Bool, next: (Int) -> Int)
        -> (index: Int, found: Bool)
    {
        var index = home
        while true {
            if isKey(index) { return (index, true) }
            if isEmpty(index) { return (index, false) }
            index = next(index)
        }
    }

    /// The first empty slot (`isEmpty`) from `home` on, wrapping around: where a key the table
    /// does not hold goes.
    @inline(__always)
    static func firstEmpty(from home: Int, capacity: Int, isEmpty: (Int) -> Bool) -> Int {
        var index = home
        while !isEmpty(index) { index = next(after: index, capacity: capacity) }
        return index
    }
}
