// A program that does not use LeakMonitor at all: leak-audit watches its view models by pattern
// (`--budget 'UninstrumentedGallery.*ViewModel=1'`). The leaky gallery keeps every screen's view
// model in a history it never trims; the clean twin keeps only the screen on show. It also starts
// a non-Swift child process, which must still run with leak-audit's library preloaded.
import Foundation

final class GalleryViewModel {
    let album: String
    var thumbnails: [ThumbnailLoader] = []
    init(album: String) { self.album = album }
}

final class ThumbnailLoader {
    let index: Int
    init(index: Int) { self.index = index }
}

final class Navigator {
    private var history: [GalleryViewModel] = []
    private var current: GalleryViewModel?
    let keepsHistory: Bool
    init(keepsHistory: Bool) { self.keepsHistory = keepsHistory }

    func show(_ album: String) {
        current = nil  // the screen on show closes before the next one opens
        let model = GalleryViewModel(album: album)
        model.thumbnails = (0..<4).map { ThumbnailLoader(index: $0) }
        if keepsHistory { history.append(model) }
        current = model
    }
}

/// A ManagedBuffer subclass: an unoptimized build allocates it inside the standard library.
final class ThumbnailCache: ManagedBuffer<Int, Int> {}

/// A type declared inside a function: the runtime names it by an address that changes every run.
func makeSessionToken() -> AnyObject {
    final class SessionToken {}
    return SessionToken()
}

let token = makeSessionToken()
let caches = (0..<2).map { _ in ThumbnailCache.create(minimumCapacity: 4) { _ in 0 } }
let leaky = CommandLine.arguments.dropFirst().first != "clean"
let navigator = Navigator(keepsHistory: leaky)
for album in ["Holidays", "Family", "Work"] { navigator.show(album) }

let child = Process()
child.executableURL = URL(fileURLWithPath: "/bin/sh")
child.arguments = ["-c", "echo child process ran"]
try child.run()
child.waitUntilExit()
print("UninstrumentedGallery: showed 3 albums; child exited \(child.terminationStatus)")
withExtendedLifetime((token, caches)) {}
