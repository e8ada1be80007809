// The objects no root reaches, grouped into the structures they form (`--unreachable`,
// docs/retainers.md "Unreachable objects"): the strongly connected components of the references
// among them, condensed; each component that no other holds is one structure, a cycle or an
// over-retained object alone, and every other unreached object belongs to one structure that
// reaches it (Valgrind's "indirectly lost").

import LeakAuditModel

/// What a process's heap walk found unreachable: its structures grouped by shape, and every
/// unreachable object counted by type.
struct UnreachableStructures {
    /// Structures of one shape.
    struct Group {
        var shape: UnreachableObjects.Group.Shape
        /// The cycle from its canonical member (the first step, whose hold is empty) round to that
        /// object again, or the object alone. An element index of -1 or a dictionary key of nil
        /// stands for indexes or keys that differ among the group's structures.
        var path: RetainerSearch.Path
        /// Structures of this shape.
        var count: Int
        /// Their objects, with those only they reach.
        var objects: Int
        var bytes: Int
        /// The addresses of those objects whose allocation the process's ledger watched.
        var trackedObjects: [UInt64]
        /// Whether one of those objects is of a type of the program (`TypeOrigin.isProgramType`):
        /// a group of only the toolchain's and unnamed objects is none of the program's doing.
        var holdsProgramTypes: Bool
    }

    /// The unreachable objects of one type (the walk's name for it).
    struct TypeTally {
        var name: String
        var count: Int
        var bytes: Int
    }

    /// Most objects first, then most bytes, then in the order of their first structures.
    var groups: [Group]
    /// Most objects first, then by name.
    var types: [TypeTally]
    var objects: Int
    var bytes: Int
}

