import LeakAuditModel
import LeakAuditWire

/// Replays allocation and deallocation events, in stream order, into exact per-type counts.
///
/// For each type it keeps the instances alive now and remembers which were alive at the type's
/// peak without copying the live set at every new peak: an instance alive at the peak is either
/// still alive (its peak order, or its sequence number, says whether it was: `CompactInstance`)
/// or died since, and the sites of those that died since the peak are counted aside until the
/// next peak. Memory stays proportional to the instances alive (about 29 bytes each), and each
/// event costs O(1).
///
/// This file holds its state and the replay of records; beside it, how it keeps an instance
/// (LedgerInstance.swift), a type (TypeLedger.swift) and a test (TestLedger.swift), and what is
/// asked of it afterwards (LedgerQueries.swift).
struct LifetimeLedger {
    /// Type ids at or above it are damage: the shim hands out at most 16,384 (LA_MAX_TYPES), from
    /// 0; the limit leaves room for a later shim with a larger table.
    static let typeIDLimit = 1 << 16

    /// Every type seen, in the order first seen, and its id.
    private(set) var typeLedgers: [TypeLedger] = []
    private(set) var typeIDs: [UInt32] = []
    /// What every record changes: each type's position and counts (those of `typeLedgers[i]` at
    /// position i), and the instances alive now. At 4 bytes a type id, a damaged id near the limit
    /// costs 256 KB, not a table of ledgers.
    private(set) var tally = LiveTally()

    /// The position of type `typeID` in `typeLedgers`, if it was seen.
    func position(of typeID: UInt32) -> Int? {
        let position = tally.position(of: typeID)
        return position >= 0 ? position : nil
    }

    /// About the instances alive in the compact table, which most records probe: when it is
    /// large, the decoder asks for its slots ahead of time (`prefetch(object:)`).
    var estimatedCompactInstances: Int { tally.compact.estimatedCount }

    /// Starts bringing in the compact table's slot for `object`, whose record comes soon.
    @inline(__always)
    func prefetch(object: UInt64) { tally.compact.prefetch(forKey: object) }

    /// Makes the tally this ledger's own, before a record changes it: a copy of the ledger shares
    /// it until one side changes.
    @inline(__always)
    mutating func makeTallyUnique() {
        if !isKnownUniquelyReferenced(&tally) { tally = tally.copy() }
    }

    /// Adds type `typeID` (below `typeIDLimit`, not seen before) and returns its position.
    private mutating func insert(_ type: TypeLedger, id typeID: UInt32) -> Int {
        makeTallyUnique()
        typeLedgers.append(type)
        typeIDs.append(typeID)
        return tally.append(type.counts, id: typeID)
    }

    /// Tests by id.
    private(set) var tests: [UInt32: TestLedger] = [:]
    /// Deaths of instances allocated during a test, in the order of their records: an instance's
    /// death is recorded before what it held is released, so what it held dies right after it.
    private var testInstanceDeaths: UInt64 = 0
    /// The deaths of instances that a test left alive when it settled, later in the run, by their
    /// allocation's sequence number: what global state held dies right after it
    /// (ReportBuilder.globalState).
    private(set) var settledLeakDeaths: [UInt64: LateDeath] = [:]
    /// How many deaths of tests' instances came before the latest record of a test finishing:
    /// when the process has ended, those before its last test finished. A death after it is the
    /// process's end (XCTest releases its test case objects then), not the run's work.
    private(set) var testInstanceDeathsWhenATestLastFinished: UInt64 = 0
    /// The process that wrote these events, as it described itself when it attached.
    private(set) var process: AttachedProcess?

    private(set) var stacks: [UInt32: [UInt64]] = [:]
    private(set) var truncatedStacks: Set<UInt32> = []
    private(set) var modules: [ModuleImage] = []
    /// Events naming a type, stack or object never defined (a damaged stream).
    private(set) var inconsistentEvents = 0

    /// Whether a type whose budget is declared in code (`LA_BUDGET_CODE`) was defined: only a
    /// process linking LeakMonitor registers one.
    var definesTypesInCode: Bool {
        typeLedgers.indices.contains { typeLedgers[$0].budget == .code && tally.counts[$0].defined }
    }

    /// Whether an instance of this process was seen to die (what a statically linked runtime
    /// cannot show), and whether it allocated at all.
    var sawAllocations: (any: Bool, deaths: Bool) {
        var any = false
        for position in typeLedgers.indices {
            let counts = tally.counts[position]
            if counts.allocated > counts.liveCount { return (true, true) }
            if counts.allocated > 0 { any = true }
        }
        return (any, false)
    }
    /// True when allocations are watched, the one case where a deallocation can go unseen
    /// (elsewhere an address allocated twice is damage).
    private let watchesAllocations: Bool

