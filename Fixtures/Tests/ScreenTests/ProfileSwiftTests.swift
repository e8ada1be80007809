// Swift Testing under leak-audit: `leaksSettings` keeps its screens in a static list (over
// budget, and left alive by the test); `releasesSettings` is its clean twin. They may run in
// parallel: each allocation must still name its own test.
import LeakMonitor
import Testing

final class SettingsScreen: MemoryLeakMonitorable {
    var max: Int { 2 }
    init() { MemoryLeakMonitor.validate(self) }
}

enum SettingsHistory {
    nonisolated(unsafe) static var visited: [SettingsScreen] = []
}

@Suite struct ProfileSwiftTests {
    @Test func leaksSettings() {
        for _ in 0..<3 { SettingsHistory.visited.append(SettingsScreen()) }
        #expect(SettingsHistory.visited.count == 3)
    }

    @Test func releasesSettings() {
        for _ in 0..<2 {
            let screen = SettingsScreen()
            #expect(screen.max == 2)
        }
    }
}
