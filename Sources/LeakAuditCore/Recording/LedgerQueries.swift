import LeakAuditModel
import LeakAuditWire

// What a report, a progress display and the tests ask of a ledger once its records are applied.

extension LifetimeLedger {
    /// Every type seen, by id, with its counts but not its instances (`live` empty): cheap.
    var typeCounts: [UInt32: TypeLedger] {
        Dictionary(uniqueKeysWithValues: typeIDs.indices.map { (typeIDs[$0], ledger(at: $0)) })
    }

    /// The type at `position`, its counts filled in.
    private func ledger(at position: Int) -> TypeLedger {
        var ledger = typeLedgers[position]
        ledger.counts = tally.counts[position]
        ledger.timeline.head = tally.counts[position].buckets
        return ledger
    }

    /// What a progress display shows of this process now, from the per-type counts and the tests:
    /// one pass over the types, none over the instances.
    func progressTally() -> ProgressTally {
        var tally = ProgressTally()
        for type in typeLedgers.indices.map(ledger(at:)) where type.defined {
            tally.watchedAlive += type.liveCount
            guard type.budget != .none else { continue }
            tally.trackedAlive += type.liveCount
            if type.peak > type.max { tally.typesOverBudget += 1 }
            if type.liveCount > 0 {
                tally.consider(.init(typeName: type.name, live: type.liveCount, max: type.max))
            }
        }
        tally.testsSeen = !tests.isEmpty || process?.isTestBundle == true
        for test in tests.values where test.started && test.running == 0 { tally.testsFinished += 1 }
        return tally
    }

    /// Every type seen, by id, with its instances alive now, gathered in one pass over the live
    /// table. Builds them on each access: to inspect a ledger whole (its tests do); a report
    /// counts sites instead (`siteTallies`) and builds no list of instances.
    var types: [UInt32: TypeLedger] {
        var ledgers = typeLedgers.indices.map(ledger(at:))
        for index in ledgers.indices { ledgers[index].live.entries.reserveCapacity(ledgers[index].liveCount) }
        tally.full.forEach { object, instance in
            if let position = position(of: instance.typeID) { ledgers[position].live.entries.append((object, instance)) }
        }
        tally.compact.forEach { object, word in
            let instance = CompactInstance(word: word).instance
            if let position = position(of: instance.typeID) { ledgers[position].live.entries.append((object, instance)) }
        }
        return Dictionary(uniqueKeysWithValues: zip(typeIDs, ledgers).map { ($0, $1) })
    }

    /// Where the instances of some types were allocated, counted: those alive now and those alive
    /// at each type's peak.
    struct SiteTallies {
        var atExit = SiteTally()
        var atPeak = SiteTally()
    }

