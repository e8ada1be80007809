// `swift package leak-audit [options] [-- swift test arguments…]`: builds the package's tests and
// runs them under `leak-audit run` the way `swift test` runs them (XCTest's tests, then Swift
// Testing's), with the same output and, as far as SwiftPM lets a plugin, the same exit status. docs/plugin.md describes the options and what SwiftPM does to
// the exit code.
import Foundation
import PackagePlugin

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

@main
struct LeakAuditPlugin: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let console = Console.current()
        let invocation: PluginInvocation
        do {
            invocation = try PluginInvocation(parsing: arguments)
        } catch {
            console.error(PluginInvocation.usage)
            Diagnostics.error("leak-audit plugin: \(error)")
            exit(PluginExit.usageError)
        }
        if invocation.showsHelp {
            console.output(PluginInvocation.usage)
            return
        }

        let package = context.package
        guard package.targets.contains(where: { ($0 as? SourceModuleTarget)?.kind == .test }) else {
            Diagnostics.error(
                "leak-audit plugin: package '\(package.displayName)' has no test targets; add a .testTarget, or run 'leak-audit run' on a program"
            )
            exit(PluginExit.usageError)
        }

        console.error("leak-audit plugin: building the tests of '\(package.displayName)' (\(invocation.configuration.rawValue))")
        let build = try packageManager.build(
            .all(includingTests: true),
            parameters: .init(configuration: invocation.configuration, logging: .concise, echoLogs: true))
        guard build.succeeded else {
            Diagnostics.error("leak-audit plugin: the tests of '\(package.displayName)' did not build")
            exit(PluginExit.buildFailed)
        }
        let bundle = try testBundle(of: package, configuration: invocation.configuration, builtArtifacts: build.builtArtifacts)

        // The libraries beside leak-audit watch allocations and name the test of each one: a test run
        // always wants them.
        let leakAudit = try leakAuditWithPreloadLibrary(
            try context.tool(named: "LeakAuditCLI").url, context: context, configuration: invocation.configuration)

        // `swift test` runs both testing libraries, each with its own filter syntax handled, from the
        // build just made; leak-audit audits its test processes, not SwiftPM's own.
        let swiftTest = try Self.swiftTestCommand(
            package: package, bundle: bundle, configuration: invocation.configuration, invocation: invocation)
        let leakAuditArguments = ["run"] + invocation.leakAuditOptions + swiftTest
        let status = try run(leakAudit, leakAuditArguments, console: console)
        guard status != 0 else { return }
        // SwiftPM turns any failing plugin into `swift package` exiting 1 (swiftlang/swift-package-manager#7380);
        // the diagnostic keeps leak-audit's own code in the log.
        Diagnostics.error("leak-audit exited with code \(status): \(PluginExit.meaning(ofLeakAuditStatus: status))")
        exit(status)
    }

    /// The package's XCTest bundle, `<Package>PackageTests.xctest`, in the products directory of `configuration`.
    ///
    /// The build result lists the products of the whole graph (host tools among them, in the debug
    /// directory) but not the test bundle, so the bundle is looked for beside them: first in the
    /// directories named after the configuration (`.build/<triple>/release`), then in any other.
    private func testBundle(
        of package: Package, configuration: PackageManager.BuildConfiguration,
        builtArtifacts: [PackageManager.BuildResult.BuiltArtifact]
    ) throws -> URL {
        let name = "\(package.displayName)PackageTests.xctest"
        var directories: [URL] = []
        for artifact in builtArtifacts {
            let directory = artifact.url.deletingLastPathComponent().standardizedFileURL
            if !directories.contains(directory) { directories.append(directory) }
        }
        let ordered =
            directories.filter { $0.lastPathComponent == configuration.rawValue }
            + directories.filter { $0.lastPathComponent != configuration.rawValue }
        for directory in ordered {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        }
        throw PluginError.testBundleMissing(name: name, searched: ordered.map(\.path))
    }

    /// `swift-test --skip-build …` for the tests just built: the toolchain's own `swift-test`
    /// (beside the `swift-package` that runs this plugin), the package and its build directory,
    /// the configuration, the filters, and the arguments after `--`. `--ignore-lock`: the
    /// `swift package` that runs this plugin holds the build directory's lock and waits for it.
    private static func swiftTestCommand(
        package: Package, bundle: URL, configuration: PackageManager.BuildConfiguration, invocation: PluginInvocation
    ) throws -> [String] {
        // <scratch>/<triple>/<configuration>/<Package>PackageTests.xctest
        let scratch = bundle.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return [
            try swiftTestExecutable(), "--skip-build", "--ignore-lock", "--package-path", package.directoryURL.path,
            "--scratch-path", scratch.path, "--configuration", configuration.rawValue,
        ]
            + invocation.filters.flatMap { ["--filter", $0] } + invocation.swiftTestArguments
    }

    /// The toolchain's `swift-test`: beside the `swift-package` that started this plugin, else on PATH.
    private static func swiftTestExecutable() throws -> String {
        #if os(Linux)
            if let parent = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(getppid())/exe") {
                let candidate = URL(fileURLWithPath: parent).deletingLastPathComponent().appendingPathComponent("swift-test")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            }
        #endif
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("swift-test")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
        }
        throw PluginError.swiftTestMissing
    }

    /// A leak-audit executable with libLeakAuditPreload.so beside it, which `--budget`, `--census` and
    /// configuration files need. The tool dependency builds only the executable, so the library (with
    /// every other dynamic library product of the leak-audit package, which leak-audit also looks
    /// for beside itself) is built here. SwiftPM writes it to the products directory of
    /// `configuration`; when that is not the tool's directory (the tool is built for the host, in
    /// debug unless `swift package -c release`), the executable and the libraries are linked (or
    /// copied) into the plugin's work directory, because leak-audit resolves its own path.
    private func leakAuditWithPreloadLibrary(
        _ leakAudit: URL, context: PluginContext, configuration: PackageManager.BuildConfiguration
    ) throws -> URL {
        let products = Self.helperLibraryProducts(of: context.package)
        var libraries: [URL] = []
        for product in products {
            let build = try packageManager.build(
                .product(product), parameters: .init(configuration: configuration, logging: .concise, echoLogs: true))
            let fileName = "lib\(product).so"
            guard build.succeeded, let library = build.builtArtifacts.first(where: { $0.url.lastPathComponent == fileName })
            else {
                throw PluginError.preloadLibraryNotBuilt(product: product, log: build.logText)
            }
            libraries.append(library.url)
        }
        let tool = leakAudit.resolvingSymlinksInPath()
        let toolDirectory = tool.deletingLastPathComponent()
        if libraries.allSatisfy({ $0.resolvingSymlinksInPath().deletingLastPathComponent() == toolDirectory }) {
            return leakAudit
        }
        let staging = context.pluginWorkDirectoryURL.appendingPathComponent("leak-audit-bin")
        try? FileManager.default.removeItem(at: staging)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        for source in [tool] + libraries.map({ $0.resolvingSymlinksInPath() }) {
            let destination = staging.appendingPathComponent(source.lastPathComponent)
            do {
                try FileManager.default.linkItem(at: source, to: destination)
            } catch {
                try FileManager.default.copyItem(at: source, to: destination)
            }
        }
        return staging.appendingPathComponent(tool.lastPathComponent)
    }

    /// The dynamic library products of the leak-audit package (the one with a `LeakAuditPreload`
    /// product), found among `package` and its dependencies.
    private static func helperLibraryProducts(of package: Package) -> [String] {
        var queue = [package]
        var seen: Set<String> = []
        while let next = queue.first {
            queue.removeFirst()
            guard seen.insert(next.id).inserted else { continue }
            let libraries = next.products.compactMap { $0 as? LibraryProduct }
            if libraries.contains(where: { $0.name == "LeakAuditPreload" }) {
                return libraries.filter { $0.kind == .dynamic }.map(\.name).sorted()
            }
            queue += next.dependencies.map(\.package)
        }
        return ["LeakAuditPreload"]
    }

    /// Runs leak-audit to completion and returns its exit status (128 + the signal when killed).
    private func run(_ executable: URL, _ arguments: [String], console: Console) throws -> Int32 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        // SwiftPM closed the plugin's standard input; the tests read nothing from it.
        process.standardInput = FileHandle.nullDevice
        if let output = console.standardOutput { process.standardOutput = output }
        if let error = console.standardError { process.standardError = error }
        try process.run()
        process.waitUntilExit()
        switch process.terminationReason {
        case .exit: return process.terminationStatus
        case .uncaughtSignal: return 128 + process.terminationStatus
        @unknown default: return process.terminationStatus
        }
    }
}

