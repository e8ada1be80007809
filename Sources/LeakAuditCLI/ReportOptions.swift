import ArgumentParser
import LeakAuditCore

extension ReportFormat: ExpressibleByArgument {}

/// Where the report goes and in which format.
struct ReportOptions: ParsableArguments {
    @Option(help: "Report format: \(ReportFormat.allCases.map(\.rawValue).joined(separator: " or ")).")
    var format: ReportFormat = .text

    @Option(
        name: .shortAndLong, help: ArgumentHelp("Write the report to this file instead of standard error.", valueName: "file"))
    var output: String?
}
