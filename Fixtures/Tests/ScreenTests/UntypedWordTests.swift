// A word of untyped memory that points at an object without holding it, as a reused malloc
// block's stale word does. UntypedWordCycleTests' test case keeps a ring of two nodes: the ring
// outlives the test case (its leak), and the search from the test cases leaves the ring to the
// cycle; a malloc block in use, no Swift object, holds one node's address. The ring is its holder,
// not the block, which is read conservatively and named beside it
// (Tests/EndToEndTests/RetainersTests.swift). UntypedWordNodeTests, the clean twin, keeps one node
// that the same kind of word points at: kept by its test case, not failing.
import Foundation
import XCTest

final class RingNode {
    var next: RingNode?
    var label = "ring"
}

/// Writes `object`'s address, unretained, into a malloc block that stays in use (never freed),
/// as the stale word of a block's earlier owner reads.
func pointUntypedMemory(at object: AnyObject) {
    guard let block = malloc(40) else { return }
    memset(block, 0, 40)
    block.storeBytes(of: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), as: UInt.self)
    untypedBlocks.append(block)
}

/// The blocks `pointUntypedMemory` wrote: kept in use until the run ends.
nonisolated(unsafe) var untypedBlocks: [UnsafeMutableRawPointer] = []

final class UntypedWordCycleTests: XCTestCase {
    var ring: RingNode?

    func testKeepsARingThatAnUntypedWordPointsAt() {
        let first = RingNode()
        let second = RingNode()
        first.next = second
        second.next = first
        ring = first
        pointUntypedMemory(at: second)
    }
}

final class UntypedWordNodeTests: XCTestCase {
    var node: RingNode?

    func testKeepsANodeThatAnUntypedWordPointsAt() {
        let node = RingNode()
        self.node = node
        pointUntypedMemory(at: node)
    }
}
