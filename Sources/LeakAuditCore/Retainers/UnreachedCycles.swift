// The objects no root reaches: the shortest cycle through an instance, the cycle (or the object
// nothing holds) that holds one from outside, and the strongly connected components among them.

extension RetainerSearch {
    /// For an unreached instance on no cycle: the nearest unreached object that holds it and lies
    /// on a cycle, or else the farthest one that nothing holds (over-retained, or held from memory
    /// that is not a Swift object), and the path from there.
    ///
    /// An object on no cycle that one holder alone holds, itself on no cycle, has that holder's
    /// path and one step more: the search backwards from it meets the holder first, then goes on
    /// as the holder's own search does. So the search runs once for the first object up such a
    /// chain whose path is not known (a parser's tokens, each holding the next: once per list, not
    /// once per token), unless `sharesHeldFromOutsidePaths` is off (the heap walk's fuzz target
    /// compares the two). The paths found are kept with the graph for the instances asked about
    /// and the chains' tops, not for every object between (a list of 50,000 objects would keep
    /// 50,000 paths of a thousand steps).
    mutating func heldFromOutside(_ target: Int32) -> Path {
        let (chain, top) = soleHolderChain(from: target)
        let base = unreachedGraph?.heldFromOutsidePaths[top] ?? searchHeldFromOutside(top)
        guard sharesHeldFromOutsidePaths else { return base }
        unreachedGraph?.heldFromOutsidePaths[top] = base
        guard !chain.isEmpty else { return base }
        // The base's steps, then one for each object down the chain; only those a path keeps are
        // made. The base keeps its first steps, then (after those it left out) its last ones.
        let baseCount = base.steps.count + base.omittedSteps
        var path = Path.kept(count: baseCount + chain.count) { index in
            if index < baseCount {
                return base.steps[index < Path.keptAtEachEnd ? index : index - base.omittedSteps]
            }
            let (node, holder) = chain[chain.count - 1 - (index - baseCount)]
            return Step(
                hold: holder.hold, type: nodeType(node).name, closure: holder.closure,
                isCollectionStorage: nodeType(node).collection != nil)
        }
        path.root = base.root
        unreachedGraph?.heldFromOutsidePaths[target] = path
        return path
    }

    /// The objects from `target` up, each held by one holder alone (one or more references from
    /// it), neither on a cycle, with that holder's reference, up to the first whose path is known
    /// or must be searched for (`top`).
    private mutating func soleHolderChain(from target: Int32) -> (chain: [(node: Int32, holder: Edge)], top: Int32) {
        let graph = unreachedEdges()
        var chain: [(node: Int32, holder: Edge)] = []
        var node = target
        while sharesHeldFromOutsidePaths, graph.heldFromOutsidePaths[node] == nil, graph.cycleSizes[node] == nil,
            let holders = graph.backward[node], let holder = holders.first, holder.node != node,
            graph.cycleSizes[holder.node] == nil, holders.allSatisfy({ $0.node == holder.node })
        {
            chain.append((node, holder))
            node = holder.node
        }
        return (chain, node)
    }

    /// `heldFromOutside`'s search backwards from `target`, breadth first.
    private mutating func searchHeldFromOutside(_ target: Int32) -> Path {
        let graph = unreachedEdges()
        var next: [Int32: Edge] = [:]  // toward the target
        var queue: [Int32] = [target]
        var head = 0
        var chosen: Int32? = nil
        var farthest = target
        while head < queue.count {
            let node = queue[head]
            head += 1
            if node != target, graph.cycleSizes[node] != nil {
                chosen = node
                break
            }
            let holders = graph.backward[node] ?? []
            if holders.isEmpty { farthest = node }
            for holder in holders where holder.node != target && next[holder.node] == nil {
                next[holder.node] = Edge(node: node, hold: holder.hold, closure: holder.closure)
                queue.append(holder.node)
            }
        }
        let start = chosen ?? farthest
        var steps = [
            Step(hold: .property(""), type: nodeType(start).name, isCollectionStorage: nodeType(start).collection != nil)
        ]
        var current = start
        while current != target, let edge = next[current] {
            steps.append(
                Step(
                    hold: edge.hold, type: nodeType(edge.node).name, closure: edge.closure,
                    isCollectionStorage: nodeType(edge.node).collection != nil))
            current = edge.node
        }
        guard let cycleStart = chosen else { return Path(root: walkedHeaps.isEmpty ? .unknown : .unreferenced, steps: steps) }
        return Path(root: .heldByCycle(members: graph.cycleSizes[cycleStart] ?? 1), steps: steps)
    }

