/// A hash map from object addresses to values: what the ledger keeps per live instance.
///
/// Every allocation and deallocation record inserts or removes one address, so this is the
/// reader's hot path. A `Dictionary<UInt64, _>` spent most of each record in SipHash, in the
/// uniqueness and exclusivity checks of its storage, and in its generic probing. Addresses need
/// none of that: they are unique, 16-byte aligned and never chosen by anyone who could aim at a
/// hash (a hostile target can only slow its own audit), so a multiplicative hash of the address
/// spreads them well. Open addressing with linear probing keeps a lookup in one or two cache
/// lines; removal shifts the following entries back instead of leaving tombstones, so the table
/// never fills with dead entries however long a run churns. Keys and values live in separate
/// arrays: a probe reads only keys.
struct AddressTable<Value: AddressTableValue> {
    /// 0 marks an empty slot; the address 0, which only a damaged stream names, is kept aside.
    private var slotKeys: ContiguousArray<UInt64>
    /// `Value.vacant` in empty slots: a value needs no optional's extra byte (and its padding).
    private var slotValues: ContiguousArray<Value>
    private var zeroKeyValue: Value? = nil
    /// Entries in `slotKeys` (the address 0 not included).
    private var stored = 0

    /// The smallest capacity, a power of two.
    private static var minimumCapacity: Int { 16 }

    /// An empty table, which allocates nothing until its first entry.
    init() {
        slotKeys = []
        slotValues = []
    }

    /// The number of addresses in the table.
    var count: Int { stored + (zeroKeyValue == nil ? 0 : 1) }

    var isEmpty: Bool { count == 0 }

    /// The slot where `key`'s probe sequence starts: the top bits of a Fibonacci hash of the
    /// address without its alignment bits.
    @inline(__always)
    private static func home(of key: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: ((key >> 4) &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }

    /// The slot holding `key`, or nil.
    @inline(__always)
    private func slot(of key: UInt64) -> Int? {
        slotKeys.withUnsafeBufferPointer { slotKeys in
            guard !slotKeys.isEmpty else { return nil }
            let mask = slotKeys.count - 1
            var index = Self.home(of: key, mask: mask)
            while true {
                let seen = slotKeys[index]
                if seen == key { return index }
                if seen == 0 { return nil }
                index = (index + 1) & mask
            }
        }
    }

    /// The value stored for `key`; setting nil removes it.
    subscript(key: UInt64) -> Value? {
        get {
            if key == 0 { return zeroKeyValue }
            return slot(of: key).map { slotValues[$0] }
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// Stores `value` for `key`; returns the value it replaced, if any.
    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: UInt64) -> Value? {
        if key == 0 {
            defer { zeroKeyValue = value }
            return zeroKeyValue
        }
        // At most three quarters full, so that every probe sequence reaches an empty slot soon.
        if (stored + 1) * 4 > slotKeys.count * 3 { resize(to: Swift.max(Self.minimumCapacity, slotKeys.count * 2)) }
        let mask = slotKeys.count - 1
        let start = Self.home(of: key, mask: mask)
        let (index, found) = slotKeys.withUnsafeMutableBufferPointer { slotKeys in
            var index = start
            while true {
                let seen = slotKeys[index]
                if seen == key { return (index, true) }
                if seen == 0 {
                    slotKeys[index] = key
                    return (index, false)
                }
                index = (index + 1) & mask
            }
        }
        if found {
            defer { slotValues[index] = value }
            return slotValues[index]
        }
        slotValues[index] = value
        stored += 1
        return nil
    }

    /// Removes `key`; returns its value, or nil when it was not in the table.
    @discardableResult
    mutating func removeValue(forKey key: UInt64) -> Value? {
        if key == 0 {
            defer { zeroKeyValue = nil }
            return zeroKeyValue
        }
        guard let found = slot(of: key) else { return nil }
        let removed = slotValues[found]
        let mask = slotKeys.count - 1
        slotKeys.withUnsafeMutableBufferPointer { slotKeys in
            slotValues.withUnsafeMutableBufferPointer { slotValues in
                // Backward-shift deletion: every entry after the hole whose probe sequence passes
                // through it moves into it, so that lookups never need a tombstone.
                var hole = found
                var index = (hole + 1) & mask
                while slotKeys[index] != 0 {
                    let wanted = Self.home(of: slotKeys[index], mask: mask)
                    // The entry at `index` may move to `hole` when `hole` lies on its way from `wanted`.
                    if (index &- wanted) & mask >= (index &- hole) & mask {
                        slotKeys[hole] = slotKeys[index]
                        slotValues[hole] = slotValues[index]
                        hole = index
                    }
                    index = (index + 1) & mask
                }
                slotKeys[hole] = 0
                slotValues[hole] = .vacant
            }
        }
        stored -= 1
        // Shrinks by half once an eighth full, so a table that once held a million entries gives
        // its memory back.
        if slotKeys.count > Self.minimumCapacity && stored * 8 < slotKeys.count { resize(to: slotKeys.count / 2) }
        return removed
    }

    private mutating func resize(to capacity: Int) {
        let oldKeys = slotKeys
        let oldValues = slotValues
        var keys = ContiguousArray<UInt64>(repeating: 0, count: capacity)
        // Only occupied slots' values are ever read, and every value type is trivial (plain
        // integers): the new array is filled only where an entry moves in, instead of writing
        // `vacant` into every slot first.
        var values = ContiguousArray<Value>(unsafeUninitializedCapacity: capacity) { _, count in count = capacity }
        let mask = capacity - 1
        keys.withUnsafeMutableBufferPointer { keys in
            values.withUnsafeMutableBufferPointer { values in
                oldKeys.withUnsafeBufferPointer { oldKeys in
                    oldValues.withUnsafeBufferPointer { oldValues in
                        for index in oldKeys.indices where oldKeys[index] != 0 {
                            var slot = Self.home(of: oldKeys[index], mask: mask)
                            while keys[slot] != 0 { slot = (slot + 1) & mask }
                            keys[slot] = oldKeys[index]
                            values[slot] = oldValues[index]
                        }
                    }
                }
            }
        }
        slotKeys = keys
        slotValues = values
    }

    /// Calls `body` with every address and its value, in no particular order, without copying
    /// the table.
    func forEach(_ body: (UInt64, Value) throws -> Void) rethrows {
        if let zeroKeyValue { try body(0, zeroKeyValue) }
        try slotKeys.withUnsafeBufferPointer { keys in
            try slotValues.withUnsafeBufferPointer { values in
                for index in keys.indices where keys[index] != 0 { try body(keys[index], values[index]) }
            }
        }
    }

    /// Every address and its value, in no particular order.
    var entries: [(key: UInt64, value: Value)] {
        var result: [(key: UInt64, value: Value)] = []
        result.reserveCapacity(count)
        forEach { result.append(($0, $1)) }
        return result
    }

    /// Every address in the table, in no particular order.
    var keys: [UInt64] {
        var result: [UInt64] = []
        result.reserveCapacity(count)
        forEach { key, _ in result.append(key) }
        return result
    }

    /// Every value in the table, in no particular order.
    var values: [Value] {
        var result: [Value] = []
        result.reserveCapacity(count)
        forEach { _, value in result.append(value) }
        return result
    }
}

/// A value an ``AddressTable`` can hold: it names the value its empty slots hold.
protocol AddressTableValue: BitwiseCopyable {
    /// What an empty slot holds; never read as an entry's value.
    static var vacant: Self { get }
}

extension UInt32: AddressTableValue {
    static var vacant: UInt32 { 0 }
}
