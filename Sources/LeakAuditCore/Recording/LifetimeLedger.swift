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
struct LifetimeLedger {
    /// One live instance, whole: 16 bytes, as the full table keeps those allocated during a test
    /// (and the rare ones `CompactInstance` cannot hold), with their slot's sequence number. Its
    /// type, stack and test share one word: a type id is below `typeIDLimit` (2^16), and the shim
    /// hands out fewer than 2^18 stack ids and numbers tests from 0, so 24 bits each hold every
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
        /// Stack ids below it fit (the shim's stack table holds at most 2^18).
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
        fileprivate(set) var entries: [(object: UInt64, instance: Instance)] = []

        var count: Int { entries.count }
        var isEmpty: Bool { entries.isEmpty }
        /// The instances' addresses.
        var keys: [UInt64] { entries.map(\.object) }
        /// The instances.
        var values: [Instance] { entries.map(\.instance) }
        /// The instance at `object`, if alive (a linear search: for tests and single look-ups).
        subscript(object: UInt64) -> Instance? { entries.first { $0.object == object }?.instance }
    }

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

    /// Type ids at or above it are damage: the shim hands out at most 16,384 (LA_MAX_TYPES), from
    /// 0; the limit leaves room for a later shim with a larger table.
    static let typeIDLimit = 1 << 16

    /// Every type seen, in the order first seen, and its id.
    private var typeLedgers: [TypeLedger] = []
    private var typeIDs: [UInt32] = []
    /// What every record changes: each type's position and counts (those of `typeLedgers[i]` at
    /// position i), and the instances alive now. At 4 bytes a type id, a damaged id near the limit
    /// costs 256 KB, not a table of ledgers.
    private var tally = LiveTally()

    /// The position of type `typeID` in `typeLedgers`, if it was seen.
    private func position(of typeID: UInt32) -> Int? {
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

    /// Where an instance was allocated.
    struct Site: Hashable {
        var stackID: UInt32
        var test: UInt32?
    }

    /// An instance a test left alive.
    struct Leak: Hashable {
        var typeID: UInt32
        var site: Site
        /// The instance: its address and its allocation's sequence number, which together tell it
        /// from a later instance at the same address.
        var object: UInt64 = 0
        var sequence: UInt64 = 0
    }

    /// True when the instance a test left alive is still alive now (at the end of the run, when
    /// reports are built).
    func isAlive(_ leak: Leak) -> Bool {
        tally.full[leak.object].map { $0.typeID == leak.typeID && $0.sequence == leak.sequence } ?? false
    }

    /// One test of this process: the instances allocated during it that are alive now.
    struct TestLedger {
        var name: String
        /// True once the test was seen starting: it ran (a name seen only on allocations may be a
        /// suite's).
        var started = false
        /// True once it was reported skipped: Swift Testing skipped it without running it, or an
        /// XCTest test threw XCTSkip.
        var skipped = false
        /// Runs of the test under way: started and not finished (a parameterized Swift Testing
        /// test runs its cases in parallel, each a run).
        var running = 0
        /// Finished runs whose grace period has not ended.
        var unsettled = 0
        /// When its first run started and its last run finished, in milliseconds since the channel
        /// was created.
        var startedAt: UInt64? = nil
        var finishedAt: UInt64? = nil
        /// Its instances alive now, and their types.
        var live = AddressTable<UInt32>()
        /// Frozen when the test settled.
        var leaked: [Leak]? = nil
        /// Its instances alive when it finished (its last run), before any grace period: what it
        /// left to others, whether or not they released it in time.
        var outlived: [Leak] = []
    }

    /// Tests by id.
    private(set) var tests: [UInt32: TestLedger] = [:]
    /// Deaths of instances allocated during a test, in the order of their records: an instance's
    /// death is recorded before what it held is released, so what it held dies right after it.
    private var testInstanceDeaths: UInt64 = 0
    /// The deaths of instances that a test left alive when it settled, later in the run, by their
    /// allocation's sequence number: what global state held dies right after it
    /// (ReportBuilder.globalState).
    private var settledLeakDeaths: [UInt64: LateDeath] = [:]
    /// The process that wrote these events, as it described itself when it attached.
    private(set) var process: AttachedProcess?

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

    /// The death of an instance its test left alive when it settled, later in the run.
    struct LateDeath {
        /// Where it came among the deaths of tests' instances (1 for the first).
        var order: UInt64
        /// Its record's time, in milliseconds since the channel was created.
        var milliseconds: UInt64
    }

    /// The death of `leak`, which its test left alive when it settled, or nil while it lives. An
    /// allocation's sequence number is its own.
    func lateDeath(of leak: Leak) -> LateDeath? {
        settledLeakDeaths[leak.sequence]
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

    /// The instances `test` allocated that are alive now.
    private func aliveNow(_ test: TestLedger) -> [Leak] {
        test.live.entries.compactMap { object, typeID in
            // Allocated during the test, so kept whole.
            guard let instance = tally.full[object], instance.typeID == typeID else { return nil }
            return Leak(typeID: typeID, site: instance.site, object: object, sequence: instance.sequence)
        }
    }

    /// What each test leaves alive now: what it left when it settled, or, for a test that has not
    /// settled, everything it allocated that is still alive (the report judges it so at the end).
    func leftAliveByTests() -> [Leak] {
        tests.values.flatMap { test in test.leaked ?? aliveNow(test) }
    }

    /// What each test left alive when it finished, before its grace period.
    func outlivedByTest() -> [(name: String, outlived: [Leak])] {
        tests.sorted { $0.key < $1.key }.map { ($0.value.name, $0.value.outlived) }
    }

    /// Freezes what test `id` leaked: its instances still alive now, when its grace period ended.
    private mutating func settle(_ id: UInt32) {
        guard var test = tests[id] else { return }
        test.leaked = aliveNow(test)
        tests[id] = test
    }

    /// The tests that started a run and did not finish it, by name: when the process has ended,
    /// it ended in the middle of them (it crashed, was killed or exited).
    var interruptedTests: [String] {
        tests.sorted { $0.key < $1.key }.compactMap { $0.value.running > 0 ? $0.value.name : nil }
    }

    /// The tests reported skipped, by name.
    var skippedTests: [String] {
        tests.values.compactMap { $0.skipped ? $0.name : nil }.sorted()
    }

    /// What each test leaked: its instances alive when it settled, or at the end of the run for a
    /// test that never settled (Swift Testing reports no phases; the process may end within a
    /// grace period). `settled` says which: in a process that ended in the middle of its tests,
    /// only settled tests can be judged.
    func leaksByTest() -> [(
        name: String, started: Bool, settled: Bool, leaks: [Leak], startedAt: UInt64?, finishedAt: UInt64?
    )] {
        tests.sorted { $0.key < $1.key }.map { _, test in
            (test.name, test.started, test.leaked != nil, test.leaked ?? aliveNow(test), test.startedAt, test.finishedAt)
        }
    }
}

/// How many instances each allocation site (stack and test) has. A site without a test (every
/// site outside a test run) is counted in an array indexed by its stack id, which the shim hands
/// out densely from 0: a report over a million instances hashed a million sites.
struct SiteTally {
    private var byStack: [Int] = []
    private var others: [LifetimeLedger.Site: Int] = [:]

    /// Stack ids below it are counted in the array: the shim's stack table holds 2^18 stacks, and
    /// a damaged id beyond costs a hash, not a large array.
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

/// Counts of 64-bit words (an instance's type and site), by open addressing with linear probing:
/// a report counts a million instances into as many entries as there are distinct sites, and a
/// type counts the sites of its instances that died since its peak. A class over memory of its own,
/// reached through a `let` pointer, so that counting checks no array's uniqueness and no
/// exclusivity; it allocates nothing until its first word.
final class WordCounter {
    private struct State {
        var words: UnsafeMutablePointer<UInt64>? = nil
        var counts: UnsafeMutablePointer<Int>? = nil
        var capacity = 0
        /// The word 0 is counted aside: it marks empty slots.
        var zeroCount = 0
        var stored = 0
    }

    private let state: UnsafeMutablePointer<State>

    init() {
        state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: State())
    }

    deinit {
        state.pointee.words?.deallocate()
        state.pointee.counts?.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// A copy that shares no memory with this counter.
    func copy() -> WordCounter {
        let copy = WordCounter()
        copy.state.pointee = state.pointee
        let capacity = state.pointee.capacity
        if let words = state.pointee.words, let counts = state.pointee.counts {
            copy.state.pointee.words = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
            copy.state.pointee.words?.initialize(from: words, count: capacity)
            copy.state.pointee.counts = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
            copy.state.pointee.counts?.initialize(from: counts, count: capacity)
        }
        return copy
    }

    /// Forgets every count, keeping the memory.
    func removeAll() {
        if let words = state.pointee.words { words.update(repeating: 0, count: state.pointee.capacity) }
        state.pointee.zeroCount = 0
        state.pointee.stored = 0
    }

    @inline(__always)
    private static func home(of word: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: (word &* 0x9E37_79B9_7F4A_7C15) >> 40) & mask
    }

    /// Counts `word` once more.
    @inline(__always)
    func add(_ word: UInt64) {
        if word == 0 {
            state.pointee.zeroCount &+= 1
            return
        }
        if (state.pointee.stored &+ 1) &* 2 > state.pointee.capacity { grow() }
        guard let words = state.pointee.words, let counts = state.pointee.counts else { return }  // grow allocates
        let mask = state.pointee.capacity &- 1
        var index = Self.home(of: word, mask: mask)
        while true {
            let seen = words[index]
            if seen == word {
                counts[index] &+= 1
                return
            }
            if seen == 0 {
                words[index] = word
                counts[index] = 1
                state.pointee.stored &+= 1
                return
            }
            index = (index &+ 1) & mask
        }
    }

    @inline(never)
    private func grow() {
        let old = state.pointee
        let capacity = Swift.max(16, old.capacity * 2)
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        words.initialize(repeating: 0, count: capacity)
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
        counts.initialize(repeating: 0, count: capacity)
        let mask = capacity - 1
        if let oldWords = old.words, let oldCounts = old.counts {
            for slot in 0..<old.capacity where oldWords[slot] != 0 {
                var index = Self.home(of: oldWords[slot], mask: mask)
                while words[index] != 0 { index = (index + 1) & mask }
                words[index] = oldWords[slot]
                counts[index] = oldCounts[slot]
            }
            oldWords.deallocate()
            oldCounts.deallocate()
        }
        state.pointee.words = words
        state.pointee.counts = counts
        state.pointee.capacity = capacity
    }

    /// Calls `body` with every word counted and its count.
    func forEach(_ body: (UInt64, Int) -> Void) {
        if state.pointee.zeroCount > 0 { body(0, state.pointee.zeroCount) }
        guard let words = state.pointee.words, let counts = state.pointee.counts else { return }
        for slot in 0..<state.pointee.capacity where words[slot] != 0 { body(words[slot], counts[slot]) }
    }
}
