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
