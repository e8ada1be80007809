import Dispatch
// An XCTest bundle under leak-audit: ScreenTests/testLeaksScreens keeps its screens in a static
// list (over budget); ScreenTests/testReleasesScreens is its clean twin. Run one by name.
import LeakMonitor
import XCTest

final class ProfileScreen: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

enum ScreenHistory {
    nonisolated(unsafe) static var visited: [ProfileScreen] = []
}

final class ScreenTests: XCTestCase {
    func testLeaksScreens() {
        for _ in 0..<3 { ScreenHistory.visited.append(ProfileScreen()) }
        XCTAssertEqual(ScreenHistory.visited.count, 3)
    }

    func testReleasesScreens() {
        for _ in 0..<3 {
            let screen = ProfileScreen()
            XCTAssertNotNil(screen)
        }
    }
}

/// Releases its screen 20 ms after the test finishes, from work it started: not a leak once the
/// grace period covers it, a leak with `--grace-period 0`.
final class AsyncReleaseTests: XCTestCase {
    func testReleasesLater() {
        let screen = SettingsScreen()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { withExtendedLifetime(screen) {} }
    }
}

/// Global state: the one shared store, created by whichever test touches it first and kept for the
/// rest of the run. Not a leak of that test.
final class ThemeStore: MemoryLeakMonitorable {
    static let shared = ThemeStore()
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

final class ThemeTests: XCTestCase {
    func testUsesSharedTheme() {
        XCTAssertEqual(ThemeStore.shared.max, 1)
    }
}

/// A checkout controller whose dismissal closure captures it: a cycle that outlives its test.
/// CheckoutTests/testDismissLeaksController leaks it; testDismissReleasesController captures
/// weakly, its clean twin.
final class CheckoutController: MemoryLeakMonitorable {
    var max: Int { 1 }
    var onDismiss: (() -> Void)?
    private(set) var dismissed = false
    init() { MemoryLeakMonitor.validate(self) }
    func dismiss() { dismissed = true }
}

final class CheckoutTests: XCTestCase {
    func testDismissLeaksController() {
        let controller = CheckoutController()
        let title = "Checkout"
        controller.onDismiss = {
            controller.dismiss()
            _ = title
        }
        controller.onDismiss?()
        XCTAssertTrue(controller.dismissed)
    }

    func testDismissReleasesController() {
        let controller = CheckoutController()
        let title = "Checkout"
        controller.onDismiss = { [weak controller] in
            controller?.dismiss()
            _ = title
        }
        controller.onDismiss?()
        XCTAssertTrue(controller.dismissed)
    }
}
