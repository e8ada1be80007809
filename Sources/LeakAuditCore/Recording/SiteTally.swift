/// How many instances each allocation site (stack and test) has. A site without a test (every
/// site outside a test run) is counted in an array indexed by its stack id, which the shim hands
/// out densely from 0: a report over a million instances hashed a million sites.
struct SiteTally {
    private var byStack: [Int] = []
    private var others: [LifetimeLedger.Site: Int] = [:]

    /// Stack ids below it are counted in the array: the shim's first stack table holds fewer than
    /// 2^18 stacks, and a later id (a large suite's) or a damaged one costs a hash, not a large
    /// array.
    private static let denseStackIDs: UInt32 = 1 << 18

    /// The tally of `sites`.
    init<Sites: Sequence<LifetimeLedger.Site>>(_ sites: Sites) {
        for site in sites { add(site) }
    }

    init() {}

    /// How far past its end the array grows for one stack id: stack ids are dense over a whole
    /// process, not over one type, so a type whose first stack is the 10,000th must not take an
    /// array of 10,000 counts (10,000 such types took 800 MB).
    private static let denseGrowth = 256

    /// Counts `count` instances allocated at `site`.
    mutating func add(_ site: LifetimeLedger.Site, count: Int = 1) {
        if site.test == nil && site.stackID < Self.denseStackIDs && Int(site.stackID) < byStack.count + Self.denseGrowth {
            let index = Int(site.stackID)
            if index >= byStack.count { byStack += repeatElement(0, count: index + 1 - byStack.count) }
            byStack[index] += count
        } else {
            others[site, default: 0] += count
        }
    }

    /// The counts the array holds (for tests: what the tally costs).
    var arrayLength: Int { byStack.count }

    /// Every site counted, with its count, in no particular order.
    var counts: [(site: LifetimeLedger.Site, count: Int)] {
        var counts = others.map { (site: $0.key, count: $0.value) }
        for (stackID, count) in byStack.enumerated() where count > 0 {
            counts.append((LifetimeLedger.Site(stackID: UInt32(stackID), test: nil), count))
        }
        return counts
    }
}
