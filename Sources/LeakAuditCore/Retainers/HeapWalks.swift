#if canImport(Glibc)
    import Glibc
#endif

/// The heap walks of a run (`--retainers`, `--unreachable`). A process that exits waits until
/// leak-audit has copied it (the platform's `copyProcess`), unless the walks after its tests found
/// every path the report reads of it, and so does a test process each time
/// one of its tests settles (its grace period over), copied then only if the test left instances
/// alive, and no sooner after its last walk than that walk lasted: one copy serves every test
/// settled since. Each copy is searched at once for who holds the instances the report will show
/// and, at exit when the process asks, for what nothing reaches, then dropped.
struct HeapWalks {
    /// What the walk of one process at its exit found.
    enum Outcome {
        /// The path found for each instance, by address.
        case searched([UInt64: RetainerSearch.Path])
        /// Why the process could not be walked, for the report.
        case failed(String)
    }

    /// An instance a test left: its address and allocation sequence, which together tell it from
    /// a later instance at the same address.
    struct Instance: Hashable {
        var object: UInt64
        var sequence: UInt64
    }

    /// The walk of each process at its exit, by process index.
    private(set) var atExit: [UInt8: Outcome] = [:]
    /// What each process that asked for its unreachable objects at exit had, by process index.
    private(set) var unreachable: [UInt8: UnreachableStructures] = [:]
    /// Why a process that asked for its unreachable objects could not be checked, by process index.
    private(set) var unreachableUnavailable: [UInt8: String] = [:]
    /// Paths of the instances tests left, found when each test settled, by process index.
    private(set) var afterTests: [UInt8: [Instance: RetainerSearch.Path]] = [:]
    /// Why an instance a test left has no path from when its test settled, by process index: its
    /// process could not be copied, or it was not among the copy's live objects.
    private(set) var afterTestsUnavailable: [UInt8: [Instance: String]] = [:]
    /// The instances tests left that the walk when their test settled did not find among the
    /// copy's live objects, by process index: released by the time the copy was taken.
    private(set) var deadWhenTestsSettled: [UInt8: Set<Instance>] = [:]
    /// Tests whose leaks were looked for, by process index.
    private var walkedTests: [UInt8: Set<UInt32>] = [:]
    /// When each process's next walk after its tests may start (`now`'s clock): a walk's own
    /// length after it ended, so that walks after tests take at most half of leak-audit's time
    /// however fast tests settle, each taking every test settled meanwhile.
    private var nextWalkAfterTests: [UInt8: UInt64] = [:]
    /// The request of each process held until its next walk may start, by process index: asked
    /// again at every pass of the reader (about a thousand a second) while it waits, it is held
    /// again without reading its tests' leftovers anew. The process that waits settles no test
    /// meanwhile (its settling thread is the one waiting), so holding it only spaces the walks
    /// while tests run; once no process has written a record for `idleNanoseconds` (its tests
    /// are over, it waits at its end for this walk), it is walked at once.
    private var heldRequests: [UInt8: HeldRequest] = [:]

    /// A request held, and since when (`now`'s clock) the ring's writers have reserved
    /// `reservedSlots`.
    private struct HeldRequest {
        var number: UInt32
        var reservedSlots: UInt64
        var since: UInt64
    }

    /// How long no process may have written a record before a held request is walked.
    static let idleNanoseconds: UInt64 = 10_000_000

    /// How a copy is searched: `RetainerSearch.walk` (the instances, the process's modules,
    /// whether to find retained sizes, and for the unreachable objects the addresses the ledger
    /// watched); `unavailable` says why nothing it found is known.
    typealias Search = (ProcessSnapshot, [UInt64], [ModuleImage], Bool, Set<UInt64>?) -> (
        paths: [UInt64: RetainerSearch.Path], unreachable: UnreachableStructures?, unavailable: String?
    )

