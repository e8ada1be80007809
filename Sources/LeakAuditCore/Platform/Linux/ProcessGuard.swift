import CLeakAuditHost

/// What leak-audit does so that its own death leaves nothing behind (docs/reliability.md, "When
/// leak-audit itself dies"): a fatal signal kills every process the target started before
/// leak-audit goes, and removes the report files not yet complete.
public enum ProcessGuard {
    /// Installs the fatal-signal handlers (on an alternate stack), once; call it before anything
    /// is started or written. Returns the errno value of a call that failed, nil when installed.
    @discardableResult
    public static func install() -> Int32? {
        let code = leakaudit_host_guard_install()
        return code == 0 ? nil : code
    }

    /// A temporary file that a fatal or terminating signal removes: its registration, nil when
    /// the table is full (the file then keeps the name that says it is partial).
    public static func registerPartialFile(_ path: String) -> Int32? {
        let slot = leakaudit_host_guard_add_partial(path)
        return slot >= 0 ? slot : nil
    }

    /// Forgets a registration: the file was renamed into place, or removed.
    public static func forgetPartialFile(_ registration: Int32) {
        leakaudit_host_guard_forget_partial(registration)
    }

    /// Removes every registered file: what a run that ends without its reports leaves.
    public static func discardPartialFiles() {
        leakaudit_host_guard_discard_partials()
    }

    /// SIGKILLs every process leak-audit started that still runs (and theirs), found through
    /// /proc; returns how many there were.
    @discardableResult
    public static func killDescendants() -> Int {
        Int(leakaudit_host_guard_kill_descendants())
    }

    /// Gives `signal` (SIGINT, SIGTERM, SIGHUP or SIGQUIT) back to the guard, once no target runs
    /// to forward it to: it kills every descendant still running, removes the partial files, then
    /// ends leak-audit as by default.
    public static func endOn(_ signal: Int32) {
        // Fails only for a signal number out of range, which callers never pass.
        _ = leakaudit_host_guard_end_on(signal)
    }
}
