import LeakAuditModel

// The unreachable objects a run's heap walks found, as the report shows them: each process's
// structures named by its symbols, with the allocation stacks of the objects its ledger watched,
// then the processes merged.

extension UnreachableObjects {
    /// One process's unreachable objects: each group's path named as retainers are, and the
    /// allocation stacks (`allocations`) of the objects whose allocation was watched.
    init(
        _ found: UnreachableStructures, naming: RetainerNaming,
        allocations: ([UInt64]) -> [AuditReport.AllocationGroup]
    ) {
        let types = found.types.map {
            TypeCount(name: $0.name, count: $0.count, bytes: $0.bytes, isInternal: !TypeOrigin.isProgramType($0.name))
        }
        let groups = found.groups.map { group in
            let path = naming.unreachablePath(group.path).steps
            return Group(
                count: group.count, objects: group.objects, bytes: group.bytes, shape: group.shape, path: path,
                allocations: allocations(group.trackedObjects),
                isInternal: !group.holdsProgramTypes)
        }
        self.init(
            objects: found.objects, bytes: found.bytes, types: types, groups: Self.merged(groups), processesChecked: 1)
    }

    /// The unreachable objects of several processes as one: groups of one shape (array indexes
    /// and dictionary keys aside) and types of one name added up; `unavailable` says which
    /// processes could not be checked.
    static func merged(_ parts: [UnreachableObjects], unavailable: [String] = []) -> UnreachableObjects {
        var types: [String: TypeCount] = [:]
        for type in parts.flatMap(\.types) {
            if var known = types[type.name] {
                known.count += type.count
                known.bytes += type.bytes
                types[type.name] = known
            } else {
                types[type.name] = type
            }
        }
        return UnreachableObjects(
            objects: parts.reduce(0) { $0 + $1.objects }, bytes: parts.reduce(0) { $0 + $1.bytes },
            types: types.values.sorted { ($1.count, $0.name) < ($0.count, $1.name) },
            groups: merged(parts.flatMap(\.groups)), processesChecked: parts.reduce(0) { $0 + $1.processesChecked },
            unavailable: parts.flatMap(\.unavailable) + unavailable)
    }

    /// Groups of one shape as one; the program's own groups first, then most bytes, most objects,
    /// and by path. A step whose index or key differs within a group reads `[i]` or `[key]`.
    static func merged(_ groups: [Group]) -> [Group] {
        struct Shape: Hashable {
            var shape: Group.Shape
            var path: [Retainer.Step]
        }
        var merged: [Shape: Group] = [:]
        for group in groups {
            let key = Shape(shape: group.shape, path: RetainerNaming.anyIndexOrKey(group.path))
            guard var existing = merged[key] else {
                merged[key] = group
                continue
            }
            existing.count += group.count
            existing.objects += group.objects
            existing.bytes += group.bytes
            existing.allocations = ReportBuilder.mergedGroups(existing.allocations + group.allocations)
            for index in existing.path.indices where existing.path[index].via != group.path[index].via {
                existing.path[index].via = key.path[index].via
            }
            merged[key] = existing
        }
        return merged.values.sorted { first, second in
            if first.isInternal != second.isInternal { return !first.isInternal }
            if first.bytes != second.bytes { return first.bytes > second.bytes }
            if first.objects != second.objects { return first.objects > second.objects }
            return first.path.map { "\($0.via) \($0.type)" }.lexicographicallyPrecedes(
                second.path.map { "\($0.via) \($0.type)" })
        }
    }
}
