/// A hash map from object addresses to values: the ledger's table of whole instances (those
/// allocated during a test, `LifetimeLedger.Instance`) and each test's table of its instances.
/// (Most live instances are words in a `SegmentedTable`, which takes a third of the memory.)
///
/// Every allocation and deallocation record of a test run inserts or removes an address, so this
/// is on the reader's hot path. A `Dictionary<UInt64, _>` spent most of each record in SipHash, in the
/// uniqueness and exclusivity checks of its storage, and in its generic probing. Addresses need
/// none of that: they are unique, 16-byte aligned and never chosen by anyone who could aim at a
/// hash, so the hash and linear probing all the reader's tables share (`OpenAddressing`) serve.
/// Removal shifts the following entries back instead of leaving tombstones, so the table
/// never fills with dead entries however long a run churns. An address and its value share a
/// slot, in one allocation the table owns (copied on write, as an array would be).
struct AddressTable<Value: AddressTableValue> {
    /// One slot: an address (0 when empty) and its value, side by side, so that a hit reads one
    /// cache line.
    fileprivate struct Slot {
        var key: UInt64
        var value: Value
    }

    /// The slots, in memory of their own: one allocation, and one uniqueness check per change
    /// (two arrays took one per access of each).
    fileprivate final class Storage {
        let capacity: Int
        let slots: UnsafeMutablePointer<Slot>

        /// `capacity` empty slots (a power of two).
        init(capacity: Int) {
            self.capacity = capacity
            let bytes = UnsafeMutableRawPointer.allocate(
                byteCount: capacity * MemoryLayout<Slot>.stride, alignment: MemoryLayout<Slot>.alignment)
            // All zero: every key 0 (empty), every value plain bits.
            bytes.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * MemoryLayout<Slot>.stride)
            slots = bytes.bindMemory(to: Slot.self, capacity: capacity)
        }

        func copy() -> Storage {
            let copy = Storage(capacity: capacity)
            copy.slots.update(from: slots, count: capacity)
            return copy
        }

