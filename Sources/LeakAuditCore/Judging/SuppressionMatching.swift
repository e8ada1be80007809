import LeakAuditModel
import LeakAuditPresentation

// Whether a suppression from the configuration matches a finding: by type name, or by a function
// or file on every allocation stack. Patterns are matched with the shim's own glob matcher.

extension Suppression {
    /// True when the rule matches the finding of type `typeName` whose instances were allocated by
    /// `allocations`. Paths are also tried relative to `workingDirectory`.
    public func matches(typeName: String, allocations: [AuditReport.AllocationGroup], workingDirectory: String) -> Bool {
        switch criterion {
        case .type(let pattern):
            return globMatches(pattern, typeName)
        case .function(let pattern):
            return everyGroup(allocations) { frame in
                guard let function = frame.function else { return false }
                return globMatches(pattern, function)
                    || globMatches(pattern, SwiftName.withoutReturnType(function))
            }
        case .file(let pattern):
            return everyGroup(allocations) { frame in
                guard let file = frame.file else { return false }
                return globMatches(pattern, file) || globMatches(pattern, relativePath(file, under: workingDirectory))
            }
        }
    }

    /// True when there is a group and each has a frame that `matches`.
    private func everyGroup(
        _ groups: [AuditReport.AllocationGroup], _ matches: (SymbolizedFrame) -> Bool
    ) -> Bool {
        !groups.isEmpty && groups.allSatisfy { $0.frames.contains(where: matches) }
    }
}
