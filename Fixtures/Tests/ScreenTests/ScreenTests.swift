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
