/// Who holds instances still alive (`--retainers`): a group of instances whose retaining paths
/// have the same shape — the same root and the same steps, array indexes and dictionary keys
/// aside — with their count.
public struct Retainer: Sendable, Hashable {
    /// What kind of root a path starts at.
    public enum RootKind: String, Sendable, Hashable, CaseIterable {
        /// A global or static variable.
        case global
        /// Thread-local storage.
        case threadLocal
        /// A slot in a thread's stack frame.
        case stack
        /// A register of a stopped thread.
        case register
        /// A running or suspended async task.
        case task
        /// An XCTest test case object (`name`: its class), which XCTest keeps until the run
        /// ends: only through it is the instance held, and clearing the property lets it go.
        case testCase
        /// A cycle of strong references that nothing else reaches.
        case cycle
        /// A word of memory whose layout is not known (`name`: a malloc block that is no Swift
        /// object, of its size, or a mapping no heap walk enumerated): read conservatively, any
        /// word that points at or into an object holds it.
        case memory
        /// No holder was found (see `Root.name`): nothing references the object, or the memory
        /// that might could not be read.
        case unknown
    }

    /// Where the path starts.
    public struct Root: Sendable, Hashable {
        public var kind: RootKind
        /// The variable (`App.router`), the function whose frame holds it, or what the cycle or
        /// the missing holder is.
        public var name: String
        /// The thread, for stack, register and thread-local roots.
        public var thread: String?

        public init(kind: RootKind, name: String, thread: String? = nil) {
            self.kind = kind
            self.name = name
            self.thread = thread
        }
    }

    /// One object on the path, and how the one before holds it.
    public struct Step: Sendable, Hashable {
        /// How the previous object (or the root, for the first step) holds this one: a stored
        /// property's name, `[i]` for an array element, `["key"]` or `[key]` for a dictionary
        /// value, `captured` for a closure's capture.
        public var via: String
        /// This object's type, module-qualified: the last step's is the leaked type.
        public var type: String
        /// True for a collection's storage (an array's, a dictionary's): shown folded into the
        /// next step.
        public var isCollectionStorage: Bool

        public init(via: String, type: String, isCollectionStorage: Bool = false) {
            self.via = via
            self.type = type
            self.isCollectionStorage = isCollectionStorage
        }
    }

    /// Instances with this path.
    public var count: Int
    public var root: Root
    /// From the root's object to the instance. A path of more than 1,000 objects keeps its first
    /// and last 500 (an enum's case or a closure on the way is a step of its own): the objects
    /// between are counted in `omittedSteps`, left out after `path[omittedAfter - 1]`.
    public var path: [Step]
    /// The bytes releasing these instances would free: what they alone keep alive, themselves
    /// included, as their dominator subtrees in the heap's graph add up.
    public var retainedBytes: Int
    /// The objects of a long path left out of `path` (0: none).
    public var omittedSteps: Int
    /// Where in `path` they were left out: before `path[omittedAfter]`.
    public var omittedAfter: Int

    public init(
        count: Int, root: Root, path: [Step], retainedBytes: Int = 0, omittedSteps: Int = 0, omittedAfter: Int = 0
    ) {
        self.count = count
        self.root = root
        self.path = path
        self.retainedBytes = retainedBytes
        self.omittedSteps = omittedSteps
        self.omittedAfter = omittedAfter
    }
}
