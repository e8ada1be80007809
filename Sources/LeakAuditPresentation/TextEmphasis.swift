/// What a part of the text report is, for a terminal that shows colour: the text report marks its
/// verdict, its labels and names, and the frames of the user's code apart from the libraries', each
/// with one ANSI SGR style. Only the text report uses it, and only when asked to
/// (`ReportPhrases.colored`); the caller decides when (a terminal, `NO_COLOR`, `--color`).
public enum TextEmphasis: Sendable, CaseIterable {
    /// A failing finding's label (`EXCEEDED`, `LEAKED`) and a failing verdict: bold red.
    case failure
    /// A finding within budget (`ok`) and a clean verdict: green.
    case success
    /// A warning's label, global state, and a verdict that is not clean for another reason than a
    /// failing finding (a failing target, an incomplete report, nothing audited): yellow.
    case caution
    /// A finding that does not fail the run (`SUPPRESSED`, `BASELINED`, `GONE`): blue.
    case exempt
    /// A type's or test's name where its finding is stated: bold.
    case name
    /// A section's heading (`within budget:`, `census:`, `tests:`): bold.
    case heading
    /// Where a frame of the user's code is (`path:line`): cyan.
    case location
    /// Frames of the libraries, the runtime and the test harness (folded, or shown without a
    /// source line), and the notes on what was left out: dim.
    case library

    /// The SGR parameters that start it.
    var parameters: String {
        switch self {
        case .failure: "1;31"
        case .success: "32"
        case .caution: "33"
        case .exempt: "34"
        case .name, .heading: "1"
        case .location: "36"
        case .library: "2"
        }
    }

    /// `text` in this style: the SGR escape that starts it, the text, and the one that resets
    /// every attribute. The text must already be escaped (`ReportPhrases.escaped`): nothing from
    /// the target may carry an escape of its own to the terminal.
    public func applied(to text: String) -> String {
        guard !text.isEmpty else { return text }
        return "\u{1B}[\(parameters)m" + text + Self.reset
    }

    /// The SGR escape that ends a styled part: every attribute back to the terminal's default.
    public static let reset = "\u{1B}[0m"
}
