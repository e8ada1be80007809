/// How many instances of one type were alive over the run, for a chart: time cut into buckets of
/// `bucketMilliseconds`, and for each bucket in which the count changed, its lowest, highest and
/// last count. Between two samples the count stays at the earlier one's `last`.
public struct LiveCountTimeline: Sendable, Hashable {
    /// One bucket in which the count changed.
    public struct Sample: Sendable, Hashable {
        /// The bucket's start, in milliseconds since the target started.
        public var time: Int
        /// The fewest instances alive in the bucket, after its first change.
        public var low: Int
        /// The most instances alive in the bucket.
        public var high: Int
        /// Instances alive at the bucket's end.
        public var last: Int

        /// Creates the value from its parts.
        package init(time: Int, low: Int, high: Int, last: Int) {
            self.time = time
            self.low = low
            self.high = high
            self.last = last
        }
    }

    /// The width of a bucket, in milliseconds.
    public var bucketMilliseconds: Int
    /// The buckets in which the count changed, in time order.
    public var samples: [Sample]

    /// Creates the value from its parts.
    package init(bucketMilliseconds: Int, samples: [Sample]) {
        self.bucketMilliseconds = bucketMilliseconds
        self.samples = samples
    }

    /// The same curve in buckets of `width` milliseconds (a multiple of this one's width): the
    /// samples that fall in one wider bucket become one.
    public func rebucketed(to width: Int) -> LiveCountTimeline {
        guard width > bucketMilliseconds, width > 0 else { return self }
        var merged: [Sample] = []
        for sample in samples {
            let time = sample.time / width * width
            if var previous = merged.last, previous.time == time {
                previous.low = Swift.min(previous.low, sample.low)
                previous.high = Swift.max(previous.high, sample.high)
                previous.last = sample.last
                merged[merged.count - 1] = previous
            } else {
                merged.append(Sample(time: time, low: sample.low, high: sample.high, last: sample.last))
            }
        }
        return LiveCountTimeline(bucketMilliseconds: width, samples: merged)
    }

    /// The instances alive in all of `timelines` together (one type in several processes), in the
    /// widest of their buckets. Where two change in the same bucket, `low` and `high` are the sums
    /// of theirs: bounds of the sum, not its exact extremes.
    public static func sum(_ timelines: [LiveCountTimeline]) -> LiveCountTimeline? {
        guard let first = timelines.first else { return nil }
        guard timelines.count > 1 else { return first }
        let width = timelines.map(\.bucketMilliseconds).max() ?? first.bucketMilliseconds
        let parts = timelines.map { $0.rebucketed(to: width).samples }
        var positions = Array(repeating: 0, count: parts.count)
        var carried = Array(repeating: 0, count: parts.count)
        var samples: [Sample] = []
        while true {
            let next = parts.indices.compactMap { index in
                positions[index] < parts[index].count ? parts[index][positions[index]].time : nil
            }.min()
            guard let time = next else { break }
            var sum = Sample(time: time, low: 0, high: 0, last: 0)
            for index in parts.indices {
                if positions[index] < parts[index].count, parts[index][positions[index]].time == time {
                    let sample = parts[index][positions[index]]
                    sum.low += sample.low
                    sum.high += sample.high
                    sum.last += sample.last
                    carried[index] = sample.last
                    positions[index] += 1
                } else {
                    sum.low += carried[index]
                    sum.high += carried[index]
                    sum.last += carried[index]
                }
            }
            samples.append(sum)
        }
        return LiveCountTimeline(bucketMilliseconds: width, samples: samples)
    }
}