/// The plugin's command line: its own options, leak-audit's, and `swift test`'s.
struct PluginInvocation {
    /// Options that belong to `leak-audit run`, in their order.
    var leakAuditOptions: [String] = []
    /// The `--filter`s, passed to `swift test` (XCTest's and Swift Testing's tests alike).
    var filters: [String] = []
    /// Everything after `--`, passed to `swift test`.
    var swiftTestArguments: [String] = []
    /// The build configuration of the tests.
    var configuration: PackageManager.BuildConfiguration = .debug
    /// Whether `--help` was given.
    var showsHelp = false

    /// `leak-audit run` options that take no value; every other option takes one. The plugin cannot
    /// link leak-audit's code: PluginAgreementTests checks this list against `leak-audit run`.
    private static let leakAuditFlags: Set<String> = [
        "--census", "--census-all", "--retainers", "--unreachable", "--leaks-per-test", "--fail-on-global-state",
        "--fail-on-test-case-state", "--verbose", "--quiet", "-q",
    ]

    static let usage = """
        USAGE: swift package leak-audit [--configuration debug|release] [--filter <test> …]
                                        [<leak-audit run options>] [-- <swift test arguments>…]

        Builds the package's tests and runs them, XCTest's and Swift Testing's, under
        'leak-audit run' as 'swift test' runs them.

          -c, --configuration <c>  build the tests in debug (default) or release
          --filter <test>          run only matching tests (repeatable; swift test's --filter:
                                   Module.Class/testName, or a regular expression)
          --format, -o/--output, --budget, --config, --census, --census-all, --leaks-per-test, …
                                   passed to 'leak-audit run' unchanged
          -- <arguments>…          passed to 'swift test' unchanged
                                   (e.g. -- --disable-swift-testing)

        A run in which no test ran fails (leak-audit's exit code 3).
        """