    /// Creates an empty ledger; `watchesAllocations` says that deallocations may go unseen.
    init(watchesAllocations: Bool = true) {
        self.watchesAllocations = watchesAllocations
    }
    /// Objects whose deallocation was never seen, found when their address was allocated again, by
    /// type id.
    private(set) var unseenDeallocations: [UInt32: Int] = [:]

    mutating func apply(_ event: WireEvent) {
        switch event {
        case .typeDefined(let id, let rawName, let max, let budget, let heldByXCTest):
            let name = SwiftName.stableTypeName(rawName)
            let slot = Int(id)
            // Ids are dense from 0 and a writer has at most LA_MAX_TYPES: a larger one is damage,
            // and must not size the table.
            guard slot < Self.typeIDLimit else {
                inconsistentEvents += 1
                return
            }
            if let position = position(of: id) {
                // A type is defined once, and redefined only when code claims a type the allocation
                // hook registered (docs/record-format.md, "Re-definition of a claimed type"); a
                // placeholder (records before the definition) takes its definition. Any other
                // second definition (another budget, another name, a second claim) is damage,
                // and the first one stands.
                let placeholder = !tally.counts[position].defined
                let claim = typeLedgers[position].budget != .code && budget == .code
                guard placeholder || claim else {
                    inconsistentEvents += 1
                    return
                }
                typeLedgers[position].name = name
                typeLedgers[position].max = max
                typeLedgers[position].budget = budget
                makeTallyUnique()
                tally.define(id)
            } else {
                _ = insert(TypeLedger(name: name, max: max, budget: budget, heldByXCTest: heldByXCTest), id: id)
            }
        case .stackDefined(let id, let returnAddresses, let truncated):
            stacks[id] = returnAddresses
            if truncated { truncatedStacks.insert(id) }
        case .moduleLoaded(let module):
            modules.append(module)
        case .allocated(let typeID, let object, let stackID, let sequence, let test, let time):
            allocated(typeID: typeID, object: object, stackID: stackID, sequence: sequence, test: test, time: time)
        case .deallocated(let typeID, let object, _, let time):
            deallocate(typeID: typeID, object: object, time: time)
        case .testDefined(let id, let name):
            tests[id, default: TestLedger(name: name)].name = name
        case .testPhase(let id, let phase, _, let time):
            var test = tests[id] ?? TestLedger(name: "<test \(id)>")
            switch phase {
            case UInt32(LA_TEST_STARTED):
                // A test that runs again (another case, a retry) is judged after its last run.
                test.started = true
                if test.startedAt == nil { test.startedAt = time }
                test.running += 1
                test.leaked = nil
            case UInt32(LA_TEST_FINISHED):
                test.running = Swift.max(0, test.running - 1)
                test.unsettled += 1
                test.finishedAt = time
                testInstanceDeathsWhenATestLastFinished = testInstanceDeaths
                if test.running == 0 { test.outlived = aliveNow(test) }
            case UInt32(LA_TEST_SETTLED):
                test.unsettled = Swift.max(0, test.unsettled - 1)
            case UInt32(LA_TEST_SKIPPED):
                test.skipped = true
            default:
                break
            }
            tests[id] = test
            if phase == UInt32(LA_TEST_SETTLED) && test.running == 0 && test.unsettled == 0 { settle(id) }
        case .processAttached(let attached):
            process = attached
        }
    }

    /// An allocation record (`apply(.allocated(…))`, without the event).
    ///
    /// Nearly every record is an allocation of a defined type outside a test, with ids that fit a
    /// word: it takes the short way, one probe of the compact table and its type's counts. Every
    /// instance alive now is in one of the two tables, by address. An address is one object's at a
    /// time, so an allocation at an address still in a table retires the object there, whose
    /// deallocation went unseen.
    @inline(__always)
    mutating func allocated(typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: UInt64) {
        makeTallyUnique()
        allocatedUnshared(
            typeID: typeID, object: object, stackID: stackID, sequence: sequence, test: test, time: RecordTime(exactly: time))
    }

