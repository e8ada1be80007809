// A cache that a static's initializer fills once, on a Dispatch queue, the first time it is read (as
// a library loads the system's trust roots into `static let cachedRoots = queue.loading { … }`):
// the roots are made on a queue's thread, by a closure of the static's initializer expression, under
// no one-time initializer. With --retainers: TrustRootTests/testLoadsTheTrustRoots leaves the 3
// roots alive, global state (the global's own initializer made them and the global keeps them);
// TrustRootTests/testTrustsAnExtraRoot hands a root it made to that cache: its leak.
import Dispatch
import Foundation
import XCTest

final class TrustRoot: Sendable {
    let name: String
    init(name: String) { self.name = name }
}

/// A value a queue makes, waited for by whoever reads it.
final class Loaded<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value? = nil

    func fulfil(_ made: Value) {
        condition.lock()
        value = made
        condition.broadcast()
        condition.unlock()
    }

    func update(_ change: (inout Value) -> Void) {
        condition.lock()
        while value == nil { condition.wait() }
        if var current = value {
            change(&current)
            value = current
        }
        condition.unlock()
    }

    var wait: Value {
        condition.lock()
        defer { condition.unlock() }
        while value == nil { condition.wait() }
        return value!
    }
}

extension DispatchQueue {
    /// `body`'s value, made on this queue.
    func loading<Value>(_ body: @escaping @Sendable () -> Value) -> Loaded<Value> {
        let loaded = Loaded<Value>()
        async { loaded.fulfil(body()) }
        return loaded
    }
}

enum TrustStore {
    static let cachedRoots = DispatchQueue(label: "trust-roots").loading {
        (0..<3).map { TrustRoot(name: "root \($0)") }
    }
}

final class TrustRootTests: XCTestCase {
    func testLoadsTheTrustRoots() {
        XCTAssertEqual(TrustStore.cachedRoots.wait.count, 3)
    }

    func testTrustsAnExtraRoot() {
        let extra = TrustRoot(name: "extra")
        TrustStore.cachedRoots.update { $0.append(extra) }
        XCTAssertEqual(TrustStore.cachedRoots.wait.count, 4)
    }
}
