import LeakAuditWire

/// One ledger per process index, as the decoder fills them: ids and addresses are per process.
final class ProcessLedgers: RecordSink {
    /// By process index; an index no record named holds an empty ledger (`written` is false).
    /// Memory of its own rather than arrays: a record reaches its ledger without an array's
    /// uniqueness check (the decoder is the only writer, and `byIndex` hands out copies).
    private let ledgers: UnsafeMutablePointer<LifetimeLedger>
    private let written: UnsafeMutablePointer<Bool>
    /// By process index: whether the next record must prepare the ledger first
    /// (`prepareForRecords`): its first record, or the first since `byIndex` handed out copies,
    /// which share the ledgers' tallies until one side changes. A ledger makes its tally its own
    /// once then, rather than each record asking the runtime whether its tally is shared.
    private let unprepared: UnsafeMutablePointer<Bool>
    /// One past the highest process index written to: what a question about every written ledger,
    /// asked once per pass, looks through.
    private let writtenBound: UnsafeMutablePointer<Int>
    private static let count = Int(LA_WIRE_MAX_PROCESSES)

    init(watchesAllocations: Bool) {
        // Every ledger starts as a copy of one empty ledger, sharing its tally until its first record.
        ledgers = UnsafeMutablePointer<LifetimeLedger>.allocate(capacity: Self.count)
        ledgers.initialize(repeating: LifetimeLedger(watchesAllocations: watchesAllocations), count: Self.count)
        written = UnsafeMutablePointer<Bool>.allocate(capacity: Self.count)
        written.initialize(repeating: false, count: Self.count)
        unprepared = UnsafeMutablePointer<Bool>.allocate(capacity: Self.count)
        unprepared.initialize(repeating: true, count: Self.count)
        writtenBound = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        writtenBound.initialize(to: 0)
        unannounced = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        unannounced.initialize(to: 0)
    }

    deinit {
        ledgers.deinitialize(count: Self.count)
        ledgers.deallocate()
        written.deallocate()
        unprepared.deallocate()
        writtenBound.deallocate()
        unannounced.deallocate()
    }

    /// Records of process indexes that never announced themselves (no process record came first):
    /// no writer makes them, so they are counted as damage and applied nowhere.
    var unannouncedRecords: UInt64 { unannounced.pointee }
    private let unannounced: UnsafeMutablePointer<UInt64>

    /// The ledger of process index `process` (below LA_WIRE_MAX_PROCESSES, 256, so every UInt8 is
    /// one), written to and with a tally that no copy shares; nil (the record counted as damage)
    /// while that index has not announced itself.
    @inline(__always)
    private func ledgerForRecords(_ process: UInt8) -> UnsafeMutablePointer<LifetimeLedger>? {
        let index = Int(process)
        if _slowPath(unprepared[index]) { return prepareForRecords(index) }
        return ledgers + index
    }

    /// A process's first record is its process record (docs/record-format.md, "Channel creation
    /// and discovery", step 8): until it came, the index stays unprepared and its records go here.
    @inline(never)
    private func prepareForRecords(_ index: Int) -> UnsafeMutablePointer<LifetimeLedger>? {
        guard ledgers[index].process != nil else {
            unannounced.pointee &+= 1
            return nil
        }
        prepareAnnounced(index)
        return ledgers + index
    }

    private func prepareAnnounced(_ index: Int) {
        if !written[index] {
            written[index] = true
            writtenBound.pointee = Swift.max(writtenBound.pointee, index + 1)
        }
        ledgers[index].makeTallyUnique()
        unprepared[index] = false
    }

    /// Hears each process's first image (its program) when its record is applied, and each other
    /// image the first time a stack the process recorded passes through it: the images a report
    /// may name frames of.
    var imageInUse: ((ModuleImage) -> Void)? = nil
    /// Per process index, its images by start address and which of them `imageInUse` heard.
    private var imagesInUse: [UInt8: ImagesInUse] = [:]

    func receive(_ event: WireEvent, from process: UInt8) {
        if case .processAttached = event {
            if unprepared[Int(process)] { prepareAnnounced(Int(process)) }
            ledgers[Int(process)].apply(event)
            return
        }
        guard let ledger = ledgerForRecords(process) else { return }
        if let imageInUse {
            switch event {
            case .moduleLoaded(let image):
                let isProgram = ledger.pointee.modules.isEmpty
                if isProgram { imageInUse(image) }
                imagesInUse[process, default: ImagesInUse()].add(image, heard: isProgram)
            case .stackDefined(_, let returnAddresses, _):
                imagesInUse[process]?.passed(through: returnAddresses, newlyUsed: imageInUse)
            default:
                break
            }
        }
        ledger.pointee.apply(event)
    }

    @inline(__always)
    func allocated(
        typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64, test: UInt32?, time: RecordTime,
        from process: UInt8
    ) {
        ledgerForRecords(process)?.pointee.allocatedUnshared(
            typeID: typeID, object: object, stackID: stackID, sequence: sequence, test: test, time: time)
    }

