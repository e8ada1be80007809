import LeakAuditModel
import LeakAuditWire

/// Replays allocation and deallocation events, in stream order, into exact per-type counts.
///
/// For each type it keeps the instances alive now and remembers which were alive at the type's
/// peak without copying the live set at every new peak: an instance alive at the peak is either
/// still alive (allocated at or before the peak's sequence number) or died since, and those that
/// died since the peak are kept aside until the next peak. Memory stays proportional to the
/// instances alive, and each event costs O(1).
struct LifetimeLedger {
    /// One live instance: 16 bytes, since the ledger keeps one per instance alive.
    struct Instance: AddressTableValue {
        var stackID: UInt32
        /// The test running when it was allocated, plus one; 0 for none.
        private var testTag: UInt32
        var sequence: UInt64

        init(stackID: UInt32, sequence: UInt64, test: UInt32? = nil) {
            self.stackID = stackID
            self.sequence = sequence
            // A test id of UInt32.max (only a damaged stream has one) wraps to none.
            testTag = test.map { $0 &+ 1 } ?? 0
        }

        /// The test running when it was allocated.
        var test: UInt32? { testTag == 0 ? nil : testTag - 1 }

        /// Where it was allocated: its stack and its test.
        var site: Site { Site(stackID: stackID, test: test) }

        static var vacant: Instance { Instance(stackID: 0, sequence: 0) }
    }

    struct TypeLedger {
        var name: String
        var max: Int
        var budget: WireBudget = .code
        /// A subclass of XCTestCase: XCTest keeps its instances until the run ends.
        var heldByXCTest = false
        /// False for a placeholder: a type whose instances came before (or without) its
        /// definition, which only a damaged stream has. Reports show no such type.
        var defined = true
        var live = AddressTable<Instance>()
        var peak = 0
        var peakSequence: UInt64 = 0
        var diedSincePeak: [Site] = []
        var allocated = 0

        mutating func allocate(_ object: UInt64, _ instance: Instance) {
            allocated += 1
            live[object] = instance
            if live.count > peak {
                peak = live.count
                peakSequence = instance.sequence
                diedSincePeak.removeAll(keepingCapacity: true)
            }
        }

        /// Returns false when `object` was not alive.
        mutating func deallocate(_ object: UInt64) -> Bool {
            guard let instance = live.removeValue(forKey: object) else { return false }
            if instance.sequence <= peakSequence {
                diedSincePeak.append(instance.site)
            }
            return true
        }
    }

    /// Type ids at or above it are damage: the shim hands out at most 16,384 (LA_MAX_TYPES), from
    /// 0; the limit leaves room for a later shim with a larger table.
    static let typeIDLimit = 1 << 16

    /// Each type id's position in `typeLedgers` (-1 for none). Ids are dense from 0, so an array
    /// indexed by id replaces a hash lookup per event; at 4 bytes an id, a damaged id near the
    /// limit costs 256 KB, not a table of ledgers.
    private var typePositions: [Int32] = []
    /// Every type seen, in the order first seen, and its id.
    private var typeLedgers: [TypeLedger] = []
    private var typeIDs: [UInt32] = []

    /// The position of type `typeID` in `typeLedgers`, if it was seen.
    private func position(of typeID: UInt32) -> Int? {
        let slot = Int(typeID)
        guard slot < typePositions.count, typePositions[slot] >= 0 else { return nil }
        return Int(typePositions[slot])
    }

    /// Adds type `typeID` (below `typeIDLimit`, not seen before) and returns its position.
    private mutating func insert(_ type: TypeLedger, id typeID: UInt32) -> Int {
        let slot = Int(typeID)
        if slot >= typePositions.count { typePositions += Array(repeating: -1, count: slot + 1 - typePositions.count) }
        typePositions[slot] = Int32(typeLedgers.count)
        typeLedgers.append(type)
        typeIDs.append(typeID)
        return typeLedgers.count - 1
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
        position(of: leak.typeID).map { typeLedgers[$0].live[leak.object]?.sequence == leak.sequence } ?? false
    }

    /// One test of this process: the instances allocated during it that are alive now.
    struct TestLedger {
        var name: String
        /// True once the test was seen starting: it ran (a name seen only on allocations may be a
        /// suite's).
        var started = false
        /// Runs of the test under way: started and not finished (a parameterized Swift Testing
        /// test runs its cases in parallel, each a run).
        var running = 0
        /// Finished runs whose grace period has not ended.
        var unsettled = 0
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
    /// The process that wrote these events, as it described itself when it attached.
    private(set) var process: AttachedProcess?

    /// Every type seen, by id. Builds a dictionary on each access: for reports, not per event.
    var types: [UInt32: TypeLedger] {
        Dictionary(uniqueKeysWithValues: zip(typeIDs, typeLedgers).map { ($0, $1) })
    }
    private(set) var stacks: [UInt32: [UInt64]] = [:]
    private(set) var truncatedStacks: Set<UInt32> = []
    private(set) var modules: [ModuleImage] = []
    /// Events naming a type, stack or object never defined (a damaged stream).
    private(set) var inconsistentEvents = 0
    /// The type of every live object, to retire an object whose address a new allocation reuses;
    /// kept only when allocations are watched, the one case where a deallocation can go unseen.
    private var owners = AddressTable<UInt32>()
    private let tracksOwners: Bool

