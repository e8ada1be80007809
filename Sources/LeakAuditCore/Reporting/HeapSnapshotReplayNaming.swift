import LeakAuditModel

// The last step of the heap walk's replay (Retainers/HeapSnapshotReplay.swift) for the libFuzzer
// target: the paths found, named as a report names them.

extension HeapSnapshotReplay {
    /// The retainers `RetainerNaming` gives the instances the input names, as a report would show
    /// them, and why some have none.
    package static func retainers(from bytes: UnsafeRawBufferPointer) -> (retainers: [Retainer], unavailable: [String]) {
        let decoded = decode(bytes)
        let paths = RetainerSearch.paths(of: decoded.instances, in: decoded.snapshot, modules: decoded.modules)
        let naming = RetainerNaming(symbolizer: FixedSymbolizer(), modules: decoded.modules, walk: .searched(paths))
        return naming.retainers(of: decoded.instances, typeName: instanceTypeName)
    }
}
