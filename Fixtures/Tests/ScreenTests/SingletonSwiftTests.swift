// Swift Testing tests that leave an object in a global's storage. `makesTheAlmanac` is the first
// to use `Almanac.shared`, a `static let`: nothing can release the almanac, so a process whose
// last test it is waits for no grace period. With FIXTURE_SHOP_SESSION set, `opensASession`
// stores a session in a `static var` of the same kind and leaves work in flight that replaces it
// 1.5 s later: a process whose last test it is waits for the grace period, within which the
// session is released (without the wait, it would be its leak).
import Dispatch
import Foundation
import Testing

final class Almanac {
    static let shared = Almanac()
    let season = "spring"
}

final class ShopSession {
    let customer: String
    init(customer: String) { self.customer = customer }
}

enum ShopSessions {
    nonisolated(unsafe) static var current = ShopSession(customer: "guest")
}

@Suite struct AlmanacSwiftTests {
    @Test func makesTheAlmanac() {
        #expect(Almanac.shared.season == "spring")
    }
}

@Suite struct ShopSessionSwiftTests {
    @Test func opensASession() {
        guard ProcessInfo.processInfo.environment["FIXTURE_SHOP_SESSION"] != nil else { return }
        ShopSessions.current = ShopSession(customer: "ada")
        #expect(ShopSessions.current.customer == "ada")
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1500)) {
            ShopSessions.current = ShopSession(customer: "guest")
        }
    }
}
