/// Counts of 64-bit words (an instance's type and site), by open addressing with linear probing:
/// a report counts a million instances into as many entries as there are distinct sites, and a
/// type counts the sites of its instances that died since its peak. A class over memory of its own,
/// reached through a `let` pointer, so that counting checks no array's uniqueness and no
/// exclusivity; it allocates nothing until its first word.
final class WordCounter {
    private struct State {
        var words: UnsafeMutablePointer<UInt64>? = nil
        var counts: UnsafeMutablePointer<Int>? = nil
        var capacity = 0
        /// The word 0 is counted aside: it marks empty slots.
        var zeroCount = 0
        var stored = 0
    }

    private let state: UnsafeMutablePointer<State>

    init() {
        state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: State())
    }

    deinit {
        state.pointee.words?.deallocate()
        state.pointee.counts?.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// A copy that shares no memory with this counter.
    func copy() -> WordCounter {
        let copy = WordCounter()
        copy.state.pointee = state.pointee
        let capacity = state.pointee.capacity
        if let words = state.pointee.words, let counts = state.pointee.counts {
            copy.state.pointee.words = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
            copy.state.pointee.words?.initialize(from: words, count: capacity)
            copy.state.pointee.counts = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
            copy.state.pointee.counts?.initialize(from: counts, count: capacity)
        }
        return copy
    }

    /// Forgets every count, keeping the memory.
    func removeAll() {
        if let words = state.pointee.words { words.update(repeating: 0, count: state.pointee.capacity) }
        state.pointee.zeroCount = 0
        state.pointee.stored = 0
    }

    /// The slot where `word`'s probe sequence starts (`OpenAddressing`).
    @inline(__always)
    private static func home(of word: UInt64, mask: Int) -> Int {
        OpenAddressing.home(ofWordHash: OpenAddressing.hash(word: word), mask: mask)
    }

    /// Counts `word` once more.
    @inline(__always)
    func add(_ word: UInt64) {
        if word == 0 {
            state.pointee.zeroCount &+= 1
            return
        }
        if (state.pointee.stored &+ 1) &* 2 > state.pointee.capacity { grow() }
        guard let words = state.pointee.words, let counts = state.pointee.counts else { return }  // grow allocates
        let mask = state.pointee.capacity &- 1
        let (index, found) = OpenAddressing.find(
            from: Self.home(of: word, mask: mask), mask: mask, isKey: { words[$0] == word }, isEmpty: { words[$0] == 0 })
        if found {
            counts[index] &+= 1
        } else {
            words[index] = word
            counts[index] = 1
            state.pointee.stored &+= 1
        }
    }

    @inline(never)
    private func grow() {
        let old = state.pointee
        let capacity = Swift.max(16, old.capacity * 2)
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        words.initialize(repeating: 0, count: capacity)
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
        counts.initialize(repeating: 0, count: capacity)
        let mask = capacity - 1
        if let oldWords = old.words, let oldCounts = old.counts {
            for slot in 0..<old.capacity where oldWords[slot] != 0 {
                let index = OpenAddressing.firstEmpty(
                    from: Self.home(of: oldWords[slot], mask: mask), capacity: capacity, isEmpty: { words[$0] == 0 })
                words[index] = oldWords[slot]
                counts[index] = oldCounts[slot]
            }
            oldWords.deallocate()
            oldCounts.deallocate()
        }
        state.pointee.words = words
        state.pointee.counts = counts
        state.pointee.capacity = capacity
    }

    /// Calls `body` with every word counted and its count.
    func forEach(_ body: (UInt64, Int) -> Void) {
        if state.pointee.zeroCount > 0 { body(0, state.pointee.zeroCount) }
        guard let words = state.pointee.words, let counts = state.pointee.counts else { return }
        for slot in 0..<state.pointee.capacity where words[slot] != 0 { body(words[slot], counts[slot]) }
    }
}
