/// The immediate dominators of a graph of strong references entered from a virtual root, by
/// Lengauer and Tarjan's algorithm with path compression (the simple version: O(m log n)), with
/// no recursion: the target chooses the graph, so its depth-first search, its path compression
/// and its buckets use arrays of their own, never the call stack. A chain of a million objects
/// each holding the next, the last holding them all, costs a few passes over its nodes and edges.
///
/// The graph is compact: `successors[successorStart[node]..<successorStart[node + 1]]` are what
/// `node` holds. The virtual root holds each of `entries`, then every node that none of those
/// reaches, in node order, each entered only if no earlier one reached it (the order a report's
/// roots are searched in; the dominators themselves do not depend on it).
struct DominatorTree {
    /// Each node's immediate dominator, or -1 for the virtual root.
    private(set) var dominators: [Int32]
    /// The nodes in the depth-first search's preorder: each comes after its dominator, so that
    /// sums over dominator subtrees run from the last to the first.
    private(set) var preorder: [Int32]
    /// The elementary steps taken (edges followed, path links compressed, dominators raised):
    /// near-linear in nodes and edges whatever the graph's shape, which tests check without a clock.
    private(set) var steps = 0

    /// Takes the successor lists (`consume` them): they are released as soon as the
    /// predecessor lists are built from them, so that both are never held with the rest.
    init(nodeCount count: Int, successorStart starts: consuming [UInt32], successors edges: consuming [Int32], entries: [Int32]) {
        var successorStart = consume starts
        var successors = consume edges
        precondition(successorStart.count == count + 1, "one start per node and the end")
        // Depth-first numbering from the virtual root (number 0): `number[node]` is the node's
        // preorder number, 0 until it is reached; `vertex` is by number. `ancestor` (by number)
        // is the forest of the semidominator step, and holds each vertex's depth-first parent
        // `p` as `-p - 1` until the vertex is linked to it (negative: not linked).
        var number = [Int32](repeating: 0, count: count)
        var vertex = [Int32](repeating: -1, count: count + 1)
        var ancestor = [Int32](repeating: -1, count: count + 1)
        var reached: Int32 = 0
        var work: [(node: Int32, edge: UInt32)] = []
        var steps = 0
        func enter(_ entry: Int32) {
            guard number[Int(entry)] == 0 else { return }
            reached += 1
            number[Int(entry)] = reached
            vertex[Int(reached)] = entry
            ancestor[Int(reached)] = -1  // the virtual root's child
            work.append((entry, successorStart[Int(entry)]))
            while let (node, edge) = work.last {
                guard edge < successorStart[Int(node) + 1] else {
                    work.removeLast()
                    continue
                }
                steps += 1
                work[work.count - 1].edge += 1
                let target = successors[Int(edge)]
                guard number[Int(target)] == 0 else { continue }
                reached += 1
                number[Int(target)] = reached
                vertex[Int(reached)] = target
                ancestor[Int(reached)] = -number[Int(node)] - 1
                work.append((target, successorStart[Int(target)]))
            }
        }
        for entry in entries where entry >= 0 && Int(entry) < count { enter(entry) }
        for node in 0..<count { enter(Int32(node)) }
        work = []
        let total = Int(reached)  // every node: the last loop entered each one not reached before
        // Predecessors by number, compact like the successors.
        var predecessorStart = [UInt32](repeating: 0, count: total + 2)
        for target in successors { predecessorStart[Int(number[Int(target)]) + 1] += 1 }
        for index in 0..<total + 1 { predecessorStart[index + 1] += predecessorStart[index] }
        var predecessors = [Int32](repeating: 0, count: successors.count)
        // Filled from each list's end, the end moving down: each start is where it ends up.
        for index in 0..<total + 1 { predecessorStart[index] = predecessorStart[index + 1] }
        for node in 0..<count {
            let from = number[node]
            for index in Int(successorStart[node])..<Int(successorStart[node + 1]) {
                let to = Int(number[Int(successors[index])])
                predecessorStart[to] -= 1
                predecessors[Int(predecessorStart[to])] = from
            }
        }
        number = []
        successorStart = []
        successors = []
        // Semidominators, in reverse preorder, with a forest linked as they are found; each
        // vertex's dominator is settled from the bucket of its semidominator's parent.
        var semi = (0...total).map(Int32.init)
        var label = semi
        var dominator = [Int32](repeating: 0, count: total + 1)
        // Each bucket is a list through `dominator`: a vertex's slot there is free until it
        // leaves its bucket, when its dominator is written.
        var bucketHead = [Int32](repeating: -1, count: total + 1)
        var path: [Int32] = []
        // The vertex of least semidominator on the forest path from `vertex` up to (but not
        // including) its tree's root, compressing the path on the way.
        func evaluate(_ vertex: Int32) -> Int32 {
            guard ancestor[Int(vertex)] >= 0 else { return vertex }
            var current = vertex
            while ancestor[Int(ancestor[Int(current)])] >= 0 {
                path.append(current)
                current = ancestor[Int(current)]
            }
            while let next = path.popLast() {
                steps += 1
                let up = ancestor[Int(next)]
                if semi[Int(label[Int(up)])] < semi[Int(label[Int(next)])] { label[Int(next)] = label[Int(up)] }
                ancestor[Int(next)] = ancestor[Int(up)]
            }
            return label[Int(vertex)]
        }
        var current = total
        while current >= 1 {
            let up = -ancestor[current] - 1  // its parent: not linked yet
            if up == 0 {
                semi[current] = 0  // an entry: the virtual root holds it
            } else {
                for index in Int(predecessorStart[current])..<Int(predecessorStart[current + 1]) {
                    steps += 1
                    let least = evaluate(predecessors[index])
                    if semi[Int(least)] < semi[current] { semi[current] = semi[Int(least)] }
                }
            }
            let semidominator = Int(semi[current])
            dominator[current] = bucketHead[semidominator]
            bucketHead[semidominator] = Int32(current)
            ancestor[current] = up
            var waiting = bucketHead[Int(up)]
            bucketHead[Int(up)] = -1
            while waiting >= 0 {
                steps += 1
                let least = evaluate(waiting)
                let next = dominator[Int(waiting)]
                dominator[Int(waiting)] = semi[Int(least)] < semi[Int(waiting)] ? least : up
                waiting = next
            }
            current -= 1
        }
        // What the last passes need is the numbering, the semidominators and the dominators so
        // far: the rest goes before the table by node is made, which takes its place.
        (ancestor, label, bucketHead, predecessorStart, predecessors) = ([], [], [], [], [])
        for index in stride(from: 1, through: total, by: 1) where dominator[index] != semi[index] {
            steps += 1
            dominator[index] = dominator[Int(dominator[index])]
        }
        semi = []
        var dominators = [Int32](repeating: -1, count: count)
        for index in stride(from: 1, through: total, by: 1) where dominator[index] > 0 {
            dominators[Int(vertex[index])] = vertex[Int(dominator[index])]
        }
        dominator = []
        self.dominators = dominators
        // The preorder is the numbering without the virtual root's slot, shifted in place.
        vertex.removeFirst()
        self.preorder = vertex
        self.steps = steps
    }
}