        deinit { slots.deallocate() }
    }

    /// Owns the slots: what copy-on-write checks. `slots` and `capacity` repeat its fields, so
    /// that a record reads them without retaining it.
    private var storage: Storage?
    private var slots: UnsafeMutablePointer<Slot>? = nil
    /// A power of two, or 0 before the first entry.
    private var capacity = 0
    private var zeroKeyValue: Value? = nil
    /// The number of addresses in the table, the address 0 included. Kept as it changes, so that
    /// `isEmpty`, which the ledger asks for nearly every record, compares once.
    private(set) var count = 0
    /// Entries in the slots (the address 0 not included).
    private var stored: Int { count &- (zeroKeyValue == nil ? 0 : 1) }

    /// The smallest capacity, a power of two.
    private static var minimumCapacity: Int { 16 }

    /// An empty table, which allocates nothing until its first entry.
    init() {}

    /// Whether the table holds nothing.
    var isEmpty: Bool { count == 0 }

    /// The slot where `key`'s probe sequence starts (`OpenAddressing`).
    @inline(__always)
    private static func home(of key: UInt64, mask: Int) -> Int {
        OpenAddressing.home(OpenAddressing.hash(address: key), mask: mask)
    }

    /// The slot holding `key` (not 0), or nil.
    @inline(__always)
    private func slot(of key: UInt64) -> Int? {
        guard let slots else { return nil }
        let slot = OpenAddressing.find(
            from: Self.home(of: key, mask: capacity &- 1), capacity: capacity, isKey: { slots[$0].key == key },
            isEmpty: { slots[$0].key == 0 })
        return slot.found ? slot.index : nil
    }

    /// The value stored for `key`; setting nil removes it.
    subscript(key: UInt64) -> Value? {
        get {
            if key == 0 { return zeroKeyValue }
            guard let slots, let index = slot(of: key) else { return nil }
            return slots[index].value
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// Whether the table holds `key`.
    @inline(__always)
    func contains(_ key: UInt64) -> Bool { key == 0 ? zeroKeyValue != nil : slot(of: key) != nil }

    /// Makes the slots this value's alone (copied if shared).
    @inline(never)
    private mutating func copySlots() {
        guard let copy = storage?.copy() else { return }
        storage = copy
        slots = copy.slots
    }

    /// Makes the slots this value's alone now, so that the `…Unshared` changes may follow: what
    /// the owner of a table does when it is itself copied.
    mutating func detach() {
        if !isKnownUniquelyReferenced(&storage) { copySlots() }
    }

    /// Stores `value` for `key`; returns the value it replaced, if any.
    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: UInt64) -> Value? {
        if key != 0 { detach() }
        return updateValueUnshared(value, forKey: key)
    }

    /// `updateValue` for a table whose slots no copy shares (its owner calls `detach()` when it is
    /// copied): one uniqueness check less per change, on the reader's hot path.
    @inline(__always)
    @discardableResult
    mutating func updateValueUnshared(_ value: Value, forKey key: UInt64) -> Value? {
        if key == 0 {
            if zeroKeyValue == nil { count &+= 1 }
            defer { zeroKeyValue = value }
            return zeroKeyValue
        }
        // At most three quarters full, so that every probe sequence reaches an empty slot soon.
        if (stored &+ 1) &* 4 > capacity &* 3 { resize(to: Swift.max(Self.minimumCapacity, capacity &* 2)) }
        guard let slots else { return nil }  // resize always leaves slots
        let (index, found) = OpenAddressing.find(
            from: Self.home(of: key, mask: capacity &- 1), capacity: capacity, isKey: { slots[$0].key == key },
            isEmpty: { slots[$0].key == 0 })
        if found {
            let previous = slots[index].value
            slots[index].value = value
            return previous
        }
        slots[index] = Slot(key: key, value: value)
        count &+= 1
        return nil
    }

    /// Removes `key`; returns its value, or nil when it was not in the table.
    @discardableResult
    mutating func removeValue(forKey key: UInt64) -> Value? {
        if key != 0 && slot(of: key) != nil { detach() }
        return removeValueUnshared(forKey: key)
    }

    /// `removeValue` for a table whose slots no copy shares (`updateValueUnshared`).
    @inline(__always)
    @discardableResult
    mutating func removeValueUnshared(forKey key: UInt64) -> Value? {
        if key == 0 {
            if zeroKeyValue != nil { count &-= 1 }
            defer { zeroKeyValue = nil }
            return zeroKeyValue
        }
        guard let slots, let found = slot(of: key) else { return nil }
        let removed = slots[found].value
        let mask = capacity &- 1
        // Backward-shift deletion: every entry after the hole whose probe sequence passes
        // through it moves into it, so that lookups never need a tombstone.
        var hole = found
        var index = OpenAddressing.next(after: hole, capacity: capacity)
        while slots[index].key != 0 {
            let wanted = Self.home(of: slots[index].key, mask: mask)
            // The entry at `index` may move to `hole` when `hole` lies on its way from `wanted`.
            if (index &- wanted) & mask >= (index &- hole) & mask {
                slots[hole] = slots[index]
                hole = index
            }
            index = OpenAddressing.next(after: index, capacity: capacity)
        }
        slots[hole].key = 0
        count &-= 1
        // Shrinks by half once an eighth full, so a table that once held a million entries gives
        // its memory back.
        if capacity > Self.minimumCapacity && stored &* 8 < capacity { resize(to: capacity / 2) }
        return removed
    }

    @inline(never)
    private mutating func resize(to newCapacity: Int) {
        let resized = Storage(capacity: newCapacity)
        let mask = newCapacity - 1
        if let slots {
            for index in 0..<capacity where slots[index].key != 0 {
                let slot = OpenAddressing.firstEmpty(
                    from: Self.home(of: slots[index].key, mask: mask), capacity: newCapacity,
                    isEmpty: { resized.slots[$0].key == 0 })
                resized.slots[slot] = slots[index]
            }
        }
        storage = resized
        slots = resized.slots
        capacity = newCapacity
    }

    /// Calls `body` with every address and its value, in no particular order, without copying
    /// the table.
    func forEach(_ body: (UInt64, Value) throws -> Void) rethrows {
        if let zeroKeyValue { try body(0, zeroKeyValue) }
        guard let slots else { return }
        for index in 0..<capacity where slots[index].key != 0 { try body(slots[index].key, slots[index].value) }
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

/// A value an ``AddressTable`` can hold: plain bits, so that slots are zeroed, moved and dropped
/// as memory.
protocol AddressTableValue: BitwiseCopyable {}

extension UInt32: AddressTableValue {}
