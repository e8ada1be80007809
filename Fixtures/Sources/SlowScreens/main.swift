// ViewModelRetention's leak, slowly: each screen's view model stays subscribed to an app-wide hub
// after the screen closes. The program pauses half a second at each step and says what it does,
// half a line at a time, so that leak-audit's live status line on a terminal has a running target
// whose output it must not break (Tests/EndToEndTests/TerminalTests.swift). The clean twin
// unsubscribes on close.
import Foundation
import LeakMonitor

final class ScreenViewModel: MemoryLeakMonitorable {
    var max: Int { 2 }
    let title: String
    init(title: String) {
        self.title = title
        MemoryLeakMonitor.validate(self)
    }
}

/// Lives as long as the app; holds subscribers strongly.
final class ScreenHub {
    static let shared = ScreenHub()
    private var subscribers: [ObjectIdentifier: ScreenViewModel] = [:]
    func subscribe(_ model: ScreenViewModel) { subscribers[ObjectIdentifier(model)] = model }
    func unsubscribe(_ model: ScreenViewModel) { subscribers[ObjectIdentifier(model)] = nil }
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let screens = 4
for screen in 1...screens {
    let model = ScreenViewModel(title: "Screen \(screen)")
    ScreenHub.shared.subscribe(model)
    // Half a line, a pause, then the rest: the status line must not land in between.
    print("SlowScreens: screen \(screen) of \(screens) open, closing it…", terminator: "")
    fflush(stdout)
    usleep(500_000)
    if !leaky { ScreenHub.shared.unsubscribe(model) }
    print(" closed")
    fflush(stdout)
    usleep(500_000)
}
print("SlowScreens: done")