    /// The strong references among objects no root reached, and which of them lie on a cycle
    /// (a strongly connected component of more than one object, or one holding itself).
    private mutating func unreachedEdges() -> UnreachedGraph {
        if let unreachedGraph, unreachedGraph.nodeCount == objects.count { return unreachedGraph }
        var graph = UnreachedGraph()
        let nodeCount = objects.count
        forEachUnreachedReference(among: nodeCount, skippingTestCases: false) { node, edge in
            graph.forward[node, default: []].append(edge)
            graph.backward[edge.node, default: []].append(Edge(node: node, hold: edge.hold, closure: edge.closure))
        }
        graph.cycleSizes = Self.cycleSizes(graph.forward)
        // A node first met while reading the others (an object outside the walked heaps) had its
        // own references left unread: the graph may then miss a cycle.
        graph.isComplete = objects.count == nodeCount
        graph.nodeCount = objects.count
        unreachedGraph = graph
        return graph
    }

    /// Gives `visit` each reference among the first `count` nodes that no root reached yet, test
    /// case objects aside when `skippingTestCases`: the node that holds it, and the edge to the
    /// node it holds.
    mutating func forEachUnreachedReference(
        among count: Int, skippingTestCases: Bool, _ visit: (Int32, Edge) -> Void
    ) {
        for node in 0..<count where parent[node] == Int32.min {
            guard !skippingTestCases || !nodeType(Int32(node)).isTestCase else { continue }
            forEachReference(of: Int32(node)) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min,
                    !skippingTestCases || !search.nodeType(target).isTestCase
                else { return }
                visit(Int32(node), Edge(node: target, hold: hold, closure: closure))
            }
        }
    }

    /// The nodes of `graph` on a cycle: a strongly connected component of more than one node, or
    /// one node holding itself.
    static func nodesOnCycles(_ graph: [Int32: [Edge]]) -> Set<Int32> { Set(cycleSizes(graph).keys) }

    /// The nodes of `graph` on a cycle, each with how many nodes its cycle has (its strongly
    /// connected component).
    static func cycleSizes(_ graph: [Int32: [Edge]]) -> [Int32: Int] {
        // Dense numbers for the nodes, in a fixed order (the dictionary's is not).
        var nodes = Array(graph.keys).sorted()
        var dense = Dictionary(uniqueKeysWithValues: nodes.enumerated().map { ($1, Int32($0)) })
        for edges in graph.values {
            for edge in edges where dense[edge.node] == nil {
                dense[edge.node] = Int32(nodes.count)
                nodes.append(edge.node)
            }
        }
        var offsets = [0]
        var targets: [Int32] = []
        for node in nodes {
            for edge in graph[node] ?? [] { targets.append(dense[edge.node] ?? 0) }
            offsets.append(targets.count)
        }
        let components = stronglyConnectedComponents(offsets: offsets, targets: targets)
        let onCycle = components.onCycle(offsets: offsets, targets: targets)
        var sizes = [Int](repeating: 0, count: components.count)
        for component in components.component { sizes[Int(component)] += 1 }
        var result: [Int32: Int] = [:]
        for (index, node) in nodes.enumerated() where onCycle[Int(components.component[index])] {
            result[node] = sizes[Int(components.component[index])]
        }
        return result
    }

    /// The strongly connected components of a graph of `offsets.count - 1` nodes whose edges are
    /// `targets[offsets[n]..<offsets[n + 1]]` for node `n` (Tarjan's algorithm, iterative: no
    /// recursion the graph's depth decides; linear in nodes and edges).
    struct Components {
        /// Each node's component, numbered from 0 in the order found: a component comes before
        /// every component that reaches it.
        var component: [Int32]
        var count: Int

        /// For each component: whether it is a cycle (more than one node, or a node that holds
        /// itself).
        func onCycle(offsets: [Int], targets: [Int32]) -> [Bool] {
            var size = [Int32](repeating: 0, count: count)
            var result = [Bool](repeating: false, count: count)
            for node in component.indices {
                let own = Int(component[node])
                size[own] += 1
                for edge in offsets[node]..<offsets[node + 1] where Int(targets[edge]) == node { result[own] = true }
            }
            for index in 0..<count where size[index] > 1 { result[index] = true }
            return result
        }
    }

    static func stronglyConnectedComponents(offsets: [Int], targets: [Int32]) -> Components {
        let count = offsets.count - 1
        var index = [Int32](repeating: -1, count: count)
        var low = [Int32](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var component = [Int32](repeating: -1, count: count)
        var stack: [Int32] = []
        var work: [(node: Int32, edge: Int)] = []
        var counter: Int32 = 0
        var components: Int32 = 0
        for start in 0..<count where index[start] < 0 {
            work.append((Int32(start), offsets[start]))
            index[start] = counter
            low[start] = counter
            counter += 1
            stack.append(Int32(start))
            onStack[start] = true
            while let (node, edge) = work.last {
                let current = Int(node)
                if edge < offsets[current + 1] {
                    work[work.count - 1].edge += 1
                    let target = Int(targets[edge])
                    if index[target] < 0 {
                        index[target] = counter
                        low[target] = counter
                        counter += 1
                        stack.append(Int32(target))
                        onStack[target] = true
                        work.append((Int32(target), offsets[target]))
                    } else if onStack[target] {
                        low[current] = Swift.min(low[current], index[target])
                    }
                    continue
                }
                work.removeLast()
                if let parentNode = work.last?.node {
                    low[Int(parentNode)] = Swift.min(low[Int(parentNode)], low[current])
                }
                guard low[current] == index[current] else { continue }
                while let member = stack.popLast() {
                    onStack[Int(member)] = false
                    component[Int(member)] = components
                    if member == node { break }
                }
                components += 1
            }
        }
        return Components(component: component, count: Int(components))
    }

    /// The shortest cycle of strong references from `start` back to it, among objects no root
    /// reached: the instance first, each step holding the next, the last step back to it.
    mutating func cycle(through start: Int32) -> [Step]? {
        // Once the graph of unreached objects is built (for an instance a cycle holds, by
        // `heldFromOutside`) and whole, an instance on none of its cycles needs no search (which
        // would read every object it leads to before finding nothing: most instances left alive
        // are held by a cycle, not on one, such as a parser's tokens, each holding the rest of
        // their list), and the search reads the graph's references rather than each object's
        // layout again. It is not built for this alone: a walk whose instances all lie on cycles
        // would then read every unreached object, not only what its instances lead to.
        let graph = unreachedGraph.flatMap {
            $0.isComplete && $0.nodeCount == objects.count && cyclesFromUnreachedGraph ? $0 : nil
        }
        if let graph, graph.cycleSizes[start] == nil { return nil }
        // The reference each object met was first met by, in the order met; the object's index
        // into it is in `cycleMetBy`, valid where `cycleMarks` holds this search's number (a
        // long chain no cycle closes is met whole by each instance on it: a dictionary of its
        // objects per search was most of such a walk's time).
        var met: [(from: Int32, hold: Hold, closure: UInt64?)] = []
        cycleSearches &+= 1
        if cycleSearches == 0 {
            (cycleMarks, cycleMetBy) = ([], [])
            cycleSearches = 1
        }
        let number = cycleSearches
        var queue: [Int32] = [start]
        var head = 0
        var closing: (Int32, Hold, UInt64?)? = nil
        func visit(_ search: inout Self, _ node: Int32, _ target: Int32, _ hold: Hold, _ closure: UInt64?) {
            guard closing == nil else { return }
            if target == start {
                closing = (node, hold, closure)
            } else if !search.cycleMet(target, number: number) {
                search.cycleMark(target, number: number, metBy: Int32(met.count))
                met.append((node, hold, closure))
                queue.append(target)
            }
        }
        while head < queue.count, closing == nil, queue.count < 1_000_000 {
            let node = queue[head]
            head += 1
            // The graph holds the very references the objects' layouts give, in the same order.
            if let graph {
                for edge in graph.forward[node] ?? [] { visit(&self, node, edge.node, edge.hold, edge.closure) }
                continue
            }
            forEachReference(of: node) { search, target, hold, closure in
                guard search.parent[Int(target)] == Int32.min else { return }
                visit(&search, node, target, hold, closure)
            }
        }
        guard let closing else { return nil }
        var steps = [Step(hold: closing.1, type: nodeType(start).name, closure: closing.2)]
        var current = closing.0
        while current != start, cycleMet(current, number: number) {
            let (from, hold, closure) = met[Int(cycleMetBy[Int(current)])]
            steps.append(
                Step(
                    hold: hold, type: nodeType(current).name, closure: closure,
                    isCollectionStorage: nodeType(current).collection != nil))
            current = from
        }
        steps.append(Step(hold: .property(""), type: nodeType(start).name))
        return steps.reversed()
    }

    /// Whether the search for a cycle numbered `number` met `node`.
    private func cycleMet(_ node: Int32, number: UInt32) -> Bool {
        Int(node) < cycleMarks.count && cycleMarks[Int(node)] == number
    }

    /// Marks `node` met by the search numbered `number`, through its reference `metBy`. The tables
    /// grow with the objects (the search meets objects outside the walked heaps as it reads).
    private mutating func cycleMark(_ node: Int32, number: UInt32, metBy: Int32) {
        if Int(node) >= cycleMarks.count {
            let count = Swift.max(objects.count, Int(node) + 1)
            cycleMarks += repeatElement(0, count: count - cycleMarks.count)
            cycleMetBy += repeatElement(-1, count: count - cycleMetBy.count)
        }
        cycleMarks[Int(node)] = number
        cycleMetBy[Int(node)] = metBy
    }
}
