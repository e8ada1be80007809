// An allocation-heavy screen churn with two leaks, for scripts/compare-peers.sh, which runs it
// plain, under `leak-audit run` and under heaptrack, valgrind and AddressSanitizer.
//
//   LeakyChurn [leaky|clean] [monitored|unmonitored] [SCREENS]     (default: leaky monitored 1000)
//
// Every screen pushes a feed view model with rows, strings and a callback, and drops the previous
// one (the churn: about nine short-lived heap objects per screen). Every 40th screen also opens and
// closes a login screen, and every 50th (offset by 25) a checkout sheet: SCREENS / 40 and SCREENS /
// 50 of them, different counts so that a tool's report can be matched to one leak. The two leaks:
//
// - kept: a closed login screen's `LoginViewModel` stays subscribed to `SessionEvents.shared`,
//   an app-wide registry that holds subscribers strongly. It is still *reachable* (from a global),
//   so nothing is lost in the allocator's sense: the kind of leak leak-audit exists for.
// - cycle: a `CheckoutViewModel`'s dismissal closure captures the model strongly, and the model
//   keeps the closure: a retain cycle, *unreachable* once the presenter lets go of the model.
//
// `clean` fixes both (unsubscribe on close, capture weakly). `monitored` makes the view models call
// `MemoryLeakMonitor.validate` in `init` (what `leak-audit run` audits with no options);
// `unmonitored` runs the same code with the same types but never calls LeakMonitor, as a program
// that never adopted it: `leak-audit run --budget 'LeakyChurn.LoginViewModel=1' …` watches their
// allocations instead. Both modes allocate the leaked models on the same lines, so every tool
// audits the same two leaks. Prints `name value` lines on standard output.
import LeakMonitor

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String, status: Int32 = 64) -> Never {
    fputs("LeakyChurn: \(message)\n", stderr)
    exit(status)
}

let usage = "usage: LeakyChurn [leaky|clean] [monitored|unmonitored] [SCREENS]"
var arguments = Array(CommandLine.arguments.dropFirst())
let leaky = arguments.first != "clean"
if arguments.first == "leaky" || arguments.first == "clean" { arguments.removeFirst() }
/// Whether the view models call `validate` (set once, before any is created).
let monitored = arguments.first != "unmonitored"
if arguments.first == "monitored" || arguments.first == "unmonitored" { arguments.removeFirst() }
let screens = arguments.first.map { Int($0) ?? -1 } ?? 1000
guard arguments.count <= 1, screens > 0 else { fail(usage) }
// Counted by leak-audit from the record stream; never stop the process, whatever the build.
MemoryLeakMonitor.violationHandler = .ignore

// MARK: - Model objects (never tracked)

/// A row on a screen: untracked, like most of an app's small model objects.
final class RowModel {
    let label: String
    let priceInCents: Int
    var isSelected = false

    init(label: String, priceInCents: Int) {
        self.label = label
        self.priceInCents = priceInCents
    }
}

func makeRows(_ screen: Int) -> [RowModel] {
    (0..<4).map { RowModel(label: "item \(screen &+ $0)", priceInCents: (screen &* 31 &+ $0) % 10_000) }
}

/// Lives as long as the app and keeps its subscribers strongly until they unsubscribe.
final class SessionEvents {
    static let shared = SessionEvents()
    private var subscribers: [ObjectIdentifier: AnyObject] = [:]
    var count: Int { subscribers.count }
    func subscribe(_ subscriber: AnyObject) { subscribers[ObjectIdentifier(subscriber)] = subscriber }
    func unsubscribe(_ subscriber: AnyObject) { subscribers[ObjectIdentifier(subscriber)] = nil }
}

// MARK: - View models (tracked when monitored)

/// The feed: a navigation push creates the next screen while the current one is still shown, so
/// two are alive at once at most. Never leaks.
final class FeedViewModel: MemoryLeakMonitorable {
    var max: Int { 2 }
    let title: String
    let rows: [RowModel]
    /// A callback the view would hold; captures the model weakly, as a view's action does.
    private(set) var onSelect: ((Int) -> Void)?