extension RetainerSearch {
    /// Groups the objects no root reached (after `reachFromRoots`) into structures. `tracked` holds
    /// the addresses whose allocation the process's ledger watched: each group lists those of its
    /// objects. Every walk keeps its own stack or queue; the cost is linear in the unreached objects
    /// and the references among them.
    mutating func unreachableStructures(tracked: Set<UInt64>) -> UnreachableStructures {
        // The unreached objects, numbered densely, and the references among them in compressed
        // rows. Reading an object may meet one outside the walked heaps for the first time: it
        // joins the list, and is read in turn.
        var dense = [Int32](repeating: -1, count: objects.count)
        var members: [Int32] = []
        for node in parent.indices where parent[node] == Int32.min {
            dense[node] = Int32(members.count)
            members.append(Int32(node))
        }
        var offsets = [0]
        var targets: [Int32] = []
        var next = 0
        while next < members.count {
            let node = members[next]
            next += 1
            forEachReference(of: node) { search, target, _, _ in
                guard Int(target) < search.parent.count, search.parent[Int(target)] == Int32.min else { return }
                if Int(target) >= dense.count { dense += repeatElement(-1, count: Int(target) + 1 - dense.count) }
                if dense[Int(target)] < 0 {
                    dense[Int(target)] = Int32(members.count)
                    members.append(target)
                }
                targets.append(dense[Int(target)])
            }
            offsets.append(targets.count)
        }
        let components = Self.stronglyConnectedComponents(offsets: offsets, targets: targets)
        let onCycle = components.onCycle(offsets: offsets, targets: targets)
        let component = components.component

        // A component another one holds is no structure of its own. Each of the others starts at
        // its canonical member: the smallest type name, then the lowest address (the names ranked
        // once, so that a million structures compare integers).
        let names = layout.typeTable.map(\.name)
        var rank = [Int32](repeating: 0, count: names.count)
        for (position, index) in names.indices.sorted(by: { names[$0] < names[$1] }).enumerated() {
            rank[index] = Int32(position)
        }
        func precedes(_ node: Int32, _ other: Int32) -> Bool {
            let (first, second) = (rank[Int(nodeTypeIndexes[Int(node)])], rank[Int(nodeTypeIndexes[Int(other)])])
            return first != second ? first < second : objects[Int(node)] < objects[Int(other)]
        }
        var held = [Bool](repeating: false, count: components.count)
        for source in members.indices {
            for edge in offsets[source]..<offsets[source + 1] where component[Int(targets[edge])] != component[source] {
                held[Int(component[Int(targets[edge])])] = true
            }
        }
        var canonical = [Int32](repeating: -1, count: components.count)
        for member in members.indices where !held[Int(component[member])] {
            let own = Int(component[member])
            if canonical[own] < 0 || precedes(members[member], members[Int(canonical[own])]) {
                canonical[own] = Int32(member)
            }
        }
        let starts = canonical.filter { $0 >= 0 }.sorted { precedes(members[Int($0)], members[Int($1)]) }

        // Each structure claims, breadth first from its start, every unreached object it reaches
        // that an earlier structure did not.
        var owner = [Int32](repeating: -1, count: members.count)
        var queue: [Int32] = []
        for (structure, start) in starts.enumerated() {
            owner[Int(start)] = Int32(structure)
            queue.append(start)
            var head = 0
            while head < queue.count {
                let source = Int(queue[head])
                head += 1
                for edge in offsets[source]..<offsets[source + 1] where owner[Int(targets[edge])] < 0 {
                    owner[Int(targets[edge])] = Int32(structure)
                    queue.append(targets[edge])
                }
            }
            queue.removeAll(keepingCapacity: true)
        }

        // Counts by structure and by type.
        var objectsOf = [Int](repeating: 0, count: starts.count)
        var bytesOf = [Int](repeating: 0, count: starts.count)
        var trackedOf: [Int32: [UInt64]] = [:]
        var holdsProgramTypes = [Bool](repeating: false, count: starts.count)
        let isProgramType = layout.typeTable.map { TypeOrigin.isProgramType($0.name) }
        var typeIndexes: [Int32: Int] = [:]
        var types: [UnreachableStructures.TypeTally] = []
        var totalBytes = 0
        for (member, node) in members.enumerated() {
            let structure = owner[member]
            let bytes = size(of: node)
            totalBytes += bytes
            if structure >= 0 {
                objectsOf[Int(structure)] += 1
                bytesOf[Int(structure)] += bytes
                if tracked.contains(objects[Int(node)]) { trackedOf[structure, default: []].append(objects[Int(node)]) }
                if isProgramType[Int(nodeTypeIndexes[Int(node)])] { holdsProgramTypes[Int(structure)] = true }
            }
            let typeIndex = nodeTypeIndexes[Int(node)]
            if let known = typeIndexes[typeIndex] {
                types[known].count += 1
                types[known].bytes += bytes
            } else {
                typeIndexes[typeIndex] = types.count
                types.append(.init(name: nodeType(node).name, count: 1, bytes: bytes))
            }
        }

        // Structures of one shape are one group.
        struct Shape: Hashable {
            var shape: UnreachableObjects.Group.Shape
            var steps: [Step]
            var omittedSteps: Int
        }
        var groups: [UnreachableStructures.Group] = []
        var groupIndexes: [Shape: Int] = [:]
        // The shortest cycle through each start, breadth first within its component: each
        // member's predecessor (-1 while unseen), reset after each search.
        var previous = [Int32](repeating: -1, count: members.count)
        var seen: [Int32] = []
        for (structure, start) in starts.enumerated() {
            let node = members[Int(start)]
            let own = component[Int(start)]
            var path: Path
            var shape = UnreachableObjects.Group.Shape.cycle
            var closing: Int32 = -1
            if onCycle[Int(own)] {
                previous[Int(start)] = start
                seen.append(start)
                var head = 0
                search: while head < seen.count {
                    let source = seen[head]
                    head += 1
                    for edge in offsets[Int(source)]..<offsets[Int(source) + 1] where component[Int(targets[edge])] == own {
                        let target = targets[edge]
                        if target == start {
                            closing = source
                            break search
                        }
                        if previous[Int(target)] < 0 {
                            previous[Int(target)] = source
                            seen.append(target)
                        }
                    }
                }
            }
            if closing >= 0 {
                // The cycle's objects from the start; the path names only the steps it keeps.
                var cycle: [Int32] = []
                var current = closing
                while current != start {
                    cycle.append(members[Int(current)])
                    current = previous[Int(current)]
                }
                cycle.append(node)
                cycle.reverse()
                let holds: [(Hold, UInt64?)]?
                (cycle, holds) = canonicalRotation(of: cycle)
                let first = cycle[0]
                path = Path.kept(count: cycle.count + 1) { index in
                    guard index > 0 else { return Step(hold: .property(""), type: nodeType(first).name) }
                    let (from, to) = (cycle[index - 1], index < cycle.count ? cycle[index] : first)
                    let (hold, closure) = holds?[index - 1] ?? reference(from: from, to: to)
                    return Step(
                        hold: hold, type: nodeType(to).name, closure: closure,
                        isCollectionStorage: index < cycle.count && nodeType(to).collection != nil)
                }
                path.root = .cycle
            } else {
                shape = .overRetained
                path = Path(
                    root: .unknown,
                    steps: [
                        Step(
                            hold: .property(""), type: nodeType(node).name, isCollectionStorage: nodeType(node).collection != nil)
                    ])
            }
            for member in seen { previous[Int(member)] = -1 }
            seen.removeAll(keepingCapacity: true)
            let key = Shape(shape: shape, steps: path.steps.map { Self.anyIndexOrKey($0) }, omittedSteps: path.omittedSteps)
            let tracked = trackedOf[Int32(structure)] ?? []
            guard let index = groupIndexes[key] else {
                groupIndexes[key] = groups.count
                groups.append(
                    .init(
                        shape: shape, path: path, count: 1, objects: objectsOf[structure], bytes: bytesOf[structure],
                        trackedObjects: tracked, holdsProgramTypes: holdsProgramTypes[structure]))
                continue
            }
            groups[index].count += 1
            groups[index].objects += objectsOf[structure]
            groups[index].bytes += bytesOf[structure]
            groups[index].trackedObjects += tracked
            groups[index].holdsProgramTypes = groups[index].holdsProgramTypes || holdsProgramTypes[structure]
            for step in groups[index].path.steps.indices where groups[index].path.steps[step] != path.steps[step] {
                groups[index].path.steps[step] = key.steps[step]
            }
        }
        // Ties keep the order of their starts.
        groups = groups.enumerated().sorted {
            ($1.element.objects, $1.element.bytes, $0.offset) < ($0.element.objects, $0.element.bytes, $1.offset)
        }
        .map(\.element)
        types.sort { ($1.count, $0.name) < ($0.count, $1.name) }
        return UnreachableStructures(groups: groups, types: types, objects: members.count, bytes: totalBytes)
    }

