import LeakAuditModel

/// How many instances of one type were alive over the run, kept small enough for every type:
/// time is cut into buckets of a width that doubles whenever the run outgrows `bucketLimit` of
/// them, and each bucket in which the count changed keeps its lowest, highest and last count. The
/// exact peak is the type ledger's; this is the shape of the curve, for a chart.
///
/// Recording an event in the bucket under way touches only this value's own fields (no array):
/// the replay pays a comparison and two min/max per event.
struct LiveCountBuckets {
    /// One bucket in which the count changed.
    struct Point: Equatable {
        /// The bucket's index: it starts at `bucket << shift` milliseconds.
        var bucket: UInt64
        var low: UInt32
        var high: UInt32
        var last: UInt32
    }

    /// Most buckets a timeline spans before its buckets are made twice as wide.
    static let bucketLimit: UInt64 = 256

    /// What every event touches: the buckets' width and the bucket under way, plain values that a
    /// ledger can keep beside its other per-type counts. The bucket under way keeps its counts as
    /// the ledger does (`Int`), so that an event converts nothing; they are clamped to a `Point`'s
    /// 32 bits when the bucket is stored.
    struct Head {
        /// Buckets are `1 << shift` milliseconds wide.
        fileprivate(set) var shift: UInt64 = 0
        /// The index of the bucket under way; `UInt64.max` before the first event.
        fileprivate(set) var bucket: UInt64 = .max
        /// The bucket's lowest, highest and last count.
        fileprivate(set) var low = 0
        fileprivate(set) var high = 0
        fileprivate(set) var last = 0
        /// The first time past the bucket under way (0 before the first event): one comparison
        /// tells whether an event counts in it.
        fileprivate(set) var end: UInt64 = 0

        /// The bucket under way as a point.
        var current: Point {
            Point(bucket: bucket, low: UInt32(clamping: low), high: UInt32(clamping: high), last: UInt32(clamping: last))
        }

        /// How a count moved since the last one recorded (`last`).
        enum Move {
            /// A ledger's count, one above the last: it can only raise the bucket's highest count.
            case rise
            /// A ledger's count, one below the last: it can only lower the bucket's lowest.
            case fall
            /// Any count.
            case any
        }

        /// Counts `value` at `time` in the bucket under way; false when a bucket must start for it
        /// (`LiveCountBuckets.startBucket`). A time before the bucket under way (concurrent writers
        /// stamp in a slightly different order than they commit) counts in that bucket. `move` is
        /// a constant where this is inlined: a rise or a fall updates one bound.
        @inline(__always)
        mutating func record(_ value: Int, at time: RecordTime, moving move: Move = .any) -> Bool {
            guard isUnderWay(time) else { return false }
            recordUnderWay(value, moving: move)
            return true
        }

        /// Whether `time` counts in the bucket under way (`record`).
        @inline(__always)
        func isUnderWay(_ time: RecordTime) -> Bool { time.isBefore(end) }

        /// Counts `value` in the bucket under way, whose time the caller found to count in it
        /// (`isUnderWay`).
        @inline(__always)
        mutating func recordUnderWay(_ value: Int, moving move: Move = .any) {
            if move != .rise { low = Swift.min(low, value) }
            if move != .fall { high = Swift.max(high, value) }
            last = value
        }
    }

    /// The width and the bucket under way.
    var head = Head()
    /// Buckets before the one under way, in time order.
    private var earlier: [Point] = []

    /// Buckets are `1 << shift` milliseconds wide.
    var shift: UInt64 { head.shift }

    /// Counts `live` instances alive at `time` (milliseconds since the channel was created).
    @inline(__always)
    mutating func record(_ live: Int, at time: UInt64) {
        if !head.record(live, at: RecordTime(exactly: time)) { startBucket(live, at: time) }
    }

    /// Starts the bucket of `time` with `value`, when `head.record` found no room for it.
    @inline(never)
    mutating func startBucket(_ value: Int, at time: UInt64) {
        if head.bucket != .max { earlier.append(head.current) }
        while time >> head.shift >= Self.bucketLimit { coarsen() }
        head.bucket = time >> head.shift
        (head.low, head.high, head.last) = (value, value, value)
        head.end = (head.bucket + 1) << head.shift
    }

    /// Makes the buckets before the one about to start twice as wide, merging each pair.
    private mutating func coarsen() {
        head.shift += 1
        var merged: [Point] = []
        merged.reserveCapacity(earlier.count)
        for var point in earlier {
            point.bucket >>= 1
            if var previous = merged.last, previous.bucket == point.bucket {
                previous.low = Swift.min(previous.low, point.low)
                previous.high = Swift.max(previous.high, point.high)
                previous.last = point.last
                merged[merged.count - 1] = previous
            } else {
                merged.append(point)
            }
        }
        earlier = merged
    }

    /// Every bucket in which the count changed, in time order.
    var points: [Point] { head.bucket == .max ? earlier : earlier + [head.current] }

    /// The width of a bucket, in milliseconds.
    var bucketMilliseconds: UInt64 { 1 << shift }

    /// The report's form of the curve.
    var timeline: LiveCountTimeline {
        LiveCountTimeline(
            bucketMilliseconds: Int(bucketMilliseconds),
            samples: points.map {
                LiveCountTimeline.Sample(
                    time: Int(clamping: $0.bucket << shift), low: Int($0.low), high: Int($0.high), last: Int($0.last))
            })
    }
}