    /// `allocated` for a ledger whose tally no copy shares (`makeTallyUnique()` since the last
    /// copy): the decoder's sink makes sure of it once for many records (ProcessLedgers).
    ///
    /// The short way checks everything before it changes anything, and anything rare goes the
    /// general way (`allocatedAside`): an address that a table holds already, a type with four
    /// billion instances alive, a time past its type's bucket under way, a new peak with deaths to
    /// forget. It calls nothing but, last, the table's move of an older address out of the
    /// nursery: what it worked out before a call would otherwise be kept in memory across it, at
    /// every record.
    @inline(__always)
    mutating func allocatedUnshared(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: RecordTime
    ) {
        let position = tally.compactPosition(of: typeID)
        guard test == nil, position >= 0, object != 0, CompactInstance.fits(stackID: stackID) else {
            allocatedSlowly(
                typeID: typeID, object: object, stackID: stackID, sequence: sequence, test: test, time: time.milliseconds)
            return
        }
        let counts = tally.counts + position
        let peakOrder = counts.pointee.nextPeakOrder
        guard peakOrder <= UInt64(UInt32.max), counts.pointee.countsAllocationAlone(at: time),
            tally.full.isEmpty || !tally.full.contains(object), let vacancy = tally.compact.vacancy(forKey: object)
        else {
            allocatedAside(typeID: typeID, object: object, stackID: stackID, sequence: sequence, time: time)
            return
        }
        counts.pointee.allocatedAlone(sequence: sequence, time: time)
        tally.compact.insert(
            CompactInstance(typeID: typeID, stackID: stackID, peakOrder: peakOrder).word, forKey: object, at: vacancy)
    }

    /// An allocation of a type and ids that fit a word, outside a test, that the short way of
    /// `allocatedUnshared` did not take: its address is in a table already (the object there was
    /// freed unseen, and dies now), its type has four billion instances alive (it is kept whole),
    /// or its count needs the type's arrays (a new bucket, a new peak that forgets deaths).
    @inline(never)
    private mutating func allocatedAside(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, time: RecordTime
    ) {
        let position = tally.position(of: typeID)
        if !tally.full.isEmpty, let previous = tally.full.removeValueUnshared(forKey: object) {
            replaced(previous, at: object, time: time.milliseconds)
        }
        let slot = tally.compact.insertionSlot(forKey: object)
        if slot.existed { replaced(CompactInstance(word: slot.value.pointee), at: object, time: time.milliseconds) }
        let counts = tally.counts + position
        let peakOrder = counts.pointee.nextPeakOrder
        let (newPeak, newBucket) = counts.pointee.allocated(sequence: sequence, time: time)
        if (newPeak && counts.pointee.deathsSincePeak > 0) || newBucket {
            countedSlowly(at: position, newPeak: newPeak, newBucket: newBucket, time: time.milliseconds)
        }
        guard peakOrder <= UInt64(UInt32.max) else {
            // Four billion of one type alive at once: kept whole instead.
            tally.compact.removeValue(forKey: object)
            tally.full.updateValueUnshared(Instance(stackID: stackID, sequence: sequence, typeID: typeID), forKey: object)
            return
        }
        slot.value.pointee = CompactInstance(typeID: typeID, stackID: stackID, peakOrder: peakOrder).word
    }

    /// An allocation the short way does not take: in a test, of a type not (yet) defined, at
    /// address 0, or with ids that do not fit a word (or that no writer hands out: damage). Kept
    /// whole, in the full table.
    @inline(never)
    private mutating func allocatedSlowly(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: UInt64
    ) {
        // Ids no writer hands out are stored as none, and are damage.
        if (stackID >= Instance.idLimit && stackID != LA_STACK_NONE) || (test ?? 0) >= Instance.idLimit {
            inconsistentEvents += 1
        }
        guard allocate(typeID: typeID, object: object, stackID: stackID, sequence: sequence, test: test, time: time)
        else { return }
        // Filed under the test the instance keeps (none for an id it cannot hold), so that its
        // deallocation finds it there.
        if let test, test < Instance.idLimit {
            tests[test, default: TestLedger(name: "<test \(test)>")].live[object] = typeID
        }
    }

