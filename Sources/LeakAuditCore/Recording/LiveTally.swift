/// What every allocation and deallocation record of a process changes: each type's counts, found
/// by type id, and the tables of instances alive.
///
/// A ledger is a value, but copying this part at every record would be absurd and checking the
/// uniqueness of each array it touches cost a record several runtime calls and bounds checks. So
/// the ledger keeps it in this one object, checks that object's uniqueness once per record and
/// copies it only when the ledger itself was copied; inside, the counts are plain memory and the
/// table's slots are this object's alone (`AddressTable.detach()` on copy). Its fields live behind
/// a `let` pointer: a class's `var`s cost a dynamic exclusivity check per access, which cost more
/// than the rest of a record.
final class LiveTally {
    private struct Contents {
        /// By type id: the type's position in the ledger's arrays, or -1. Ids are dense from 0, so
        /// memory indexed by id replaces a hash lookup per record.
        var positions: UnsafeMutablePointer<Int32>
        /// By type id: the type's position when its allocations may be kept compact (the type is
        /// defined and its id fits a `CompactInstance`), or -1: what an allocation asks, in one
        /// test rather than three.
        var compactPositions: UnsafeMutablePointer<Int32>
        /// Type ids below it have an entry in `positions` and `compactPositions`.
        var idCount = 0
        var idCapacity: Int
        /// By position: the type's counts.
        var counts: UnsafeMutablePointer<LifetimeLedger.TypeCounts>
        /// Types (positions) in `counts`.
        var typeCount = 0
        var countsCapacity: Int
        /// The instances alive now that `compact` cannot hold, by address.
        var full = AddressTable<LifetimeLedger.Instance>()
    }

    private let contents: UnsafeMutablePointer<Contents>

    /// Most instances alive now, by address, each in a word (`LifetimeLedger.CompactInstance`): the
    /// allocations outside tests whose ids fit. 16 bytes a slot, where `full` takes 24.
    let compact: SegmentedTable

    convenience init() {
        self.init(compact: SegmentedTable())
    }

    private init(compact: SegmentedTable) {
        self.compact = compact
        contents = UnsafeMutablePointer<Contents>.allocate(capacity: 1)
        contents.initialize(
            to: Contents(
                positions: UnsafeMutablePointer<Int32>.allocate(capacity: 16),
                compactPositions: UnsafeMutablePointer<Int32>.allocate(capacity: 16), idCapacity: 16,
                counts: UnsafeMutablePointer<LifetimeLedger.TypeCounts>.allocate(capacity: 16), countsCapacity: 16))
    }

    deinit {
        compact.deallocate()
        contents.pointee.positions.deallocate()
        contents.pointee.compactPositions.deallocate()
        contents.pointee.counts.deinitialize(count: contents.pointee.typeCount)
        contents.pointee.counts.deallocate()
        contents.deinitialize(count: 1)
        contents.deallocate()
    }

    /// Type ids below it may have a position.
    var idCount: Int { contents.pointee.idCount }

    /// By position: each type's counts.
    var counts: UnsafeMutablePointer<LifetimeLedger.TypeCounts> { contents.pointee.counts }

    /// The instances alive now that `compact` cannot hold (allocated in a test, or with an id or a
    /// peak order too large for a word), by address. Changed only through its `…Unshared` methods:
    /// its slots are this object's alone.
    var full: AddressTable<LifetimeLedger.Instance> {
        unsafeAddress { UnsafePointer(contents.pointer(to: \.full)!) }
        unsafeMutableAddress { contents.pointer(to: \.full)! }
    }

    /// A copy that shares nothing with this one.
    func copy() -> LiveTally {
        let copy = LiveTally(compact: compact.copy())
        copy.grow(ids: idCount, types: contents.pointee.typeCount)
        copy.contents.pointee.positions.update(from: contents.pointee.positions, count: idCount)
        copy.contents.pointee.compactPositions.update(from: contents.pointee.compactPositions, count: idCount)
        copy.contents.pointee.idCount = idCount
        copy.contents.pointee.counts.initialize(from: counts, count: contents.pointee.typeCount)
        copy.contents.pointee.typeCount = contents.pointee.typeCount
        copy.full = full
        copy.full.detach()
        return copy
    }

    /// The position of type `typeID`, or -1 when it was never seen.
    @inline(__always)
    func position(of typeID: UInt32) -> Int {
        Int(typeID) < contents.pointee.idCount ? Int(contents.pointee.positions[Int(typeID)]) : -1
    }

    /// The position of type `typeID` when its allocations may be kept compact (it is defined, and
    /// its id is below `CompactInstance.typeIDLimit`), or -1.
    @inline(__always)
    func compactPosition(of typeID: UInt32) -> Int {
        Int(typeID) < contents.pointee.idCount ? Int(contents.pointee.compactPositions[Int(typeID)]) : -1
    }

    /// Adds type `typeID` (below `LifetimeLedger.typeIDLimit`, not seen before) with `counts` at
    /// the next position, and returns that position.
    func append(_ typeCounts: LifetimeLedger.TypeCounts, id typeID: UInt32) -> Int {
        let slot = Int(typeID)
        let position = contents.pointee.typeCount
        grow(ids: slot + 1, types: position + 1)
        let idCount = contents.pointee.idCount
        if slot >= idCount {
            (contents.pointee.positions + idCount).initialize(repeating: -1, count: slot + 1 - idCount)
            (contents.pointee.compactPositions + idCount).initialize(repeating: -1, count: slot + 1 - idCount)
            contents.pointee.idCount = slot + 1
        }
        contents.pointee.positions[slot] = Int32(position)
        (contents.pointee.counts + position).initialize(to: typeCounts)
        contents.pointee.typeCount = position + 1
        if typeCounts.defined { define(typeID) }
        return position
    }

    /// Marks type `typeID` (seen before) as defined: its counts say so, and its allocations may be
    /// kept compact when its id fits.
    func define(_ typeID: UInt32) {
        let position = self.position(of: typeID)
        contents.pointee.counts[position].defined = true
        if typeID < LifetimeLedger.CompactInstance.typeIDLimit {
            contents.pointee.compactPositions[Int(typeID)] = Int32(position)
        }
    }

    /// Makes room for `ids` type ids and `types` positions.
    private func grow(ids: Int, types: Int) {
        if ids > contents.pointee.idCapacity {
            let capacity = Swift.max(ids, contents.pointee.idCapacity * 2)
            let grown = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
            grown.moveInitialize(from: contents.pointee.positions, count: contents.pointee.idCount)
            contents.pointee.positions.deallocate()
            contents.pointee.positions = grown
            let grownCompact = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
            grownCompact.moveInitialize(from: contents.pointee.compactPositions, count: contents.pointee.idCount)
            contents.pointee.compactPositions.deallocate()
            contents.pointee.compactPositions = grownCompact
            contents.pointee.idCapacity = capacity
        }
        if types > contents.pointee.countsCapacity {
            let capacity = Swift.max(types, contents.pointee.countsCapacity * 2)
            let grown = UnsafeMutablePointer<LifetimeLedger.TypeCounts>.allocate(capacity: capacity)
            grown.moveInitialize(from: contents.pointee.counts, count: contents.pointee.typeCount)
            contents.pointee.counts.deallocate()
            contents.pointee.counts = grown
            contents.pointee.countsCapacity = capacity
        }
    }
}
