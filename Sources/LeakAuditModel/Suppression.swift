/// A rule from the configuration file that keeps a known leak from failing the run: the finding is
/// still reported, marked as suppressed, with the reason.
///
/// A type rule matches a finding whose type name matches its pattern. A function or file rule
/// matches a finding when **every** allocation group of the finding has at least one frame whose
/// function (or file) matches: a rule written for one legacy call site does not hide the same type
/// leaking from a new one.
public struct Suppression: Sendable, Hashable {
    /// What a rule's pattern is matched against.
    public enum Criterion: Sendable, Hashable {
        /// The type's report name (`App.Legacy*`).
        case type(String)
        /// A frame's demangled function name, with or without its return type
        /// (`*ImageCache.shared*`).
        case function(String)
        /// A frame's source file: its absolute path, or the path relative to the working directory
        /// as the text report shows it (`*/Vendor/*`, `Sources/Legacy/*`).
        case file(String)
    }

    /// What the pattern is matched against, and the pattern.
    public var criterion: Criterion
    /// Why the leak is accepted, as the configuration gives it.
    public var reason: String?
    /// Where the rule was given: the configuration file's path.
    public var origin: String

    /// Creates a suppression.
    public init(_ criterion: Criterion, reason: String? = nil, origin: String) {
        self.criterion = criterion
        self.reason = reason
        self.origin = origin
    }

    /// `type`, `function` or `file`: the configuration key that gave the pattern.
    public var kind: String {
        switch criterion {
        case .type: "type"
        case .function: "function"
        case .file: "file"
        }
    }

    /// The pattern, as given.
    public var pattern: String {
        switch criterion {
        case .type(let pattern), .function(let pattern), .file(let pattern): pattern
        }
    }

    /// `type:App.Legacy*`: the rule's kind and pattern, which name it in reports.
    public var rule: String { "\(kind):\(pattern)" }
}