    @inline(__always)
    func deallocated(typeID: UInt32, object: UInt64, sequence: UInt64, time: RecordTime, from process: UInt8) {
        ledgerForRecords(process)?.pointee.deallocateUnshared(typeID: typeID, object: object, time: time)
    }

    /// Live instances from which a ledger's table outgrows the processor's caches (16-byte slots,
    /// at most three quarters full: over a megabyte).
    static let prefetchFromInstances = 1 << 16

    var prefersPrefetch: Bool {
        (0..<writtenBound.pointee).contains {
            written[$0] && ledgers[$0].estimatedCompactInstances >= Self.prefetchFromInstances
        }
    }

    @inline(__always)
    func prefetch(object: UInt64, from process: UInt8) {
        let index = Int(process)
        if written[index] { ledgers[index].prefetch(object: object) }
    }

    /// The ledger of each process index, nil where no record named it: copies, which share the
    /// ledgers' tallies until the next record.
    var byIndex: [LifetimeLedger?] {
        for index in 0..<writtenBound.pointee { unprepared[index] = true }
        return (0..<Self.count).map { written[$0] ? ledgers[$0] : nil }
    }

    /// The ledger of process `index` (`byIndex`'s, alone), nil when no record named it.
    func ledger(ofProcess index: Int) -> LifetimeLedger? {
        guard index >= 0, index < Self.count, written[index] else { return nil }
        unprepared[index] = true
        return ledgers[index]
    }

    /// What process `index` asks before it exits, without copying its ledger: the instances its
    /// finished tests left alive that work in flight may still release
    /// (`LifetimeLedger.instancesAwaitingGrace`), and where to read whether XCTest's test case
    /// objects hold them all (its pid and images). Nil when no record named the process: it waits
    /// as it would unasked.
    func graceQuestion(inProcess index: Int, watch: WatchOptions) -> GraceQuestion? {
        guard index >= 0, index < Self.count, written[index] else { return nil }
        let instances = ledgers[index].instancesAwaitingGrace(watch: watch)
        guard !instances.isEmpty else { return GraceQuestion(instances: []) }
        return GraceQuestion(instances: instances, pid: ledgers[index].process?.pid, modules: ledgers[index].modules)
    }

    /// Whether process `index` keeps XCTest test case objects now
    /// (`LifetimeLedger.keepsTestCaseObjects`).
    func keepsTestCaseObjects(inProcess index: Int) -> Bool {
        index >= 0 && index < Self.count && written[index] && ledgers[index].keepsTestCaseObjects
    }

    /// What a test process's grace question is answered from (`graceQuestion(inProcess:watch:)`).
    struct GraceQuestion {
        var instances: [UInt64]
        var pid: Int32? = nil
        var modules: [ModuleImage] = []
    }

    /// The ledgers of the processes that wrote records, by process index.
    var byProcess: [UInt8: LifetimeLedger] {
        Dictionary(uniqueKeysWithValues: byIndex.enumerated().compactMap { index, ledger in ledger.map { (UInt8(index), $0) } })
    }

    /// The index and pid of each process that announced itself, without copying a ledger.
    var announced: [(index: UInt8, pid: Int32)] {
        (0..<writtenBound.pointee).compactMap { index in ledgers[index].process.map { (UInt8(index), $0.pid) } }
    }

    /// What a progress display shows of every process now.
    func progressTally() -> ProgressTally {
        var tally = ProgressTally()
        for index in 0..<Self.count where written[index] { tally.add(ledgers[index].progressTally()) }
        return tally
    }
}

/// One process's images, by start address, and which of them a stack it recorded passed through.
private struct ImagesInUse {
    private var images: [(image: ModuleImage, heard: Bool)] = []
    /// The image the last address fell in, heard already (past the end: none): a stack's frames
    /// mostly follow each other in one image.
    private var last = Int.max

    /// More images than a process loads (a test bundle: about 40); past them, an image is still
    /// symbolized, only not prepared: records that name more (a damaged or hostile target) cost
    /// no more than this many each.
    static let mostImages = 1_024

    mutating func add(_ image: ModuleImage, heard: Bool) {
        guard images.count < Self.mostImages else { return }
        let position = images.firstIndex { $0.image.start > image.start } ?? images.endIndex
        images.insert((image, heard), at: position)
        last = Int.max
    }

    /// Hands `newlyUsed` each image that one of `addresses` falls in for the first time.
    mutating func passed(through addresses: [UInt64], newlyUsed: (ModuleImage) -> Void) {
        for address in addresses {
            if last < images.count, images[last].image.contains(address) { continue }
            var lower = 0
            var upper = images.count
            while lower < upper {
                let middle = (lower + upper) / 2
                if images[middle].image.start <= address { lower = middle + 1 } else { upper = middle }
            }
            guard lower > 0, images[lower - 1].image.contains(address) else { continue }
            last = lower - 1
            if !images[last].heard {
                images[last].heard = true
                newlyUsed(images[last].image)
            }
        }
    }
}