    /// Creates an empty ledger; `watchesAllocations` keeps the owner map that address reuse needs.
    init(watchesAllocations: Bool = true) {
        tracksOwners = watchesAllocations
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
                typeLedgers[position].name = name
                typeLedgers[position].max = max
                typeLedgers[position].budget = budget
                typeLedgers[position].defined = true
            } else {
                _ = insert(TypeLedger(name: name, max: max, budget: budget, heldByXCTest: heldByXCTest), id: id)
            }
        case .stackDefined(let id, let returnAddresses, let truncated):
            stacks[id] = returnAddresses
            if truncated { truncatedStacks.insert(id) }
        case .moduleLoaded(let module):
            modules.append(module)
        case .allocated(let typeID, let object, let stackID, let sequence, let test):
            allocate(typeID: typeID, object: object, instance: Instance(stackID: stackID, sequence: sequence, test: test))
            if let test { tests[test, default: TestLedger(name: "<test \(test)>")].live[object] = typeID }
        case .deallocated(let typeID, let object, _):
            deallocate(typeID: typeID, object: object)
        case .testDefined(let id, let name):
            tests[id, default: TestLedger(name: name)].name = name
        case .testPhase(let id, let phase, _):
            var test = tests[id] ?? TestLedger(name: "<test \(id)>")
            switch phase {
            case UInt32(LA_TEST_STARTED):
                // A test that runs again (another case, a retry) is judged after its last run.
                test.started = true
                test.running += 1
                test.leaked = nil
            case UInt32(LA_TEST_FINISHED):
                test.running = Swift.max(0, test.running - 1)
                test.unsettled += 1
                if test.running == 0 { test.outlived = aliveNow(test) }
            case UInt32(LA_TEST_SETTLED):
                test.unsettled = Swift.max(0, test.unsettled - 1)
            default:
                break
            }
            tests[id] = test
            if phase == UInt32(LA_TEST_SETTLED) && test.running == 0 && test.unsettled == 0 { settle(id) }
        case .processAttached(let attached):
            process = attached
        }
    }

    private mutating func allocate(typeID: UInt32, object: UInt64, instance: Instance) {
        let slot = Int(typeID)
        guard slot < Self.typeIDLimit else {
            inconsistentEvents += 1
            return
        }
        // Allocated before its type was defined (a damaged stream): counted under a placeholder.
        let position =
            position(of: typeID) ?? insert(TypeLedger(name: "<type \(typeID)>", max: Int.max, defined: false), id: typeID)
        // Each record naming a type not defined (yet) is damage, not only the first.
        if !typeLedgers[position].defined { inconsistentEvents += 1 }
        // An address allocated again while its object still counts as alive: that object was
        // freed where no hook saw it. It dies now, or it would hide the new one.
        if tracksOwners, let previous = owners[object] {
            unseenDeallocations[previous, default: 0] += 1
            deallocate(typeID: previous, object: object)
        }
        if tracksOwners { owners[object] = typeID }
        typeLedgers[position].allocate(object, instance)
    }

    private mutating func deallocate(typeID: UInt32, object: UInt64) {
        let position = position(of: typeID)
        if !tests.isEmpty, let position, let test = typeLedgers[position].live[object]?.test {
            tests[test]?.live[object] = nil
        }
        if tracksOwners, owners[object] == typeID { owners[object] = nil }
        if position.map({ typeLedgers[$0].deallocate(object) }) != true {
            inconsistentEvents += 1
        }
    }

    /// The allocation sites (stack and test) of the instances alive at `type`'s peak, one per instance.
    static func sitesAliveAtPeak(of type: TypeLedger) -> [Site] {
        var sites: [Site] = []
        sites.reserveCapacity(type.live.count + type.diedSincePeak.count)
        type.live.forEach { _, instance in
            if instance.sequence <= type.peakSequence { sites.append(instance.site) }
        }
        sites.append(contentsOf: type.diedSincePeak)
        return sites
    }

    /// The instances `test` allocated that are alive now.
    private func aliveNow(_ test: TestLedger) -> [Leak] {
        test.live.entries.compactMap { object, typeID in
            guard let position = position(of: typeID), let instance = typeLedgers[position].live[object] else { return nil }
            return Leak(typeID: typeID, site: instance.site, object: object, sequence: instance.sequence)
        }
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

    /// What each test leaked: its instances alive when it settled, or at the end of the run for a
    /// test that never settled (Swift Testing reports no phases; the process may end within a
    /// grace period).
    func leaksByTest() -> [(name: String, started: Bool, leaks: [Leak])] {
        tests.sorted { $0.key < $1.key }.map { _, test in (test.name, test.started, test.leaked ?? aliveNow(test)) }
    }
}
