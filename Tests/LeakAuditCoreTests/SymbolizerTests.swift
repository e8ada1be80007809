import CLibDW
import Foundation
import LeakAuditModel
import Synchronization
import XCTest

@testable import LeakAuditCore

#if canImport(Glibc)
    import Glibc
#endif

final class SymbolizerTests: XCTestCase {
    // MARK: - Code in this test binary (DWARF)

    func testNamesTheCallingTestFunctionWithThisFileAndTheCallLine() throws {
        let (addresses, callLine) = (recordReturnAddresses(), #line)
        let symbolizer = Symbolizer(modules: try loadedModuleImages())

        let frames = addresses.map(symbolizer.symbolize)
        let caller = try XCTUnwrap(
            frames.first {
                $0.last?.function?.contains(
                    "testNamesTheCallingTestFunctionWithThisFileAndTheCallLine"
                ) == true
            },
            "no frame names this test; got \(frames.compactMap { $0.last?.function })"
        )
        let physical = try XCTUnwrap(caller.last)
        XCTAssertFalse(physical.inlined)
        XCTAssertTrue(
            physical.function?.hasPrefix("LeakAuditCoreTests.SymbolizerTests.") == true,
            "\(physical)"
        )
        XCTAssertEqual(physical.file, #filePath)
        XCTAssertEqual(physical.line, callLine)
        XCTAssertNotNil(physical.column)
        XCTAssertNotNil(physical.module)
        XCTAssertEqual(physical.address, addresses[frames.firstIndex(of: caller)!])
    }

    func testNamesANonInlinedHelperInAnotherFile() throws {
        let addresses = recordReturnAddresses()
        let symbolizer = Symbolizer(modules: try loadedModuleImages())

        let helper = try XCTUnwrap(
            addresses.lazy.map(symbolizer.symbolize).first {
                $0.last?.function?.contains("recordReturnAddresses") == true
            }
        )
        let physical = try XCTUnwrap(helper.last)
        let supportFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("SymbolizerTestSupport.swift").path
        XCTAssertEqual(physical.file, supportFile)
        XCTAssertEqual(
            physical.line,
            try lineNumber(of: "recordReturnAddresses-body", in: supportFile)
        )
    }

    func testRepeatedLookupsGiveTheSameFrames() throws {
        let addresses = recordReturnAddresses()
        let symbolizer = Symbolizer(modules: try loadedModuleImages())

        let first = addresses.map(symbolizer.symbolize)
        let second = addresses.map(symbolizer.symbolize)
        XCTAssertEqual(first, second)
        XCTAssertEqual(first.count, addresses.count)
        XCTAssertFalse(first.contains { $0.isEmpty })
        XCTAssertEqual(symbolizer.diagnostics, [], "every module of this process opens cleanly")
    }

    /// Two processes that loaded the same files at other addresses (`swift test`'s two runs of a
    /// test bundle) share each file's opened module, indexed once, ahead of time when prepared,
    /// and each names its own addresses as a symbolizer of its own would.
    func testProcessesThatLoadedTheSameFilesShareTheirIndexes() throws {
        let addresses = recordReturnAddresses()
        let modules = try loadedModuleImages()
        // The same files as another process would have them: every image 16 GiB further on.
        let shift: UInt64 = 1 << 34
        let elsewhere = modules.map {
            ModuleImage(
                path: $0.path, buildID: $0.buildID, loadBias: $0.loadBias &+ shift, start: $0.start &+ shift,
                end: $0.end &+ shift)
        }
        let shared = SharedModuleResolvers()
        let program = try XCTUnwrap(modules.first { $0.contains(addresses[0]) })
        shared.prepare(program, separateDebugInfo: false, libdw: { LibDW.loaded })
        let first = Symbolizer(modules: modules, separateDebugInfo: false, libdw: { LibDW.loaded }, shared: shared)
        let second = Symbolizer(modules: elsewhere, separateDebugInfo: false, libdw: { LibDW.loaded }, shared: shared)
        let alone = Symbolizer(modules: modules)

        let expected = addresses.map(alone.symbolize)
        XCTAssertTrue(expected.contains { $0.last?.file == #filePath }, "\(expected)")
        XCTAssertEqual(addresses.map(first.symbolize), expected)
        let elsewhereFrames = addresses.map { second.symbolize($0 &+ shift) }
        XCTAssertEqual(
            elsewhereFrames.map { $0.map(\.function) }, expected.map { $0.map(\.function) })
        XCTAssertEqual(elsewhereFrames.map { $0.map(\.line) }, expected.map { $0.map(\.line) })
        XCTAssertEqual(elsewhereFrames.map { $0.map(\.moduleOffset) }, expected.map { $0.map(\.moduleOffset) })
        let opened = try XCTUnwrap(
            try shared.resolver(for: program, separateDebugInfo: false, libdw: { LibDW.loaded }).get())
        XCTAssertTrue(
            opened
                === (try shared.resolver(
                    for: elsewhere[modules.firstIndex(of: program)!], separateDebugInfo: false,
                    libdw: { LibDW.loaded }
                ).get()),
            "one opened module for both processes' copies of the file")
        XCTAssertEqual(first.diagnostics, [])
    }

    func testWorkAheadOfTheIndexesRunsBeforeEveryIndexNotStartedYet() throws {
        let modules = try loadedModuleImages()
        let libc = try XCTUnwrap(modules.first { $0.path.contains("/libc.so") })
        let core = try XCTUnwrap(modules.first { $0.path.contains("libswiftCore.so") })
        let shared = SharedModuleResolvers()
        let order = Mutex<[String]>([])
        let gate = DispatchSemaphore(value: 0)
        func logging(_ step: String) -> @Sendable () -> Result<leakaudit_libdw, SymbolizerError> {
            {
                order.withLock { $0.append(step) }
                return LibDW.loaded
            }
        }
        shared.prepare(libc, separateDebugInfo: false, libdw: logging("libc index")) {
            gate.wait()
            order.withLock { $0.append("libc first") }
        }
        // Heard while libc's first work runs: its own first work goes ahead of libc's index.
        shared.prepare(core, separateDebugInfo: false, libdw: logging("core index")) {
            order.withLock { $0.append("core first") }
        }
        gate.signal()
        _ = shared.resolver(for: core, separateDebugInfo: false, libdw: { LibDW.loaded })
        XCTAssertEqual(order.withLock { $0 }, ["libc first", "core first", "libc index", "core index"])
    }

    func testSymbolTablesReadInPlaceIndexAsLibdwflReadsThem() throws {
        let dw = try LibDW.loaded.get()
        let modules = try loadedModuleImages()
        var inPlace = 0
        for module in modules {
            guard let resolver = try? Symbolizer.ModuleResolver.open(module, separateDebugInfo: false, dw: dw) else {
                continue
            }
            let throughLibdwfl = try XCTUnwrap(resolver.symbolIndexes(readingInPlace: false))
            guard let read = resolver.symbolIndexes(readingInPlace: true) else {
                XCTAssertFalse(module.path.contains("/libc.so") || module.path.contains("libswiftCore.so"), module.path)
                continue
            }
            inPlace += 1
            // The first difference, not the whole tables (tens of thousands of symbols).
            for (inPlaceIndex, libdwflIndex) in [
                (read.functions, throughLibdwfl.functions), (read.variables, throughLibdwfl.variables),
            ] {
                XCTAssertEqual(inPlaceIndex.count, libdwflIndex.count, module.path)
                if let first = zip(inPlaceIndex, libdwflIndex).first(where: { $0 != $1 }) {
                    XCTFail("\(module.path): read in place \(first.0), through libdwfl \(first.1)")
                }
            }
            if module.path.contains("/libc.so") || module.path.contains("libswiftCore.so") {
                XCTAssertGreaterThan(read.functions.count, 1_000, module.path)
            }
        }
        XCTAssertGreaterThan(inPlace, 2, "\(modules.count) modules")
    }

    // MARK: - Libraries without debug information (symbol table)

    func testAddressInLibcIsNamedFromTheSymbolTableWithoutFile() throws {
        let malloc = try XCTUnwrap(dlsym(nil, "malloc"))
        // As if returning to malloc's first byte.
        let address = UInt64(UInt(bitPattern: malloc)) + 1
        let modules = try loadedModuleImages()
        let libc = try XCTUnwrap(modules.first { $0.path.contains("/libc.so") })

        let frames = Symbolizer(modules: modules).symbolize(address)

        XCTAssertEqual(frames.count, 1)
        let frame = try XCTUnwrap(frames.first)
        XCTAssertEqual(frame.address, address)
        XCTAssertEqual(frame.module, libc.path)
        XCTAssertEqual(frame.moduleOffset, address - libc.loadBias)
        XCTAssertTrue(frame.function?.contains("malloc") == true, "\(frame)")
        XCTAssertNil(frame.file)
        XCTAssertNil(frame.line)
        XCTAssertFalse(frame.inlined)
    }

    func testDetachedDebugInfoIsReadOnlyWhenAskedFor() throws {
        let malloc = try XCTUnwrap(dlsym(nil, "malloc"))
        let address = UInt64(UInt(bitPattern: malloc)) + 1
        let modules = try loadedModuleImages()
        let libc = try XCTUnwrap(modules.first { $0.path.contains("/libc.so") })
        let buildID = libc.buildID.map { String(format: "%02x", $0) }.joined()
        let detached = "/usr/lib/debug/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        guard !buildID.isEmpty, FileManager.default.fileExists(atPath: detached) else {
            throw XCTSkip("no detached debug info for libc (libc6-dbg) at \(detached)")
        }

        let frames = Symbolizer(modules: modules, separateDebugInfo: true).symbolize(address)

        let physical = try XCTUnwrap(frames.last)
        XCTAssertTrue(physical.function?.contains("malloc") == true, "\(physical)")
        XCTAssertTrue(physical.file?.hasSuffix("malloc.c") == true, "\(physical)")
        XCTAssertNotNil(physical.line)
    }

    func testSwiftRuntimeSymbolIsDemangled() throws {
        let getter = try XCTUnwrap(dlsym(nil, "$sSS5countSivg"), "String.count getter not exported")
        let address = UInt64(UInt(bitPattern: getter)) + 4

        let frames = Symbolizer(modules: try loadedModuleImages()).symbolize(address)

        XCTAssertEqual(frames.map(\.function), ["Swift.String.count.getter : Swift.Int"])
        XCTAssertTrue(frames.first?.module?.hasSuffix("libswiftCore.so") == true, "\(frames)")
    }

    // MARK: - Fallbacks

    func testAddressOutsideEveryModuleFallsBackToTheBareAddress() throws {
        let symbolizer = Symbolizer(modules: try loadedModuleImages())

        XCTAssertEqual(symbolizer.symbolize(0x10), [SymbolizedFrame(address: 0x10)])
        XCTAssertEqual(symbolizer.symbolize(0), [SymbolizedFrame(address: 0)])
        XCTAssertEqual(
            Symbolizer(modules: []).symbolize(0x5555_0000_1234),
            [SymbolizedFrame(address: 0x5555_0000_1234)]
        )
    }

    func testMissingModuleFileFallsBackToModuleAndOffset() {
        let missing = ModuleImage(
            path: "/nonexistent/libGone.so",
            buildID: [],
            loadBias: 0x7f00_0000_0000,
            start: 0x7f00_0000_0000,
            end: 0x7f00_0010_0000
        )
        let symbolizer = Symbolizer(modules: [missing])

        let frames = symbolizer.symbolize(0x7f00_0000_1234)
        let again = symbolizer.symbolize(0x7f00_0000_2000)

        XCTAssertEqual(
            frames,
            [
                SymbolizedFrame(
                    address: 0x7f00_0000_1234,
                    module: "/nonexistent/libGone.so",
                    moduleOffset: 0x1234
                )
            ]
        )
        XCTAssertEqual(again.first?.moduleOffset, 0x2000)
        XCTAssertEqual(symbolizer.diagnostics.count, 1, "the module is tried once")
        guard case .cannotOpen(let path, _)? = symbolizer.diagnostics.first else {
            return XCTFail("expected the file not to open, got \(symbolizer.diagnostics)")
        }
        XCTAssertEqual(path, "/nonexistent/libGone.so")
        XCTAssertEqual(
            "\(symbolizer.diagnostics[0])",
            "cannot open '/nonexistent/libGone.so': no such file or directory; frames show module + offset")
    }

    func testWithoutLibdwEveryModuleFallsBackToModuleAndOffsetAndSaysSoOnce() {
        let missing = LibDW.load("/nonexistent/libdw.so.1")
        guard case .failure(let error) = missing else { return XCTFail("a missing file loaded") }
        XCTAssertEqual(
            "\(error)",
            "cannot load elfutils' libdw: /nonexistent/libdw.so.1: cannot open shared object file: no such file or "
                + "directory; install or update it (Debian, Ubuntu: libdw1 or libdw1t64); frames show module + offset")
        // Real files: only the missing libdw keeps them from being read.
        let images = [
            ModuleImage(path: "/bin/sh", buildID: [], loadBias: 0x7f00_0000_0000, start: 0x7f00_0000_0000, end: 0x7f00_0010_0000),
            ModuleImage(path: "/bin/ls", buildID: [], loadBias: 0x7e00_0000_0000, start: 0x7e00_0000_0000, end: 0x7e00_0010_0000),
        ]
        var loads = 0
        let symbolizer = Symbolizer(
            modules: images, separateDebugInfo: false,
            libdw: {
                loads += 1
                return missing
            })
        XCTAssertEqual(loads, 0, "libdw is not loaded before a frame needs it")

        XCTAssertEqual(
            symbolizer.symbolize(0x7f00_0000_1234),
            [SymbolizedFrame(address: 0x7f00_0000_1234, module: "/bin/sh", moduleOffset: 0x1234)])
        XCTAssertEqual(symbolizer.symbolize(0x7e00_0000_0040).first?.moduleOffset, 0x40)
        XCTAssertEqual(loads, 2, "asked by each module")
        XCTAssertEqual(symbolizer.diagnostics, [error], "said once for both modules")
    }

    func testALibraryWithoutLibdwsFunctionsIsNotUsed() {
        guard case .failure(let error) = LibDW.load("libc.so.6") else { return XCTFail("libc taken for libdw") }
        XCTAssertEqual(error, .libdwUnavailable(message: "libc.so.6 has no function dwarf_attr"))
        guard case .success = LibDW.loaded else { return XCTFail("libdw.so.1 did not load") }
    }

    func testRebuiltModuleWithAnotherBuildIDFallsBackToModuleAndOffset() throws {
        let addresses = recordReturnAddresses()
        let modules = try loadedModuleImages()
        let address = try XCTUnwrap(addresses.dropFirst().first)
        var image = try XCTUnwrap(modules.first { $0.contains(address - 1) })
        XCTAssertFalse(image.buildID.isEmpty, "the test binary should carry a build-id")
        image.buildID = [0xde, 0xad, 0xbe, 0xef]

        let symbolizer = Symbolizer(modules: [image])
        let frames = symbolizer.symbolize(address)

        XCTAssertEqual(
            frames,
            [
                SymbolizedFrame(
                    address: address,
                    module: image.path,
                    moduleOffset: address - image.loadBias
                )
            ]
        )
        guard case .buildIDMismatch(_, let recorded, _)? = symbolizer.diagnostics.first else {
            return XCTFail("expected a build-id mismatch, got \(symbolizer.diagnostics)")
        }
        XCTAssertEqual(recorded, "deadbeef")
    }

    // MARK: - Inlined frames (an optimized fixture library)

    func testInlinedFramesComeInnermostFirstWithTheirCallSites() throws {
        let modules = try loadedModuleImages()
        let runtime = try XCTUnwrap(modules.first { $0.path.hasSuffix("/libswiftCore.so") })
        // <toolchain>/usr/lib/swift/linux/libswiftCore.so -> <toolchain>/usr/bin/swiftc
        let swiftc = URL(fileURLWithPath: runtime.path).deletingLastPathComponent()
            .deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "bin/swiftc"
            ).path
        guard FileManager.default.isExecutableFile(atPath: swiftc) else {
            throw XCTSkip("no swiftc next to \(runtime.path)")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("SymbolizerTests-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("Fixture.swift")
        let library = directory.appendingPathComponent("libInlineFixture.so")
        try inlineFixtureSource.write(to: source, atomically: true, encoding: .utf8)

        let compile = Process()
        compile.executableURL = URL(fileURLWithPath: swiftc)
        compile.arguments = [
            "-O", "-g", "-emit-library", "-module-name", "InlineFixture", source.path, "-o",
            library.path,
        ]
        try compile.run()
        compile.waitUntilExit()
        XCTAssertEqual(compile.terminationStatus, 0, "swiftc failed")

        let handle = try XCTUnwrap(dlopen(library.path, RTLD_NOW), String(cString: dlerror()))
        defer { dlclose(handle) }
        let entry = try XCTUnwrap(dlsym(handle, "fixture_outer"))
        typealias Outer = @convention(c) (@convention(c) () -> Void) -> Void
        fixtureReturnAddresses = []
        unsafeBitCast(entry, to: Outer.self)({
            if fixtureReturnAddresses.isEmpty { fixtureReturnAddresses = recordReturnAddresses() }
        })
        let symbolizer = Symbolizer(modules: try loadedModuleImages())

        let frames = try XCTUnwrap(
            fixtureReturnAddresses.lazy.map(symbolizer.symbolize).first {
                $0.first?.module == library.path
            },
            "no return address in the fixture"
        )

        XCTAssertEqual(frames.map(\.inlined), [true, true, false], "\(frames)")
        guard frames.count == 3 else { return }
        XCTAssertTrue(
            frames[0].function?.hasPrefix("InlineFixture.fixtureInnermost(") == true,
            "\(frames[0])"
        )
        XCTAssertTrue(
            frames[1].function?.hasPrefix("InlineFixture.fixtureInner(") == true,
            "\(frames[1])"
        )
        XCTAssertTrue(
            frames[2].function?.hasPrefix("InlineFixture.fixtureOuter(") == true,
            "\(frames[2])"
        )
        XCTAssertEqual(frames.map(\.file), Array(repeating: source.path, count: 3))
        XCTAssertEqual(
            frames.map(\.line),
            [
                try lineNumber(of: "call-in-innermost", in: source.path),
                try lineNumber(of: "call-in-inner", in: source.path),
                try lineNumber(of: "call-in-outer", in: source.path),
            ]
        )
        XCTAssertEqual(Set(frames.map(\.address)).count, 1)
        XCTAssertEqual(symbolizer.diagnostics.filter { "\($0)".contains(library.path) }, [])
    }

    // MARK: - Demangling

    func testDemanglesSwiftNamesAndRejectsCNames() {
        XCTAssertEqual(demangleSwiftSymbol("$sSi"), "Swift.Int")
        XCTAssertEqual(
            demangleSwiftSymbol("$sSS5countSivg"),
            "Swift.String.count.getter : Swift.Int"
        )
        XCTAssertEqual(demangleSwiftSymbol("$sSi"), "Swift.Int", "cached answer")
        XCTAssertNil(demangleSwiftSymbol("malloc"))
        XCTAssertNil(demangleSwiftSymbol("malloc"), "cached answer")
        XCTAssertNil(demangleSwiftSymbol(""))
    }

    func testDemanglesCPlusPlusNamesToo() {
        XCTAssertEqual(demangleSymbol("_ZN5swift5Actor3runEi"), "swift::Actor::run(int)")
        XCTAssertEqual(demangleSymbol("$sSi"), "Swift.Int")
        XCTAssertNil(demangleSymbol("malloc"))
        XCTAssertNil(demangleSymbol("_Znot a name"))
    }
}

/// Written by the fixture's callback, which cannot capture context.
nonisolated(unsafe) private var fixtureReturnAddresses: [UInt64] = []

/// Three functions that `-O` folds into one: two levels of inlining around a call that must stay
/// a call (not a tail jump), so that its return address lies in the inlined code.
private let inlineFixtureSource = """
    public var fixtureCounter = 0

    @_cdecl("fixture_outer")
    @inline(never)
    public func fixtureOuter(_ callback: @convention(c) () -> Void) {
        fixtureInner(callback)  // call-in-outer
        fixtureCounter &+= 1
    }

    @inline(__always)
    func fixtureInner(_ callback: @convention(c) () -> Void) {
        fixtureInnermost(callback)  // call-in-inner
        fixtureCounter &+= 2
    }

    @inline(__always)
    func fixtureInnermost(_ callback: @convention(c) () -> Void) {
        callback()  // call-in-innermost
        fixtureCounter &+= 3
    }

    """

/// The 1-based line of the first line of `path` containing `marker`.
private func lineNumber(of marker: String, in path: String) throws -> Int {
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(
        separator: "\n",
        omittingEmptySubsequences: false
    )
    return try XCTUnwrap(lines.firstIndex { $0.contains(marker) }, "no '\(marker)' in \(path)") + 1
}
