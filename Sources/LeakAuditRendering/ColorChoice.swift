/// When the text report is colored (`--color`), as git and ripgrep decide it: `auto` colors a
/// report written to a terminal unless `NO_COLOR` is set (https://no-color.org) or the terminal is
/// `dumb` or unknown (`TERM` unset, as git has it); `always` colors every text report, into a pipe or a file too, and wins over `NO_COLOR`;
/// `never` colors none. Only the text format is ever colored. The renderer is told the outcome; it
/// never looks at a terminal itself.
public enum ColorChoice: String, CaseIterable, Sendable {
    /// Color a text report written to a terminal, unless `NO_COLOR` is set or `TERM` is `dumb` or
    /// unset.
    case auto
    /// Color every text report, wherever it goes.
    case always
    /// Color nothing.
    case never

    /// Whether a text report written to a destination is colored: `destinationIsTerminal` says
    /// whether the destination is a terminal, and `environment` holds the variables that decide
    /// with `auto` (`NO_COLOR`, `TERM`).
    public func colorsText(destinationIsTerminal: Bool, environment: [String: String]) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto:
            // NO_COLOR counts when present and not empty, whatever its value.
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
            guard let term = environment["TERM"], !term.isEmpty, term != "dumb" else { return false }
            return destinationIsTerminal
        }
    }
}