    /// The cycle `cycle` (its objects in order, each holding the next, the last the first) from
    /// the member of the first one's type whose steps read first, by field, then by type, with
    /// how each member holds the next when they were read: one shape is one group whichever of its
    /// members of that type lies lowest in memory (a channel pipeline's head and tail contexts,
    /// `next → prev` or `prev → next`). Cycles longer than `rotatedAtMost` keep their start
    /// (comparing every rotation costs the square of the length).
    private mutating func canonicalRotation(of cycle: [Int32]) -> ([Int32], [(Hold, UInt64?)]?) {
        let type = nodeTypeIndexes[Int(cycle[0])]
        let starts = cycle.indices.filter { nodeTypeIndexes[Int(cycle[$0])] == type }
        guard starts.count > 1, cycle.count <= Self.rotatedAtMost else { return (cycle, nil) }
        let holds = cycle.indices.map { reference(from: cycle[$0], to: cycle[($0 + 1) % cycle.count]) }
        let steps = cycle.indices.map { index in
            (Self.order(holds[index].0), nodeType(cycle[(index + 1) % cycle.count]).name)
        }
        let first =
            starts.min { one, other in
                (steps[one...] + steps[..<one]).lexicographicallyPrecedes(steps[other...] + steps[..<other]) {
                    ($0.0.0, $0.0.1, $0.0.2, $0.1) < ($1.0.0, $1.0.1, $1.0.2, $1.1)
                }
            } ?? 0
        return (Array(cycle[first...] + cycle[..<first]), Array(holds[first...] + holds[..<first]))
    }

    /// The longest cycle `canonicalRotation(of:)` turns.
    static let rotatedAtMost = 64

    /// Where a hold comes in the order `canonicalRotation(of:)` reads steps in: by kind, then by
    /// the property's name, then by the enum case's.
    private static func order(_ hold: Hold) -> (Int, String, String) {
        switch hold {
        case .property(let name, let enumCase): return (0, name, enumCase?.name ?? "")
        case .element(_, let enumCase): return (1, "", enumCase?.name ?? "")
        case .value: return (2, "", "")
        case .member: return (3, "", "")
        case .capture: return (4, "", "")
        case .boxedValue: return (5, "", "")
        case .word: return (6, "", "")
        }
    }

    /// How `from` holds `to`: the first of its references to it.
    private mutating func reference(from: Int32, to: Int32) -> (Hold, UInt64?) {
        var found: (Hold, UInt64?)? = nil
        forEachReference(of: from) { _, target, hold, closure in
            if found == nil, target == to { found = (hold, closure) }
        }
        return found ?? (.word, nil)
    }

    /// The step with its array index or dictionary key left out: -1 and nil stand for any.
    static func anyIndexOrKey(_ step: Step) -> Step {
        var step = step
        switch step.hold {
        case .element(_, let enumCase): step.hold = .element(-1, enumCase: enumCase)
        case .value: step.hold = .value(key: nil)
        default: break
        }
        return step
    }
}