    /// For each type `wanted` says yes to, by id: where its instances alive now, and those alive at
    /// its peak, were allocated. One pass over the live table, counting as it goes: a report of a
    /// million instances builds no array of them.
    func siteTallies(wanted: (UInt32) -> Bool) -> [UInt32: SiteTallies] {
        // By type id: wanted, and the peak's sequence number. Flat arrays, and one counter keyed
        // by type and site for all types: each instance costs a probe, not a nested array update.
        var isWanted = Array(repeating: false, count: tally.idCount)
        var peakSequences = Array(repeating: UInt64(0), count: tally.idCount)
        var peaks = Array(repeating: UInt64(0), count: tally.idCount)
        // A type whose instances alive now are those alive at its peak (as many, and none of those
        // died since): its peak's tally is its exit's, counted once (a compact instance's peak
        // order is at least 1, so none passes its `peaks` entry of 0).
        var peakIsNow = Array(repeating: false, count: tally.idCount)
        var tallies: [UInt32: SiteTallies] = [:]
        for (position, typeID) in typeIDs.enumerated() where wanted(typeID) {
            let counts = tally.counts[position]
            isWanted[Int(typeID)] = true
            if counts.liveCount == counts.peak && counts.deathsSincePeak == 0 {
                peakIsNow[Int(typeID)] = true
            } else {
                peakSequences[Int(typeID)] = counts.peakSequence
                peaks[Int(typeID)] = UInt64(counts.peak)
            }
            var tally = SiteTallies()
            typeLedgers[position].diedSincePeak.forEach { word, count in
                tally.atPeak.add(Instance.typeAndSite(word).site, count: count)
            }
            tallies[typeID] = tally
        }
        guard !tallies.isEmpty else { return [:] }
        let atExit = WordCounter()
        let atPeak = WordCounter()
        isWanted.withUnsafeBufferPointer { isWanted in
            peakSequences.withUnsafeBufferPointer { peakSequences in
                tally.full.forEach { _, instance in
                    let typeID = Int(instance.typeID)
                    guard typeID < isWanted.count, isWanted[typeID] else { return }
                    atExit.add(instance.typeAndSite)
                    if !peakIsNow[typeID] && instance.sequence <= peakSequences[typeID] {
                        atPeak.add(instance.typeAndSite)
                    }
                }
            }
            peaks.withUnsafeBufferPointer { peaks in
                tally.compact.forEach { _, word in
                    let compact = CompactInstance(word: word)
                    let typeID = Int(compact.typeID)
                    guard typeID < isWanted.count, isWanted[typeID] else { return }
                    let typeAndSite = compact.instance.typeAndSite
                    atExit.add(typeAndSite)
                    if compact.peakOrder <= peaks[typeID] { atPeak.add(typeAndSite) }
                }
            }
        }
        atExit.forEach { word, count in
            let (typeID, site) = Instance.typeAndSite(word)
            tallies[typeID]?.atExit.add(site, count: count)
            if peakIsNow[Int(typeID)] { tallies[typeID]?.atPeak.add(site, count: count) }
        }
        atPeak.forEach { word, count in
            let (typeID, site) = Instance.typeAndSite(word)
            tallies[typeID]?.atPeak.add(site, count: count)
        }
        return tallies
    }

    /// The type and allocation site of each of `objects` that is an instance alive now.
    func liveInstances(at objects: [UInt64]) -> [(typeID: UInt32, site: Site)] {
        objects.compactMap { object in
            if let instance = tally.full[object] { return (instance.typeID, instance.site) }
            guard let word = tally.compact[object] else { return nil }
            let instance = CompactInstance(word: word).instance
            return (instance.typeID, instance.site)
        }
    }

    /// A stack, and the type of an instance it allocated.
    struct StackAndType: Hashable, Comparable {
        var stackID: UInt32
        var typeID: UInt32

        static func < (left: Self, right: Self) -> Bool {
            (left.stackID, left.typeID) < (right.stackID, right.typeID)
        }
    }

    /// The stacks that allocated the instances alive now whose type `wanted` says yes to, each with
    /// the instance's type, once per pair, by stack.
    func stacksOfLiveInstances(wanted: (UInt32) -> Bool) -> [StackAndType] {
        var pairs: Set<StackAndType> = []
        tally.full.forEach { _, instance in
            if wanted(instance.typeID) { pairs.insert(StackAndType(stackID: instance.site.stackID, typeID: instance.typeID)) }
        }
        tally.compact.forEach { _, word in
            let instance = CompactInstance(word: word).instance
            if wanted(instance.typeID) { pairs.insert(StackAndType(stackID: instance.site.stackID, typeID: instance.typeID)) }
        }
        return pairs.sorted()
    }

    /// The addresses of the instances alive now whose type `wanted` says yes to.
    func liveObjects(wanted: (UInt32) -> Bool) -> [UInt64] {
        var objects: [UInt64] = []
        tally.full.forEach { object, instance in
            if wanted(instance.typeID) { objects.append(object) }
        }
        tally.compact.forEach { object, word in
            if wanted(CompactInstance(word: word).typeID) { objects.append(object) }
        }
        return objects
    }
}
