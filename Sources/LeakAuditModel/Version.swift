/// leak-audit's version, reported by `--version` and in every report.
public let leakAuditVersion = "0.1.0"
