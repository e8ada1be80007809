/// What the target's file is, as far as auditing it goes: whether leak-audit can watch it without
/// LeakMonitor, and what to advise when nothing was audited.
public enum TargetKind: Sendable, Hashable, CaseIterable {
    /// An ELF program linking the Swift runtime dynamically: allocations can be watched.
    case dynamicSwift
    /// A test bundle (it links XCTest or Swift Testing) with the Swift runtime linked dynamically.
    case swiftTestBundle
    /// Swift code with the runtime linked in (`-static-stdlib`, `-static-executable`).
    case staticSwift
    /// An ELF file with no Swift code.
    case notSwift
    /// Not an ELF file (a script, say): its children decide.
    case other
    /// A running Swift process that `leak-audit inspect` stopped and copied, not a program it
    /// started.
    case inspectedProcess
}