    init(screen: Int) {
        title = "Screen \(screen) of the product feed"
        rows = makeRows(screen)
        if monitored { MemoryLeakMonitor.validate(self) }
        onSelect = { [weak self] row in self?.select(row: row) }
    }

    func select(row: Int) {
        for (index, model) in rows.enumerated() { model.isSelected = index == row }
    }

    func render() -> Int {
        let total = rows.reduce(0) { $0 &+ $1.priceInCents }
        let summary = "\(rows.count) items, \(total) cents: \(title)"
        return summary.utf8.count &+ total
    }
}

/// A login screen's model; it listens to session events while its screen is open. One at a time.
final class LoginViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    let user: String
    let rows: [RowModel]

    init(user: String, screen: Int) {
        self.user = user
        rows = makeRows(screen)
        if monitored { MemoryLeakMonitor.validate(self) }
    }
}

/// A checkout sheet's model; its dismissal callback is set by the presenter. One at a time.
final class CheckoutViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    let cart: [RowModel]
    var onDismiss: (() -> Void)?
    private(set) var dismissed = false

    init(screen: Int) {
        cart = makeRows(screen)
        if monitored { MemoryLeakMonitor.validate(self) }
    }

    func dismissTapped() { onDismiss?() }
    func didDismiss() { dismissed = true }
}

// MARK: - Navigation

final class Presenter {
    private var feed: FeedViewModel?
    private var login: LoginViewModel?
    private var checkout: CheckoutViewModel?
    private(set) var checkoutsOpened = 0
    var checksum = 0

    func pushFeed(_ screen: Int) {
        let next = FeedViewModel(screen: screen)
        next.onSelect?(screen % 4)
        checksum = checksum &+ next.render()
        feed = next
    }

    func openLogin(_ screen: Int) {
        let model = LoginViewModel(user: "user\(screen)@example.com", screen: screen)
        SessionEvents.shared.subscribe(model)
        login = model
    }

    func closeLogin() {
        // The bug: the leaky version forgets to unsubscribe, so the registry keeps the model.
        if !leaky, let model = login { SessionEvents.shared.unsubscribe(model) }
        login = nil
    }

    func openCheckout(_ screen: Int) {
        let model = CheckoutViewModel(screen: screen)
        if leaky {
            model.onDismiss = { model.didDismiss() }  // the bug: the model keeps a closure that keeps it
        } else {
            model.onDismiss = { [weak model] in model?.didDismiss() }
        }
        checkout = model
        checkoutsOpened += 1
    }

    func closeCheckout() {
        checkout?.dismissTapped()
        checksum = checksum &+ (checkout?.cart.count ?? 0)
        checkout = nil
    }
}

/// The highest resident set size of this process so far, in kB (VmHWM), or 0.
func peakResidentKilobytes() -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(cString: line)
        if text.hasPrefix("VmHWM:") {
            // "VmHWM:\t   13888 kB": the first word after the colon.
            let words = text.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" })
            return words.first.flatMap { Int($0) } ?? 0
        }
    }
    return 0
}

func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

// MARK: - Entry point

let start = monotonicNanoseconds()
let presenter = Presenter()
for screen in 0..<screens {
    presenter.pushFeed(screen)
    if screen % 40 == 0 {
        presenter.openLogin(screen)
        presenter.closeLogin()
    } else if screen % 50 == 25 {
        presenter.openCheckout(screen)
        presenter.closeCheckout()
    }
}
let elapsed = monotonicNanoseconds() - start

print("mode \(leaky ? "leaky" : "clean") \(monitored ? "monitored" : "unmonitored")")
print("screens \(screens)")
print("kept-login-models \(SessionEvents.shared.count)")
print("checkouts-opened \(presenter.checkoutsOpened)")
print("churn-ms \(Double(elapsed / 10_000) / 100)")
print("peak-rss-kb \(peakResidentKilobytes())")
print("attached \(MemoryLeakMonitor.isAttachedToLeakAudit)")
print("checksum \(presenter.checksum)")
// LeakSanitizer ends the process with _exit after its report: flush what was printed first.
fflush(stdout)
