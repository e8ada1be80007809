// A large heap with a few heavy leaks, for --retainers: 200,000 small objects stay alive as the
// app's background state (not leaked), and each of 50 photo screens leaves its view model, with
// its 100 KB of pixels, in a global thumbnail cache. The retaining path must be found among the
// background objects, and the retained size must count the pixels. The clean twin evicts each
// screen's entry when it closes.
import LeakMonitor

final class PhotoViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    let pixels = [UInt8](repeating: 0x7F, count: 100_000)
    init() { MemoryLeakMonitor.validate(self) }
}

/// The background: linked records the app keeps for its whole run.
final class Record {
    var next: Record?
    var value: Int
    init(value: Int, next: Record?) {
        self.value = value
        self.next = next
    }
}

final class ThumbnailCache {
    var byPhoto: [Int: PhotoViewModel] = [:]
}

final class AppState {
    var records: [Record] = []
    let thumbnails = ThumbnailCache()
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let app = AppState()
for chain in 0..<2_000 {
    var head: Record? = nil
    for value in 0..<100 { head = Record(value: chain * 100 + value, next: head) }
    if let head { app.records.append(head) }
}
for photo in 1...50 {
    let model = PhotoViewModel()
    app.thumbnails.byPhoto[photo] = model
    // The screen closes.
    if !leaky { app.thumbnails.byPhoto[photo] = nil }
}
print("LargeHeapRetention: \(app.records.count * 100) records, \(app.thumbnails.byPhoto.count) thumbnails kept")
