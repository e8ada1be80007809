// What a retainer search finds for an instance: where its path starts, and each step, how one
// object holds the next (docs/retainers.md).

extension RetainerSearch {
    /// How one object holds the next.
    enum Hold: Hashable {
        /// A stored property (of a struct inside it too: the outermost property is named), and the
        /// enum case whose payload the reference is, when the property is an enum.
        case property(String, enumCase: EnumCase? = nil)
        /// An array element, and the enum case whose payload it is, for an array of enums.
        case element(Int, enumCase: EnumCase? = nil)
        /// A dictionary value, by its key when it reads as text.
        case value(key: String?)
        /// A dictionary key or a set member.
        case member
        /// A closure's captured value.
        case capture
        /// A captured `var`'s box.
        case boxedValue
        /// A word of a runtime object (an async task's frames, an error box).
        case word
    }

    /// An enum's case on the way: `LoadState` `.loading`.
    struct EnumCase: Hashable {
        var type: String
        var name: String
    }

    /// Where a path starts.
    enum Root: Hashable {
        /// A word of a loaded image's data: a global or static variable.
        case global(slot: UInt64)
        /// A word of thread-local storage.
        case threadLocal(thread: Int32, threadName: String)
        /// A slot of a thread's stack, in the frame of the function at `function` (a return
        /// address, or the stopped instruction for the innermost frame).
        case stack(thread: Int32, threadName: String, function: UInt64, innermost: Bool)
        /// A register of a stopped thread.
        case register(thread: Int32, threadName: String, function: UInt64)
        /// An async task (running or suspended), with the code addresses in its header (the
        /// function it runs, where it resumes), the program's first.
        case task(functions: [UInt64])
        /// An XCTest test case object, which XCTest keeps until the run ends: the path's first step
        /// is the test case, and no root reaches the object but through a test case. The object
        /// goes when the test case lets it go (no cycle without a test case holds it).
        case testCase
        /// A cycle of strong references that nothing else reaches: the path goes round it.
        case cycle
        /// A cycle of `members` objects that nothing else reaches holds the path's first object.
        case heldByCycle(members: Int)
        /// A word of untyped memory: a malloc block of `bytes` that is no Swift object (a C
        /// structure, a raw-pointer allocation), or a writable mapping of `bytes` that no heap
        /// walk enumerated.
        case memory(bytes: Int, isMallocBlock: Bool)
        /// Nothing references the object: no root, no object, no cycle, no word of untyped
        /// memory (over-retained, or retained without a reference).
        case unreferenced
        /// No root, object or cycle found, and untyped memory could not be read (malloc's heap
        /// was not walked: another allocator).
        case unknown
    }

    struct Step: Hashable {
        var hold: Hold
        /// The type of the object this step reaches.
        var type: String
        /// For a closure context reached through a function value: the closure's code address.
        var closure: UInt64? = nil
        /// The object is a collection's storage (an array's, a dictionary's, a set's).
        var isCollectionStorage = false
    }

    struct Path: Equatable {
        /// The steps a path keeps at each end: a longer one keeps its first and last this many,
        /// and counts the objects between (`omittedSteps`), so that a list of millions of nodes
        /// costs a report a thousand steps.
        static let keptAtEachEnd = 500

        var root: Root
        /// From the root's object to the instance; when `omittedSteps` is not 0, the first
        /// `keptAtEachEnd` steps, then (after the omitted ones) the last `keptAtEachEnd`.
        var steps: [Step]
        /// The steps left out between `steps[keptAtEachEnd - 1]` and `steps[keptAtEachEnd]`.
        var omittedSteps = 0
        /// The bytes the instance alone keeps alive, itself included (its dominator subtree).
        var retainedBytes = 0
        /// Another of the instances searched dominates this one: its bytes are in that one's.
        var insideAnotherInstance = false
        /// For a path round (or from) a cycle that only untyped memory reaches: that memory's
        /// root (`.memory`), whose word points into the cycle, stale or not.
        var alsoPointedAtFrom: Root? = nil

        init(root: Root, steps: [Step], omittedSteps: Int = 0) {
            self.root = root
            self.steps = steps
            self.omittedSteps = omittedSteps
            shorten()
        }

        /// Keeps the first and last `keptAtEachEnd` steps of a longer path.
        private mutating func shorten() {
            let kept = Self.keptAtEachEnd
            guard steps.count > 2 * kept else { return }
            omittedSteps += steps.count - 2 * kept
            steps = Array(steps[..<kept] + steps[(steps.count - kept)...])
        }

        /// The steps of a path of `count` steps, by index from the root's object: only those a
        /// path keeps are made.
        static func kept(count: Int, _ step: (Int) -> Step) -> Path {
            let kept = keptAtEachEnd
            guard count > 2 * kept else { return Path(root: .unknown, steps: (0..<count).map(step)) }
            return Path(
                root: .unknown, steps: (0..<kept).map(step) + (count - kept..<count).map(step),
                omittedSteps: count - 2 * kept)
        }
    }
}
