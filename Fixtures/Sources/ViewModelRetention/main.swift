// A screen's view model stays alive after its presenter closes the screen, because a long-lived
// owner (an app-wide event hub) keeps a strong reference to it: the leak that motivated
// leak-audit. The clean twin unsubscribes on close.
import LeakMonitor

final class LoginViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    let title: String
    init(title: String) {
        self.title = title
        MemoryLeakMonitor.validate(self)
    }
}

/// Lives as long as the app; holds subscribers strongly.
final class EventHub {
    static let shared = EventHub()
    private var subscribers: [ObjectIdentifier: LoginViewModel] = [:]
    func subscribe(_ model: LoginViewModel) { subscribers[ObjectIdentifier(model)] = model }
    func unsubscribe(_ model: LoginViewModel) { subscribers[ObjectIdentifier(model)] = nil }
}

final class Presenter {
    private var current: LoginViewModel?
    let unsubscribesOnClose: Bool
    init(unsubscribesOnClose: Bool) { self.unsubscribesOnClose = unsubscribesOnClose }

    func open(_ title: String) {
        let model = LoginViewModel(title: title)
        EventHub.shared.subscribe(model)
        current = model
    }

    func close() {
        if unsubscribesOnClose, let model = current { EventHub.shared.unsubscribe(model) }
        current = nil
    }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let presenter = Presenter(unsubscribesOnClose: !leaky)
for screen in 1...3 {
    presenter.open("Login \(screen)")
    presenter.close()
}
print("ViewModelRetention: opened and closed 3 screens")
