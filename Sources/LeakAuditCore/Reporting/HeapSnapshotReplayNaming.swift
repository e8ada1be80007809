import LeakAuditModel

// The last step of the heap walk's replay (Retainers/HeapSnapshotReplay.swift) for the libFuzzer
// target: the paths found, named as a report names them.

extension HeapSnapshotReplay {
    /// The retainers `RetainerNaming` gives the instances the input names, as a report would show
    /// them, and why some have none.
    package static func retainers(from bytes: UnsafeRawBufferPointer) -> (retainers: [Retainer], unavailable: [String]) {
        let decoded = decode(bytes)
        let paths = RetainerSearch.paths(
            of: decoded.instances, in: decoded.snapshot, modules: decoded.modules,
            foreignClasses: foreignClasses)
        let naming = RetainerNaming(symbolizer: FixedSymbolizer(), modules: decoded.modules, walk: .searched(paths))
        return naming.retainers(of: decoded.instances, typeName: instanceTypeName)
    }
}

extension HeapSnapshotReplay {
    /// Whether the search that ends once it has reached every instance (a walk that reads nothing
    /// else: `RetainerSearch.walk`) finds the paths that searching everything finds.
    package static func earlyEndKeepsPaths(from bytes: UnsafeRawBufferPointer) -> Bool {
        paths(bytes, searchingEverything: false) == paths(bytes, searchingEverything: true)
    }

    /// True when the paths of the input's instances are the same whether the searches for cycles
    /// among unreached objects read the graph of those objects or each object's layout again.
    package static func cyclesFromGraphKeepPaths(from bytes: UnsafeRawBufferPointer) -> Bool {
        paths(bytes, searchingEverything: true, cyclesFromGraph: true)
            == paths(bytes, searchingEverything: true, cyclesFromGraph: false)
    }

    /// The paths of the input's instances from a walk that reads nothing else.
    private static func paths(
        _ bytes: UnsafeRawBufferPointer, searchingEverything: Bool, cyclesFromGraph: Bool = true
    ) -> [UInt64: RetainerSearch.Path] {
        let decoded = decode(bytes)
        return RetainerSearch.walk(
            of: decoded.instances, in: decoded.snapshot, modules: decoded.modules, retainedSizes: false,
            unreachable: nil, foreignClasses: foreignClasses, searchesEverything: searchingEverything,
            cyclesFromUnreachedGraph: cyclesFromGraph
        ).paths
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
            return UnreachableObjects(objects: 0, bytes: 0, types: [], groups: [], processesChecked: 0)
        }
        let naming = RetainerNaming(symbolizer: FixedSymbolizer(), modules: decoded.modules, walk: nil)
        return UnreachableObjects(found, naming: naming) { tracked in
            tracked.isEmpty ? [] : [AuditReport.AllocationGroup(count: tracked.count, frames: [], truncated: false)]
        }
    }
}