    /// Counts an allocation into the full table; false when its type id is damage (nothing was
    /// counted).
    private mutating func allocate(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: UInt64
    ) -> Bool {
        let slot = Int(typeID)
        guard slot < Self.typeIDLimit else {
            inconsistentEvents += 1
            return false
        }
        // Allocated before its type was defined (a damaged stream): counted under a placeholder.
        let position =
            position(of: typeID)
            ?? insert(TypeLedger(name: "<type \(typeID)>", max: Int.max, counts: TypeCounts(defined: false)), id: typeID)
        // Each record naming a type not defined (yet) is damage, not only the first.
        if !tally.counts[position].defined { inconsistentEvents += 1 }
        if let previous = tally.compact.removeValue(forKey: object) {
            replaced(CompactInstance(word: previous), at: object, time: time)
        }
        let instance = Instance(stackID: stackID, sequence: sequence, test: test, typeID: typeID)
        if let previous = tally.full.updateValueUnshared(instance, forKey: object) {
            replaced(previous, at: object, time: time)
        }
        let (newPeak, newBucket) = tally.counts[position].allocated(sequence: sequence, time: RecordTime(exactly: time))
        if newPeak || newBucket { countedSlowly(at: position, newPeak: newPeak, newBucket: newBucket, time: time) }
        return true
    }

    /// An address allocated again while its object, `previous`, still counts as alive: that object
    /// was freed where no hook saw it. It dies now, or it would hide the new one.
    @inline(never)
    private mutating func replaced(_ previous: Instance, at object: UInt64, time: UInt64) {
        if watchesAllocations { unseenDeallocations[previous.typeID, default: 0] += 1 }
        retire(previous, at: object, time: RecordTime(exactly: time))
    }

    /// `replaced` for an instance of the compact table.
    @inline(never)
    private mutating func replaced(_ previous: CompactInstance, at object: UInt64, time: UInt64) {
        if watchesAllocations { unseenDeallocations[previous.typeID, default: 0] += 1 }
        retire(previous, time: RecordTime(exactly: time))
    }

    /// A deallocation record (`apply(.deallocated(…))`, without the event).
    @inline(__always)
    mutating func deallocate(typeID: UInt32, object: UInt64, time: UInt64) {
        makeTallyUnique()
        deallocateUnshared(typeID: typeID, object: object, time: RecordTime(exactly: time))
    }

    /// `deallocate` for a ledger whose tally no copy shares (`allocatedUnshared`).
    ///
    /// The short way takes an instance out of the compact table, its type's counts found first:
    /// once the table has changed, the compiler could not tell that they had not. Anything else
    /// goes the general way: a type kept whole (`deallocatedAside`), an object the compact table
    /// does not hold, such as one allocated during a test (`deallocatedWhole`).
    @inline(__always)
    mutating func deallocateUnshared(typeID: UInt32, object: UInt64, time: RecordTime) {
        // A type with instances in the compact table has a compact position: its allocations put
        // them there.
        let position = tally.compactPosition(of: typeID)
        guard position >= 0 else {
            deallocatedAside(typeID: typeID, object: object, time: time)
            return
        }
        let counts = tally.counts + position
        guard let word = tally.compact.removeValue(forKey: object) else {
            deallocatedWhole(typeID: typeID, object: object, time: time)
            return
        }
        guard let instance = taken(word, at: object, typeID: typeID) else { return }
        retire(instance, position: position, counts: counts, time: time)
    }

    /// The compact instance `word`, just taken out of the table at `object` for a deallocation of
    /// `typeID`; nil when it is of another type: freed as another type than it was allocated as,
    /// which is damage, and the instance is put back.
    @inline(__always)
    private mutating func taken(_ word: UInt64, at object: UInt64, typeID: UInt32) -> CompactInstance? {
        let instance = CompactInstance(word: word)
        guard instance.typeID == typeID else {
            tally.compact.updateValue(word, forKey: object)
            inconsistentEvents += 1
            return nil
        }
        return instance
    }

    /// A deallocation of a type that the short way of `deallocateUnshared` cannot take (not defined,
    /// or an id too large for a word): kept whole, unless the compact table holds another type's
    /// instance at its address (damage).
    @inline(never)
    private mutating func deallocatedAside(typeID: UInt32, object: UInt64, time: RecordTime) {
        if let word = tally.compact.removeValue(forKey: object) {
            if let instance = taken(word, at: object, typeID: typeID) { retire(instance, time: time) }
            return
        }
        deallocatedWhole(typeID: typeID, object: object, time: time)
    }

    /// A deallocation of an object the compact table does not hold: it is in the full table, or
    /// nowhere (damage).
    @inline(never)
    private mutating func deallocatedWhole(typeID: UInt32, object: UInt64, time: RecordTime) {
        guard !tally.full.isEmpty, let instance = tally.full.removeValueUnshared(forKey: object) else {
            inconsistentEvents += 1
            return
        }
        guard instance.typeID == typeID else {
            tally.full.updateValueUnshared(instance, forKey: object)
            inconsistentEvents += 1
            return
        }
        retire(instance, at: object, time: time)
    }