    /// Answers every process that waits for a walk: one exiting is copied and searched for every instance
    /// the report may show, unless each already has its path from when its test settled
    /// (`explainedWhenTestsSettled`); one whose test settled is copied only if a test settled since its last
    /// walk left instances alive, and searched for those, but not before its last walk's length
    /// has passed since that walk ended (it waits until then, and its next walk takes every test
    /// settled meanwhile), unless no process has written a record for `idleNanoseconds`. Each process is answered (and goes on) as soon as its copy is taken,
    /// before `search` runs on it. `now` is a monotonic clock in nanoseconds.
    mutating func answerRequests(
        on channel: RecordChannel, ledgers: [LifetimeLedger?], watch: WatchOptions,
        copyProcess: (Int32) -> Result<ProcessSnapshot, SnapshotFailure>,
        search: Search = { RetainerSearch.walk(of: $1, in: $0, modules: $2, retainedSizes: $3, unreachable: $4) },
        now: () -> UInt64 = HeapWalks.monotonicNanoseconds
    ) {
        let processes = Swift.min(channel.attachedProcesses, ledgers.count)
        for index in 0..<processes {
            guard let request = channel.pendingWalk(of: index) else { continue }
            // A question, no walk: the reader answers those (`Reception.answerGraceQuestions`).
            if request.graceQuestion { continue }
            // The process goes on once answered: as soon as its copy is taken, before the search
            // (which may take seconds on a large heap), or when no copy is needed; a request held
            // until its walk may start is answered by a later call.
            var answered = false
            var held = false
            func answer() {
                if !answered && !held { channel.answerWalk(of: index, number: request.number) }
                answered = true
            }
            defer { answer() }
            guard let ledger = ledgers[index], let pid = ledger.process?.pid else {
                if request.atExit { atExit[UInt8(index)] = .failed("the process did not say who it was") }
                if request.unreachable {
                    unreachableUnavailable[UInt8(index)] =
                        "it asked before leak-audit had read who it was (its records lost, damaged or held up behind damaged ones), so its heap was not checked"
                }
                continue
            }
            if request.atExit {
                guard atExit[UInt8(index)] == nil else { continue }
                // Nothing the report explains and no unreachable objects asked for: no copy is
                // needed. Nor when every path the report would read from this walk was found when
                // its test settled (the last test's walk took them all, as tests end before
                // their process): the report reads those first.
                let instances = Self.instancesToExplain(ledger, watch: watch)
                guard
                    request.unreachable
                        || (!instances.isEmpty
                            && !Self.explainedWhenTestsSettled(ledger, watch: watch, paths: afterTests[UInt8(index)] ?? [:]))
                else {
                    atExit[UInt8(index)] = .searched([:])
                    continue
                }
                let copy = copyProcess(pid)
                answer()
                switch copy {
                case .success(let snapshot):
                    let tracked = request.unreachable ? Set(ledger.liveObjects { _ in true }) : nil
                    let found = search(snapshot, instances, ledger.modules, watch.retainers, tracked)
                    if let reason = found.unavailable {
                        atExit[UInt8(index)] = .failed(reason)
                        if request.unreachable { unreachableUnavailable[UInt8(index)] = reason }
                        continue
                    }
                    atExit[UInt8(index)] = .searched(found.paths)
                    if let structures = found.unreachable { unreachable[UInt8(index)] = structures }
                case .failure(let failure):
                    atExit[UInt8(index)] = .failed(failure.message)
                    if request.unreachable { unreachableUnavailable[UInt8(index)] = failure.message }
                }
                continue
            }
            // Tests that settle as their process ends: no later test can replace what they left,
            // and the walk at exit, which follows, explains it. The request goes on at once.
            if request.ending {
                heldRequests[UInt8(index)] = nil
                continue
            }
            var idle = false
            if let waiting = heldRequests[UInt8(index)], waiting.number == request.number,
                let next = nextWalkAfterTests[UInt8(index)]
            {
                let clock = now()
                let reserved = channel.reservedSlots
                if reserved != waiting.reservedSlots {
                    heldRequests[UInt8(index)] = HeldRequest(number: request.number, reservedSlots: reserved, since: clock)
                }
                idle = reserved == waiting.reservedSlots && clock &- waiting.since >= Self.idleNanoseconds
                if clock < next && !idle {
                    held = true
                    continue
                }
            }
            // Only the instances the report judges (not the harness's, the runtime's or
            // Foundation's): a test that left only those needs no copy.
            var instances: [Instance] = []
            var settled: [UInt32] = []
            // Which types are judged, looked up once a type: built only for a test that left
            // something (most leave nothing).
            var judged: JudgedTypes? = nil
            // Only the tests not walked yet are read: each is a value of several tables, copied
            // when read, and a suite of a thousand tests asks again at each pass while it waits.
            let walked = walkedTests[UInt8(index)] ?? []
            for id in ledger.tests.keys where !walked.contains(id) {
                guard let leaked = ledger.tests[id]?.leaked else { continue }
                settled.append(id)
                if !leaked.isEmpty && judged == nil { judged = JudgedTypes(ledger.typeCounts, watch: watch) }
                for leak in leaked where judged?.contains(leak.typeID) == true {
                    instances.append(Instance(object: leak.object, sequence: leak.sequence))
                }
            }
            if !instances.isEmpty, !idle, let next = nextWalkAfterTests[UInt8(index)], now() < next {
                held = true
                if heldRequests[UInt8(index)]?.number != request.number {
                    heldRequests[UInt8(index)] = HeldRequest(
                        number: request.number, reservedSlots: channel.reservedSlots, since: now())
                }
                continue
            }
            heldRequests[UInt8(index)] = nil
            walkedTests[UInt8(index), default: []].formUnion(settled)
            guard !instances.isEmpty else { continue }
            let started = now()
            defer {
                let ended = now()
                nextWalkAfterTests[UInt8(index)] = ended &+ (ended &- started)
            }
            let copy = copyProcess(pid)
            answer()
            switch copy {
            case .success(let snapshot):
                let found = search(snapshot, instances.map(\.object), ledger.modules, true, nil)
                for instance in instances {
                    if let reason = found.unavailable {
                        afterTestsUnavailable[UInt8(index), default: [:]][instance] = reason
                    } else if let path = found.paths[instance.object] {
                        afterTests[UInt8(index), default: [:]][instance] = path
                    } else {
                        afterTestsUnavailable[UInt8(index), default: [:]][instance] =
                            "its object was not among the live Swift objects of its process's copy when its test settled"
                        deadWhenTestsSettled[UInt8(index), default: []].insert(instance)
                    }
                }
            case .failure(let failure):
                for instance in instances { afterTestsUnavailable[UInt8(index), default: [:]][instance] = failure.message }
            }
        }
    }

