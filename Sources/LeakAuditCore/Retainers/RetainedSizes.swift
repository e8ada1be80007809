// What each instance alone keeps alive: the dominator tree of every strong reference, the sums
// of its subtrees, and which instances lie inside another of their type.

extension RetainerSearch {
    /// Each node's retained size (the bytes of its dominator subtree) and its immediate dominator
    /// (-1: the virtual root), over the graph of every strong reference, entered from the roots'
    /// objects, then `extraEntries` if unreached, then any object still unreached
    /// (`DominatorTree`: near-linear on any shape of heap, and no recursion). With
    /// `releasingNodes` the last use of the search: its node tables are released on the way;
    /// without, nodes can still be looked up and paths found (`leak-audit inspect`). `preorder`
    /// lists every node after its dominator.
    mutating func retainedSizes(extraEntries: [Int32], releasingNodes: Bool = true) -> (
        retained: [Int], dominators: [Int32], preorder: [Int32]
    ) {
        // Successors of every node, once. Reading a node's references can find an object outside
        // the walked heaps that no search has met yet: it becomes a node, and is read in turn.
        var successorStart: [UInt32] = []
        successorStart.reserveCapacity(objects.count + 1)
        var successors: [Int32] = []
        var next = 0
        while next < objects.count {
            successorStart.append(UInt32(truncatingIfNeeded: successors.count))
            forEachReference(of: Int32(next)) { _, target, _, _ in successors.append(target) }
            next += 1
        }
        successorStart.append(UInt32(truncatingIfNeeded: successors.count))
        precondition(successors.count < Int(UInt32.max), "more strong references than a 32-bit index counts")
        // Every reference is read: of the nodes, only their sizes are needed from here, and the
        // rest (addresses, types, the graph of unreached objects: 12 bytes a node and more) makes
        // room for the tree's tables. No node can be looked up after this.
        let nodeCount = objects.count
        if releasingNodes {
            (objects, nodeTypeIndexes, otherNodes, walkedHeaps, enumeratedCount) = ([], [], [:], [], 0)
            (heapWalk, freeBlocks, streams) = (MallocHeap.Walk(), MallocHeap.FreeBlocks(), [])
            enumeratedOutsideHeaps = []
            unreachedGraph = nil
        }
        let tree = DominatorTree(
            nodeCount: nodeCount, successorStart: consume successorStart, successors: consume successors,
            entries: seeds + extraEntries)
        // Subtree sums, what a node dominates before it (reverse preorder).
        var retained = (0..<Int32(nodeCount)).map { size(of: $0) }
        for node in tree.preorder.reversed() {
            let up = tree.dominators[Int(node)]
            if up >= 0 { retained[Int(up)] += retained[Int(node)] }
        }
        return (retained, tree.dominators, tree.preorder)
    }

    /// The `instances` (nodes, with their type names) that another of them, of the same type name,
    /// dominates: one depth-first pass over the dominator tree (its own stack, no recursion),
    /// counting on the way down the instances of each type name above the current node.
    static func instancesInsideAnother(_ instances: [(node: Int32, type: String)], dominators: [Int32]) -> [Int32] {
        var nameIndexes: [String: Int32] = [:]
        var instanceName = [Int32: Int32]()  // node -> its type name's index
        for (node, name) in instances {
            let index = nameIndexes[name] ?? Int32(nameIndexes.count)
            nameIndexes[name] = index
            instanceName[node] = index
        }
        // The dominator tree's children, compact.
        let count = dominators.count
        var childStart = [UInt32](repeating: 0, count: count + 2)
        for up in dominators { childStart[Int(up) + 2] += 1 }  // -1 (the virtual root) at index 1
        for index in 0..<count + 1 { childStart[index + 1] += childStart[index] }
        var children = [Int32](repeating: 0, count: count)
        var filled = childStart
        for (node, up) in dominators.enumerated() {
            children[Int(filled[Int(up) + 1])] = Int32(node)
            filled[Int(up) + 1] += 1
        }
        filled = []
        var above = [Int32](repeating: 0, count: nameIndexes.count)
        var inside: [Int32] = []
        // (node, next child): -1 is the virtual root; a node's count is taken off when it is left.
        var work: [(node: Int32, child: UInt32)] = [(-1, childStart[0])]
        while let (node, child) = work.last {
            guard child < childStart[Int(node) + 2] else {
                work.removeLast()
                if let name = instanceName[node] { above[Int(name)] -= 1 }
                continue
            }
            work[work.count - 1].child += 1
            let next = children[Int(child)]
            if let name = instanceName[next] {
                if above[Int(name)] > 0 { inside.append(next) }
                above[Int(name)] += 1
            }
            work.append((next, childStart[Int(next) + 1]))
        }
        return inside
    }
}
