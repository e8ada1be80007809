import LeakAuditModel
import LeakAuditWire

// How the ledger keeps one live instance: whole, or in one word of the compact table.

extension LifetimeLedger {
    /// One live instance, whole: 16 bytes, as the full table keeps those allocated during a test
    /// (and the rare ones `CompactInstance` cannot hold), with their slot's sequence number. Its
    /// type, stack and test share one word: a type id is below `typeIDLimit` (2^16), and the shim
    /// hands out fewer than 2^20 stack ids and numbers tests from 0, so 24 bits each hold every
    /// real value; a larger one, which only a damaged stream has, is stored as none (and counted
    /// as damage).
    struct Instance: AddressTableValue {
        /// Type id (16 bits), stack id plus one (24 bits, 0 for none), test id plus one (24 bits, 0
        /// for none), from the low bits up.
        private var packed: UInt64
        var sequence: UInt64

        /// Stack and test ids from 2^24 − 1 on are stored as none.
        static let idLimit: UInt32 = (1 << 24) - 1

        init(stackID: UInt32, sequence: UInt64, test: UInt32? = nil, typeID: UInt32 = 0) {
            self.sequence = sequence
            let stack = stackID < Self.idLimit ? UInt64(stackID) + 1 : 0
            let test = test.map { $0 < Self.idLimit ? UInt64($0) + 1 : 0 } ?? 0
            packed = UInt64(typeID & 0xFFFF) | stack << 16 | test << 40
        }

        /// The instance's type.
        var typeID: UInt32 { UInt32(truncatingIfNeeded: packed & 0xFFFF) }

        /// The allocation's stack; LA_STACK_NONE when it has none (or had one no writer hands out).
        var stackID: UInt32 {
            let stack = UInt32(truncatingIfNeeded: (packed >> 16) & 0xFF_FFFF)
            return stack == 0 ? LA_STACK_NONE : stack - 1
        }

        /// True when it was allocated during a test.
        var hasTest: Bool { packed >> 40 != 0 }

        /// The test running when it was allocated.
        var test: UInt32? {
            let test = UInt32(truncatingIfNeeded: packed >> 40)
            return test == 0 ? nil : test - 1
        }

        /// Where it was allocated: its stack and its test.
        var site: Site { Site(stackID: stackID, test: test) }

        /// Its type and site in one word, as it keeps them: a key to count sites by.
        var typeAndSite: UInt64 { packed }

        /// The type and site of a `typeAndSite` word.
        static func typeAndSite(_ word: UInt64) -> (typeID: UInt32, site: Site) {
            let instance = Instance(packed: word)
            return (instance.typeID, instance.site)
        }

        private init(packed: UInt64) {
            self.packed = packed
            sequence = 0
        }

    }

    /// An instance as the compact table keeps it, in one word: its type id (14 bits), its stack id
    /// plus one (18 bits, 0 for none) and its peak order (32 bits), from the low bits up. It has no
    /// test (an instance allocated during a test is kept whole, `Instance`, with its sequence
    /// number, which tells it from a later one at the same address).
    ///
    /// The peak order replaces the sequence number: it is the lowest peak of the type whose moment
    /// came at or after the allocation, that is the type's peak after counting it when it made a new
    /// peak, and that peak plus one otherwise. The instance was alive at the type's (latest) peak
    /// exactly when its order is at most that peak: an allocation that made the peak is in it, an
    /// earlier one is in it when a later allocation made the peak, and a later one is not.
    struct CompactInstance {
        let word: UInt64

        /// Type ids below it fit (the shim hands out at most 16,384).
        static let typeIDLimit: UInt32 = 1 << 14
        /// Stack ids below it fit (the shim's first stack table holds fewer than 2^18; the later
        /// ids of a process with more stacks are kept whole).
        static let stackIDLimit: UInt32 = (1 << 18) - 1

        init(word: UInt64) { self.word = word }

        /// The word for these, when they fit: a type id below `typeIDLimit`, a stack id below
        /// `stackIDLimit` or none, a peak order below 2^32 (checked by the caller).
        @inline(__always)
        init(typeID: UInt32, stackID: UInt32, peakOrder: UInt64) {
            // LA_STACK_NONE (all ones) wraps to 0.
            word = UInt64(typeID) | UInt64(stackID &+ 1) << 14 | peakOrder << 32
        }

        /// True when an allocation with `stackID` fits in a word: a stack id below `stackIDLimit` or
        /// none, which both come out at most `stackIDLimit` once wrapped. (The type id is the
        /// caller's to check: `LiveTally.compactPosition(of:)` answers for it.)
        @inline(__always)
        static func fits(stackID: UInt32) -> Bool { stackID &+ 1 <= stackIDLimit }

        var typeID: UInt32 { UInt32(truncatingIfNeeded: word & 0x3FFF) }
        var stackID: UInt32 {
            let stack = UInt32(truncatingIfNeeded: (word >> 14) & 0x3_FFFF)
            return stack == 0 ? LA_STACK_NONE : stack - 1
        }
        var peakOrder: UInt64 { word >> 32 }

        /// The instance as the full table would keep it, but for its sequence number, which a
        /// compact instance does not keep (0).
        var instance: Instance { Instance(stackID: stackID, sequence: 0, typeID: typeID) }
    }

    /// A type's instances alive now, gathered from the ledger's one table when `types` is asked
    /// for; the replay itself keeps only counts per type.
    struct LiveInstances {
        var entries: [(object: UInt64, instance: Instance)] = []

        var count: Int { entries.count }
        var isEmpty: Bool { entries.isEmpty }
        /// The instances' addresses.
        var keys: [UInt64] { entries.map(\.object) }
        /// The instances.
        var values: [Instance] { entries.map(\.instance) }
        /// The instance at `object`, if alive (a linear search: for tests and single look-ups).
        subscript(object: UInt64) -> Instance? { entries.first { $0.object == object }?.instance }
    }
}
