// Two observers that keep a screen's view model after the screen closed, for --retainers: a
// NotificationCenter block that captures the profile view model, never removed; and an
// Observation onChange closure that captures the cart view model while a global cart holds the
// registration. Three screens of each open and close, one at a time (budgets of 1). The clean
// twin captures weakly and removes the observer when the screen closes.
import Foundation
import LeakMonitor
import Observation

extension Notification.Name {
    static let profileChanged = Notification.Name("ObserverRetention.profileChanged")
}

final class ProfileViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    private(set) var refreshes = 0
    init() { MemoryLeakMonitor.validate(self) }
    func refresh() { refreshes += 1 }
}

@Observable final class Cart {
    var items: [String] = []
}

final class CartViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    private(set) var refreshes = 0
    init() { MemoryLeakMonitor.validate(self) }

    func observe(_ cart: Cart, weakly: Bool) {
        if weakly {
            withObservationTracking({ _ = cart.items }, onChange: { [weak self] in self?.refresh() })
        } else {
            withObservationTracking({ _ = cart.items }, onChange: { self.refresh() })
        }
    }

    func refresh() { refreshes += 1 }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let cart = Cart()

for screen in 1...3 {
    let profile = ProfileViewModel()
    let token: NSObjectProtocol
    if leaky {
        token = NotificationCenter.default.addObserver(forName: .profileChanged, object: nil, queue: nil) { _ in
            profile.refresh()
        }
    } else {
        token = NotificationCenter.default.addObserver(forName: .profileChanged, object: nil, queue: nil) {
            [weak profile] _ in profile?.refresh()
        }
    }
    let cartModel = CartViewModel()
    cartModel.observe(cart, weakly: !leaky)
    NotificationCenter.default.post(name: .profileChanged, object: nil)
    // The screen closes.
    if !leaky {
        NotificationCenter.default.removeObserver(token)
        // A change fires and drops the tracking closure.
        cart.items.append("item \(screen)")
    }
}
print("ObserverRetention: opened and closed 3 screens")