    /// CLOCK_MONOTONIC, in nanoseconds.
    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Whether the walk at the exit of process `index` (whose ledger is `ledger`) will copy it, as
    /// far as is known before it asks: the shim asks for its unreachable objects (`--unreachable`,
    /// or by default a process that does not link LeakMonitor), or the report will read paths of
    /// instances its tests left that no walk when they settled explained. Instances released within
    /// the last grace periods may still leave nothing to copy.
    func copiesAtExit(ofProcess index: Int, ledger: LifetimeLedger, watch: WatchOptions) -> Bool {
        guard watch.walksHeaps else { return false }
        if watch.unreachable || (watch.unreachableByDefault && ledger.process?.linksMonitor == false) { return true }
        return !Self.instancesToExplain(ledger, watch: watch).isEmpty
            && !Self.explainedWhenTestsSettled(ledger, watch: watch, paths: afterTests[UInt8(index)] ?? [:])
    }

    /// The live instances whose paths the report reads: with `--retainers`, of types over budget
    /// and those tests left alive, settled or not (a test whose grace period had not ended when
    /// its process exited is judged by what it leaves alive at the end); without, only what tests
    /// left of the types judged per test, which the walk tells apart as kept by a test case or
    /// made by a global (nothing else shows a path then). Empty when no walk is needed for them.
    static func instancesToExplain(_ ledger: LifetimeLedger, watch: WatchOptions) -> [UInt64] {
        let types = ledger.typeCounts
        var instances: [UInt64] = []
        if watch.retainers {
            instances = ledger.liveObjects { typeID in types[typeID].map { $0.peak > $0.max } ?? false }
        }
        var judged = JudgedTypes(types, watch: watch)
        for leak in ledger.leftAliveByTests() where ledger.isAlive(leak) {
            guard watch.retainers || judged.contains(leak.typeID) else { continue }
            instances.append(leak.object)
        }
        return Array(Set(instances))
    }

    /// True when the report reads no path from a walk at exit (`RetainerNaming`): no type over
    /// its budget has an instance alive, and every instance alive that a test left of a type it is
    /// judged by has its path from when its test settled, which the report reads first. What
    /// tests left of other types (`instancesToExplain` with `--retainers`) is searched with them
    /// but never shown. When false, the walk at exit searches all of `instancesToExplain` as
    /// before: the retained sizes depend on which instances are searched together.
    static func explainedWhenTestsSettled(
        _ ledger: LifetimeLedger, watch: WatchOptions, paths: [Instance: RetainerSearch.Path]
    ) -> Bool {
        let types = ledger.typeCounts
        if watch.retainers {
            let overBudget = Set(types.compactMap { $0.value.peak > $0.value.max ? $0.key : nil })
            if !overBudget.isEmpty && !ledger.liveObjects(wanted: { overBudget.contains($0) }).isEmpty { return false }
        }
        var judged = JudgedTypes(types, watch: watch)
        for leak in ledger.leftAliveByTests() where judged.contains(leak.typeID) && ledger.isAlive(leak) {
            guard paths[Instance(object: leak.object, sequence: leak.sequence)] != nil else { return false }
        }
        return true
    }
}
