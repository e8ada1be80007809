// A test case's property holds a Reactor whose `metrics` (a `ReactorMetrics?`, as swift-nio's
// `SelectableEventLoop.metricsDelegateState`) is nil, but its words are not all zero: code that
// builds the nil in a temporary (`Optional.map` in NIO) and copies all 48 bytes leaves there
// whatever the temporary held, here the Reactor's own address. The nil is the existential's
// metadata word 0 (its extra inhabitant); its buffer words and `since` are stale. Read as
// references, they close a cycle Reactor → Reactor, which the search from the test cases does not
// enter (a cycle outlives its test case): a false unreachable cycle. Read by the value's layout
// (the existential holds nothing without metadata, `since` is a plain `UInt64` named by the
// standard library's descriptor), it holds nothing, and the test case reaches the Reactor.
// Clean: nothing is unreachable (Tests/EndToEndTests/UnreachableTests.swift).

import XCTest

protocol ReactorDelegate: Sendable {
    func tickEnded()
}

/// An existential (three buffer words, metadata, a witness table), then a plain word.
struct ReactorMetrics {
    var delegate: any ReactorDelegate
    var since: UInt64
}

final class Reactor {
    var metrics: ReactorMetrics?
    var ticks: [Int] = [1, 2, 3]
}

final class NilOptionalTests: XCTestCase {
    var reactor: Reactor?

    func testKeepsReactorWithStaleNilMetrics() {
        let reactor = Reactor()
        let address = UInt(bitPattern: Unmanaged.passUnretained(reactor).toOpaque())
        // Every word but the metadata's (word 3): the value stays nil.
        withUnsafeMutableBytes(of: &reactor.metrics) { bytes in
            XCTAssertEqual(bytes.count, 48)
            for word in [0, 1, 2, 4, 5] { bytes.storeBytes(of: address, toByteOffset: word * 8, as: UInt.self) }
        }
        XCTAssertNil(reactor.metrics)
        // The stale words must be in the instance (the property at offset 16): else the test they
        // serve cannot fail.
        let instance = UnsafeRawPointer(Unmanaged.passUnretained(reactor).toOpaque())
        let stale = [0, 1, 2, 4, 5].filter { instance.load(fromByteOffset: 16 + $0 * 8, as: UInt.self) == address }
        XCTAssertEqual(stale, [0, 1, 2, 4, 5], "no stale words in the instance")
        XCTAssertEqual(instance.load(fromByteOffset: 16 + 3 * 8, as: UInt.self), 0)
        self.reactor = reactor
    }
}
