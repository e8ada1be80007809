// Five ways a screen's model outlives the screen, each with a different holder, for --retainers:
// a detached task that never ends and captures its view model; an image model kept by two nodes
// that hold each other (a cycle it is not part of); a request model in an enum payload of a
// global session's history; a document kept by a store, which a watcher also refers to weakly
// and unowned (the watcher must never be named as its holder); and an upload model in a local
// variable of a thread that waits forever. Three screens open and close, one at a time (every
// budget is 1). The clean twin cancels each task and waits for it, breaks the cycle, clears the
// history, closes the document, and lets each upload thread finish.
import Foundation
import LeakMonitor

final class PollingViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    private(set) var ticks = 0
    init() { MemoryLeakMonitor.validate(self) }
    func poll() async { ticks += 1 }
}

final class ImageViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    /// 2 MB, so that what it keeps alive shows.
    let pixels = [UInt8](repeating: 7, count: 2_000_000)
    init() { MemoryLeakMonitor.validate(self) }
}

final class GraphNode {
    var next: GraphNode?
    var image: ImageViewModel?
}

final class RequestViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

enum LoadState {
    case idle
    case loading(RequestViewModel)
    case failed(code: Int)
}

final class Session {
    var state: LoadState = .idle
    var history: [LoadState] = []
}

final class DocumentViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
}

/// Looks at a document without keeping it.
final class Watcher {
    weak var watched: DocumentViewModel?
    unowned let owner: DocumentViewModel
    init(_ document: DocumentViewModel) {
        watched = document
        owner = document
    }
}

final class UploadViewModel: MemoryLeakMonitorable {
    var max: Int { 1 }
    init() { MemoryLeakMonitor.validate(self) }
    func finish() {}
}

/// Runs on its own thread; the model lives in this function's frame until the upload is released,
/// and is gone before `done` says so (a debug build keeps a local until its scope ends: released
/// after `done`, it raced the next screen's upload and made two at once in the clean twin).
func uploadLoop(started: DispatchSemaphore, release: DispatchSemaphore, done: DispatchSemaphore) {
    do {
        let model = UploadViewModel()
        started.signal()
        release.wait()
        model.finish()
    }
    done.signal()
}

final class DocumentStore {
    var open: [DocumentViewModel] = []
}

let leaky = CommandLine.arguments.dropFirst().first != "clean"
let session = Session()
let store = DocumentStore()
var watchers: [Watcher] = []

func openScreen() async {
    let model = PollingViewModel()
    let task = Task.detached {
        while !Task.isCancelled {
            await model.poll()
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
    }
    let first = GraphNode()
    let second = GraphNode()
    first.next = second
    second.next = first
    first.image = ImageViewModel()
    session.state = .loading(RequestViewModel())
    session.history.append(session.state)
    let document = DocumentViewModel()
    watchers.append(Watcher(document))
    store.open.append(document)
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    Thread { uploadLoop(started: started, release: release, done: done) }.start()
    started.wait()
    try? await Task.sleep(nanoseconds: 20_000_000)
    // The screen closes.
    if !leaky {
        task.cancel()
        await task.value
        first.next = nil
        session.state = .idle
        session.history.removeAll()
        store.open.removeAll()
        release.signal()
        done.wait()
    }
}

for _ in 1...3 { await openScreen() }
print("RetainerKinds: opened and closed 3 screens")
