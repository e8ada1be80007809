import LeakAuditModel
import LeakAuditWire

// What the ledger keeps of each type: its name and budget, and the counts every record updates.

extension LifetimeLedger {
    struct TypeLedger {
        var name: String
        var max: Int
        var budget: WireBudget = .code
        /// A subclass of XCTestCase: XCTest keeps its instances until the run ends.
        var heldByXCTest = false
        /// Its counts. During the replay the ledger keeps them apart (in its `LiveTally`, which
        /// every record updates) and copies them here when it hands out a view of the type.
        var counts = TypeCounts()
        /// The instances alive now: filled by `LifetimeLedger.types`, empty during the replay.
        var live = LiveInstances()
        /// Where the instances alive at the peak that died since were allocated, counted by site
        /// (`Instance.typeAndSite` words without a type): as many entries as sites, not deaths.
        var diedSincePeak = WordCounter()
        /// Instances alive over time, for a chart. During the replay its bucket under way is
        /// `counts.buckets`; a view of the type has it here too.
        var timeline = LiveCountBuckets()

        /// False for a placeholder: a type whose instances came before (or without) its
        /// definition, which only a damaged stream has. Reports show no such type.
        var defined: Bool { counts.defined }
        /// Instances alive now.
        var liveCount: Int { counts.liveCount }
        var peak: Int { counts.peak }
        var peakSequence: UInt64 { counts.peakSequence }
        /// When the peak was first reached, in milliseconds since the channel was created.
        var peakTime: UInt64 { counts.peakTime }
        var allocated: Int { counts.allocated }
    }

    /// The counts of one type that every record updates, kept apart from its name and arrays
    /// (`TypeLedger`): plain values, so that an update copies, retains and releases nothing.
    /// `TypeLedger.counts` is a copy of them, made when a view of the type is asked for.
    struct TypeCounts {
        var defined = true
        var liveCount = 0
        var peak = 0
        var peakSequence: UInt64 = 0
        var peakTime: UInt64 = 0
        var allocated = 0
        /// Deaths since the peak of instances alive at it (their sites are the TypeLedger's): a new
        /// peak needs the slow way only when there are some to forget.
        var deathsSincePeak = 0
        /// The timeline's width and bucket under way; its earlier buckets are the TypeLedger's.
        var buckets = LiveCountBuckets.Head()

        /// Counts an allocation; true when it is a new peak (the instances that died since the
        /// last one no longer count) or its time needs a new bucket: the caller's slow path.
        /// The live count changes only here and in `died`, one at a time, and every change goes
        /// to the timeline (or starts its bucket): the bucket's last count is the one before.
        @inline(__always)
        mutating func allocated(sequence: UInt64, time: RecordTime) -> (newPeak: Bool, newBucket: Bool) {
            allocated &+= 1
            liveCount &+= 1
            var newPeak = false
            if liveCount > peak {
                peak = liveCount
                peakSequence = sequence
                peakTime = time.milliseconds
                newPeak = true
            }
            return (newPeak, !buckets.record(liveCount, at: time, moving: .rise))
        }

        /// Whether an allocation at `time` changes nothing but these counts (`allocatedAlone`): its
        /// time falls in the bucket under way, and it makes no new peak while instances that died
        /// since the last one are counted (which a new peak forgets, in the type's arrays).
        @inline(__always)
        func countsAllocationAlone(at time: RecordTime) -> Bool {
            (liveCount < peak || deathsSincePeak == 0) && buckets.isUnderWay(time)
        }

        /// Counts an allocation that `countsAllocationAlone(at:)` said yes to: `allocated` without
        /// its questions.
        @inline(__always)
        mutating func allocatedAlone(sequence: UInt64, time: RecordTime) {
            allocated &+= 1
            liveCount &+= 1
            if liveCount > peak {
                peak = liveCount
                peakSequence = sequence
                peakTime = time.milliseconds
            }
            buckets.recordUnderWay(liveCount, moving: .rise)
        }

        /// Counts a death; says whether its time needs a new bucket.
        @inline(__always)
        mutating func died(time: RecordTime) -> Bool {
            liveCount &-= 1
            return !buckets.record(liveCount, at: time, moving: .fall)
        }

        /// Whether an instance of the full table, allocated at `sequence`, was alive at the peak.
        @inline(__always)
        func aliveAtPeak(sequence: UInt64) -> Bool { sequence <= peakSequence }

        /// Whether a compact instance of `peakOrder` was alive at the peak (`CompactInstance`).
        @inline(__always)
        func aliveAtPeak(peakOrder: UInt64) -> Bool { peakOrder <= UInt64(truncatingIfNeeded: peak) }

        /// The peak order of the next allocation (`CompactInstance`): the peak now plus one, whether
        /// it makes a new peak (the live count never exceeds the peak by more than the one it
        /// adds) or not. A peak is a live count, never negative, so it converts here and in
        /// `aliveAtPeak` without a check.
        var nextPeakOrder: UInt64 { UInt64(truncatingIfNeeded: peak) &+ 1 }
    }
}
