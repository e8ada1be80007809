import LeakAuditModel

// The last step of the heap walk's replay (Retainers/HeapSnapshotReplay.swift) for the libFuzzer
// target: the paths found, named as a report names them.

extension HeapSnapshotReplay {
    /// The retainers `RetainerNaming` gives the instances the input names, as a report would show
    /// them, and why some have none.
    package static func retainers(from bytes: UnsafeRawBufferPointer) -> (retainers: [Retainer], unavailable: [String]) {
        let decoded = decode(bytes)
        let walk = RetainerSearch.walk(
            of: decoded.instances, in: decoded.snapshot, modules: decoded.modules, retainedSizes: true,
            unreachable: nil, foreignClasses: foreignClasses)
        let naming = RetainerNaming(
            symbolizer: FixedSymbolizer(), modules: decoded.modules,
            walk: walk.unavailable.map { .failed($0) } ?? .searched(walk.paths))
        return naming.retainers(of: decoded.instances, typeName: instanceTypeName)
    }
}

extension HeapSnapshotReplay {
    /// Whether shortcuts of the search find the paths of the whole search, which reads every
    /// object, searches for each cycle by the objects' layouts and searches backwards from each
    /// instance held from outside a cycle: `earlyEnd`, the search that ends once it has reached
    /// every instance (a walk that reads nothing else: `RetainerSearch.walk`); `cyclesFromGraph`,
    /// the searches for cycles among unreached objects that read the graph of those objects;
    /// `sharedHolderPaths`, an instance held by one holder alone taking its holder's path. A
    /// shortcut keeps the paths, too, when either search ran out of words to read
    /// (`RetainerSearch.readLimitReached`): nothing is then known to compare. All four search for
    /// the same instances, the input's first ones (`comparedBytes`).
    package static func shortcutsKeepPaths(
        from bytes: UnsafeRawBufferPointer
    ) -> (earlyEnd: Bool, cyclesFromGraph: Bool, sharedHolderPaths: Bool) {
        let decoded = decode(bytes)
        let writable = Swift.max(1, decoded.snapshot.writableBytes)
        let compared = Swift.max(1, Swift.min(comparedInstances, comparedBytes / writable))
        let instances = Array(decoded.instances.prefix(compared))
        func paths(searchingEverything: Bool, cyclesFromGraph: Bool = true, sharingHolderPaths: Bool)
            -> [UInt64: RetainerSearch.Path]?
        {
            Self.paths(
                of: instances, in: decoded, searchingEverything: searchingEverything, cyclesFromGraph: cyclesFromGraph,
                sharingHolderPaths: sharingHolderPaths)
        }
        guard let whole = paths(searchingEverything: true, cyclesFromGraph: false, sharingHolderPaths: false)
        else { return (true, true, true) }
        func keeps(_ paths: [UInt64: RetainerSearch.Path]?) -> Bool { paths.map { $0 == whole } ?? true }
        return (
            keeps(paths(searchingEverything: false, sharingHolderPaths: false)),
            keeps(paths(searchingEverything: true, cyclesFromGraph: true, sharingHolderPaths: false)),
            keeps(paths(searchingEverything: true, cyclesFromGraph: false, sharingHolderPaths: true))
        )
    }

    /// How many instances `shortcutsKeepPaths` compares the paths of: as many as keep that number
    /// times the snapshot's writable bytes under `comparedBytes`, at most `comparedInstances`.
    /// The whole search (and the one that shares holders' paths) looks for a cycle through each
    /// unreached instance by itself, reading all of its part of the graph again: 57 bytes of input
    /// that made 9 instances at the bottom of a chain of 64,008 objects (1.5 MB) took 15 s in the
    /// sanitized fuzzer, past its time limit, most of it in those searches. Most inputs hold a
    /// few kilobytes, and all their instances are compared.
    static let comparedBytes = 4 << 20
    static let comparedInstances = 128

    /// The paths of `instances` from a walk of `decoded`'s snapshot that reads nothing else; nil
    /// when it ran out of words to read.
    private static func paths(
        of instances: [UInt64], in decoded: (snapshot: ProcessSnapshot, modules: [ModuleImage], instances: [UInt64]),
        searchingEverything: Bool, cyclesFromGraph: Bool, sharingHolderPaths: Bool
    ) -> [UInt64: RetainerSearch.Path]? {
        let walk = RetainerSearch.walk(
            of: instances, in: decoded.snapshot, modules: decoded.modules, retainedSizes: false,
            unreachable: nil, foreignClasses: foreignClasses, searchesEverything: searchingEverything,
            cyclesFromUnreachedGraph: cyclesFromGraph, sharesHeldFromOutsidePaths: sharingHolderPaths)
        return walk.unavailable == nil ? walk.paths : nil
    }
}

extension HeapSnapshotReplay {
    /// Whether XCTest's test case objects hold every instance the input names
    /// (`RetainerSearch.testCasesHold`: what a test process's question before its exit reads).
    package static func testCasesHold(from bytes: UnsafeRawBufferPointer) -> Bool {
        let decoded = decode(bytes)
        return RetainerSearch.testCasesHold(
            decoded.instances, in: decoded.snapshot, modules: decoded.modules, foreignClasses: foreignClasses)
    }
}

extension HeapSnapshotReplay {
    /// The unreachable objects of the process the input describes, as a report would show them;
    /// the instances the input names stand for those whose allocation was watched, each group's
    /// allocations one group of their count with no frames.
    package static func unreachable(from bytes: UnsafeRawBufferPointer) -> UnreachableObjects {
        let decoded = decode(bytes)
        let walk = RetainerSearch.walk(
            of: [], in: decoded.snapshot, modules: decoded.modules, retainedSizes: false,
            unreachable: Set(decoded.instances), foreignClasses: foreignClasses)
        guard let found = walk.unreachable else {
            return UnreachableObjects(
                objects: 0, bytes: 0, types: [], groups: [], processesChecked: 0, unavailable: walk.unavailable.map { [$0] } ?? []
            )
        }
        let naming = RetainerNaming(symbolizer: FixedSymbolizer(), modules: decoded.modules, walk: nil)
        return UnreachableObjects(found, naming: naming) { tracked in
            tracked.isEmpty ? [] : [AuditReport.AllocationGroup(count: tracked.count, frames: [], truncated: false)]
        }
    }
}