    /// What a count at `position` leaves to its type's arrays: a new peak forgets the instances
    /// that died since the last one, and a time past the bucket under way starts a bucket.
    @inline(never)
    private mutating func countedSlowly(at position: Int, newPeak: Bool, newBucket: Bool, time: UInt64) {
        if newPeak && tally.counts[position].deathsSincePeak > 0 {
            tally.counts[position].deathsSincePeak = 0
            if !isKnownUniquelyReferenced(&typeLedgers[position].diedSincePeak) {
                typeLedgers[position].diedSincePeak = WordCounter()
            } else {
                typeLedgers[position].diedSincePeak.removeAll()
            }
        }
        if newBucket {
            typeLedgers[position].timeline.head = tally.counts[position].buckets
            typeLedgers[position].timeline.startBucket(tally.counts[position].liveCount, at: time)
            tally.counts[position].buckets = typeLedgers[position].timeline.head
        }
    }

    /// What a death at `position` leaves to its type's arrays (`retire`): an instance alive at the
    /// peak is counted by its site.
    @inline(never)
    private mutating func diedSlowly(site: Site, position: Int, aliveAtPeak: Bool, newBucket: Bool, time: UInt64) {
        if aliveAtPeak {
            tally.counts[position].deathsSincePeak += 1
            if !isKnownUniquelyReferenced(&typeLedgers[position].diedSincePeak) {
                typeLedgers[position].diedSincePeak = typeLedgers[position].diedSincePeak.copy()
            }
            typeLedgers[position].diedSincePeak.add(Instance(stackID: site.stackID, sequence: 0, test: site.test).typeAndSite)
        }
        if newBucket { countedSlowly(at: position, newPeak: false, newBucket: true, time: time) }
    }

    /// Counts `instance`, just taken out of the full table, as dead at `time`.
    @inline(__always)
    private mutating func retire(_ instance: Instance, at object: UInt64, time: RecordTime) {
        let position = tally.position(of: instance.typeID)
        if position >= 0 {
            let counts = tally.counts + position
            let aliveAtPeak = counts.pointee.aliveAtPeak(sequence: instance.sequence)
            let newBucket = counts.pointee.died(time: time)
            if aliveAtPeak || newBucket {
                diedSlowly(
                    site: instance.site, position: position, aliveAtPeak: aliveAtPeak, newBucket: newBucket,
                    time: time.milliseconds)
            }
        }
        if instance.hasTest && !tests.isEmpty { forgetInTest(instance, at: object, time: time) }
    }

    /// Counts `instance`, just taken out of the compact table, as dead at `time`.
    @inline(__always)
    private mutating func retire(_ instance: CompactInstance, time: RecordTime) {
        let position = tally.position(of: instance.typeID)
        guard position >= 0 else { return }
        retire(instance, position: position, counts: tally.counts + position, time: time)
    }

    /// `retire(_:time:)` with its type's position and counts, found already.
    @inline(__always)
    private mutating func retire(
        _ instance: CompactInstance, position: Int, counts: UnsafeMutablePointer<TypeCounts>, time: RecordTime
    ) {
        let aliveAtPeak = counts.pointee.aliveAtPeak(peakOrder: instance.peakOrder)
        let newBucket = counts.pointee.died(time: time)
        if aliveAtPeak || newBucket {
            diedSlowly(
                site: Site(stackID: instance.stackID, test: nil), position: position, aliveAtPeak: aliveAtPeak,
                newBucket: newBucket, time: time.milliseconds)
        }
    }

    /// Takes a dead instance out of its test's live table, counts the death among those of tests'
    /// instances, and notes which that was, and when, for an instance its test left alive when it
    /// settled.
    @inline(never)
    private mutating func forgetInTest(_ instance: Instance, at object: UInt64, time: RecordTime) {
        guard let test = instance.test, let index = tests.index(forKey: test) else { return }
        testInstanceDeaths += 1
        tests.values[index].live[object] = nil
        if tests.values[index].leaked != nil {
            settledLeakDeaths[instance.sequence] = LateDeath(order: testInstanceDeaths, milliseconds: time.milliseconds)
        }
    }

    /// Freezes what test `id` leaked: its instances still alive now, when its grace period ended.
    private mutating func settle(_ id: UInt32) {
        guard var test = tests[id] else { return }
        test.leaked = aliveNow(test)
        tests[id] = test
    }
}
