import Synchronization

/// The results of a pure function of one text, kept: a report names the same functions and types
/// over and over (every box of every flame graph, every stack of every test), and putting a long
/// Swift name into words takes a pass over its characters, one grapheme at a time.
final class TextMemo: Sendable {
    private let known = Mutex<[String: String]>([:])
    /// The most texts kept: past it the memo starts again, so that no input grows it without end.
    private let capacity: Int

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
    }

    /// `make(text)`, made once for each text while the memo keeps it.
    func value(for text: String, _ make: (String) -> String) -> String {
        if let value = known.withLock({ $0[text] }) { return value }
        let value = make(text)
        known.withLock { known in
            if known.count >= capacity { known.removeAll(keepingCapacity: true) }
            known[text] = value
        }
        return value
    }
}
