import XCTest

@testable import LeakAuditCore

/// The dominator tree of the heap (retained sizes): the same dominators as their definition says,
/// in near-linear steps whatever shape the target gives its heap, with no recursion.
final class DominatorTreeTests: XCTestCase {
    /// A graph as successor lists, made compact.
    private func tree(_ successors: [[Int32]], entries: [Int32]) -> DominatorTree {
        var starts: [UInt32] = [0]
        var flat: [Int32] = []
        for list in successors {
            flat += list
            starts.append(UInt32(flat.count))
        }
        return DominatorTree(nodeCount: successors.count, successorStart: starts, successors: flat, entries: entries)
    }

    /// The dominators by their definition: the virtual root holds each entry, then each node
    /// no earlier entry reached; a node's dominators are the nodes on every path to it, found by
    /// iterating sets until none changes. -1: the virtual root.
    private func referenceDominators(_ successors: [[Int32]], entries: [Int32]) -> [Int32] {
        let count = successors.count
        var reached = Set<Int32>()
        var roots: [Int32] = []
        for entry in entries + (0..<Int32(count)) where !reached.contains(entry) {
            roots.append(entry)
            var pending = [entry]
            reached.insert(entry)
            while let node = pending.popLast() {
                for next in successors[Int(node)] where reached.insert(next).inserted { pending.append(next) }
            }
        }
        var predecessors = [[Int32]](repeating: [], count: count)
        for (node, list) in successors.enumerated() { for next in list { predecessors[Int(next)].append(Int32(node)) } }
        let all = Set(0..<Int32(count))
        var dominators = (0..<count).map { roots.contains(Int32($0)) ? [Int32($0)] : all }
        var changed = true
        while changed {
            changed = false
            for node in 0..<count where !roots.contains(Int32(node)) {
                var meet = all
                for predecessor in predecessors[node] { meet.formIntersection(dominators[Int(predecessor)]) }
                meet.insert(Int32(node))
                if meet != dominators[node] {
                    dominators[node] = meet
                    changed = true
                }
            }
        }
        // The immediate dominator: the strict dominator that every other strict dominator dominates.
        return (0..<count).map { node in
            let strict = dominators[node].subtracting([Int32(node)])
            return strict.first { candidate in strict.isSubset(of: dominators[Int(candidate)]) } ?? -1
        }
    }

    func testRandomGraphsHaveTheDominatorsOfTheDefinition() {
        var state: UInt64 = 0x5EED_D0D0
        func random(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        for round in 0..<300 {
            let count = 1 + random(24)
            let successors = (0..<count).map { _ in (0..<random(4)).map { _ in Int32(random(count)) } }
            let entries = (0..<random(3)).map { _ in Int32(random(count)) }
            XCTAssertEqual(
                tree(successors, entries: entries).dominators, referenceDominators(successors, entries: entries),
                "round \(round): \(successors), entries \(entries)")
        }
    }

    /// Issue 29's chain: each object holds one more, the last holds them all. Cooper, Harvey and
    /// Kennedy's algorithm took about n²/2 steps on it (49.6 s at 160,000 objects).
    func testAChainWhoseLastObjectHoldsThemAllTakesNearLinearSteps() {
        let count = 100_000
        let successors: [[Int32]] = (0..<count).map { node in
            node + 1 < count ? [Int32(node + 1)] : (0..<Int32(count)).map { $0 }
        }
        let tree = tree(successors, entries: [0])
        XCTAssertEqual(tree.dominators[0], -1)
        XCTAssertTrue((1..<count).allSatisfy { tree.dominators[$0] == Int32($0 - 1) })
        let edges = 2 * count - 1
        XCTAssertLessThanOrEqual(tree.steps, 8 * (count + edges), "steps on \(count) objects")
    }

    /// A million objects deep: no recursion, and every node below the one before it.
    func testAMillionObjectChainIsWalkedWithoutRecursion() {
        let count = 1_000_000
        let starts = (0...count).map { UInt32(Swift.min($0, count - 1)) }
        let successors = (1..<count).map(Int32.init)
        let tree = DominatorTree(nodeCount: count, successorStart: starts, successors: successors, entries: [0])
        XCTAssertEqual(tree.preorder.count, count)
        XCTAssertEqual(tree.preorder.first, 0)
        XCTAssertEqual(tree.dominators[count - 1], Int32(count - 2))
        XCTAssertLessThanOrEqual(tree.steps, 4 * count)
    }

    /// Nodes no entry reaches are entered in node order, each dominated by the virtual root only
    /// when nothing entered earlier reaches it.
    /// `leak-audit inspect`'s largest: the nodes that retain the most, none inside the dominator
    /// subtree of one taken before (a chain is one entry, not each of its links).
    func testTheLargestAreTakenOutsideEachOthersSubtrees() {
        // 0 holds a chain 1 → 2 → 3; 4 is alone; 5 holds 6.
        let dominators: [Int32] = [-1, 0, 1, 2, -1, -1, 5]
        let retained = [100, 90, 80, 70, 60, 30, 20]
        XCTAssertEqual(HeapInspection.largestNodes(retained: retained, dominators: dominators, count: 10), [0, 4, 5])
        XCTAssertEqual(HeapInspection.largestNodes(retained: retained, dominators: dominators, count: 2), [0, 4])
        XCTAssertEqual(HeapInspection.largestNodes(retained: retained, dominators: dominators, count: 0), [])
        // A million-link chain: one entry, found without walking it once per link.
        let count = 1_000_000
        let chain = (0..<Int32(count)).map { $0 - 1 }
        let sizes = (0..<count).map { count - $0 }
        XCTAssertEqual(HeapInspection.largestNodes(retained: sizes, dominators: chain, count: 10), [0])
    }

    func testUnreachedNodesAreEnteredInOrder() {
        // 0 → 1; 2 → 3 → 1; 4 alone holding itself.
        let tree = tree([[1], [], [3], [1], [4]], entries: [2])
        XCTAssertEqual(tree.dominators, [-1, -1, -1, 2, -1])
        XCTAssertEqual(tree.preorder, [2, 3, 1, 0, 4])
    }
}