    init(parsing arguments: [String]) throws(PluginError) {
        var index = arguments.startIndex
        // The value of the option at `index`: after its '=', or the next argument.
        func value(of option: String, inline: String?) throws(PluginError) -> String {
            if let inline { return inline }
            index += 1
            guard index < arguments.endIndex else { throw .missingValue(option: option) }
            return arguments[index]
        }
        while index < arguments.endIndex {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            let inlineValue = argument.contains("=") ? String(argument.drop { $0 != "=" }.dropFirst()) : nil
            switch name {
            case "--":
                swiftTestArguments = Array(arguments[(index + 1)...])
                index = arguments.endIndex
                continue
            case "-h", "--help":
                showsHelp = true
            case "--filter":
                filters.append(try value(of: name, inline: inlineValue))
            case "-c", "--configuration":
                let text = try value(of: name, inline: inlineValue)
                guard let configuration = PackageManager.BuildConfiguration(rawValue: text), configuration != .inherit else {
                    throw .badConfiguration(text)
                }
                self.configuration = configuration
            default:
                guard argument.hasPrefix("-") else { throw .unexpectedArgument(argument) }
                leakAuditOptions.append(argument)
                if inlineValue == nil && !Self.leakAuditFlags.contains(name) {
                    leakAuditOptions.append(try value(of: name, inline: nil))
                }
            }
            index += 1
        }
    }
}

/// Where leak-audit's output goes: the terminal or pipes `swift package` writes to, when the plugin can
/// reach them, so that the tests' output stays on standard output and the report on standard error.
struct Console {
    /// `swift package`'s standard output, or nil to inherit the plugin's (which SwiftPM forwards to it).
    var standardOutput: FileHandle?
    /// `swift package`'s standard error, or nil to inherit the plugin's.
    var standardError: FileHandle?

    /// SwiftPM reads a plugin's output through a pipe and reprints it line by line on its standard
    /// output. On Linux the plugin can open the streams of its parent `swift package` instead, when
    /// they are a terminal or a pipe: a regular file would be written at the wrong offset.
    static func current() -> Console {
        #if os(Linux)
            let parent = "/proc/\(getppid())"
            guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: parent + "/exe"),
                executable.hasSuffix("/swift-package")
            else { return Console() }
            return Console(
                standardOutput: openStream(parent + "/fd/1"), standardError: openStream(parent + "/fd/2"))
        #else
            return Console()
        #endif
    }

    private static func openStream(_ path: String) -> FileHandle? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFIFO || kind == S_IFCHR else { return nil }
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Writes a line to standard output.
    func output(_ text: String) { write(text, to: standardOutput ?? FileHandle.standardOutput) }

    /// Writes a line to standard error.
    func error(_ text: String) { write(text, to: standardError ?? FileHandle.standardError) }

    private func write(_ text: String, to handle: FileHandle) {
        try? handle.write(contentsOf: Data((text + "\n").utf8))
    }
}

/// The plugin's own exit statuses, and what leak-audit's mean (PluginAgreementTests checks both
/// against `leak-audit run --help`).
enum PluginExit {
    /// A bad plugin option, or a package without tests: leak-audit's usage status.
    static let usageError: Int32 = 64
    /// The tests did not build: the target could not be started.
    static let buildFailed: Int32 = 4

    /// A short reading of a leak-audit exit status, for the diagnostic SwiftPM prints.
    static func meaning(ofLeakAuditStatus status: Int32) -> String {
        switch status {
        case 1: return "leaks found: a type exceeded its budget or tests left instances alive"
        case 2: return "no type exceeded its budget, but the tests failed"
        case 3: return "the tests could not be audited (or no test ran)"
        case 4: return "the tests could not be started"
        case 5: return "the report is incomplete: records were lost or damaged"
        case 64: return "usage or configuration error"
        case 70: return "internal error"
        default: return status > 128 ? "leak-audit was killed by signal \(status - 128)" : "unexpected status"
        }
    }
}

/// Why the plugin stopped before running leak-audit.
enum PluginError: Error, CustomStringConvertible {
    /// An option that needs a value came last.
    case missingValue(option: String)
    /// `--configuration` named something other than debug or release.
    case badConfiguration(String)
    /// A word that is no option, before `--`.
    case unexpectedArgument(String)
    /// The build succeeded but left no test bundle where it was looked for.
    case testBundleMissing(name: String, searched: [String])
    /// libLeakAuditPreload.so (or another library leak-audit loads), which the watch options need,
    /// could not be built.
    case preloadLibraryNotBuilt(product: String, log: String)
    /// The toolchain's `swift-test` was found neither beside `swift-package` nor on PATH.
    case swiftTestMissing

    var description: String {
        switch self {
        case .missingValue(let option): return "option '\(option)' needs a value"
        case .badConfiguration(let text): return "unknown configuration '\(text)'; use debug or release"
        case .unexpectedArgument(let argument):
            return "unexpected argument '\(argument)'; name a test with --filter, or pass test arguments after --"
        case .testBundleMissing(let name, let searched):
            return "no '\(name)' after building the tests (looked in \(searched.joined(separator: ", ")))"
        case .preloadLibraryNotBuilt(let product, let log): return "product '\(product)' could not be built:\n\(log)"
        case .swiftTestMissing:
            return "the toolchain's swift-test was not found beside swift-package or on PATH; check the Swift installation"
        }
    }
}
