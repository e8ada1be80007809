import XCTest

@testable import LeakAuditCore
@testable import LeakAuditModel

#if canImport(Glibc)
    import Glibc
#endif

/// What `leak-audit inspect` reads of a process before and after it copies it: the loaded images
/// from its mappings and ELF files, and the refusals from /proc.
final class ProcessInspectionTests: XCTestCase {
    /// The link-time value of `symbol` in the ELF file at `path`, from `nm -D`.
    private static func linkTimeAddress(of symbol: String, in path: String) throws -> UInt64 {
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        nm.arguments = ["nm", "-D", "--defined-only", path]
        let output = Pipe()
        nm.standardOutput = output
        try nm.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[2] == symbol || fields[2].hasPrefix(symbol + "@") {
                return try XCTUnwrap(UInt64(fields[0], radix: 16))
            }
        }
        throw XCTSkip("no \(symbol) in \(path)")
    }

    /// A maps file is read field by field as the kernel writes it: a path with spaces kept whole
    /// (leading spaces dropped), an unreadable region and a line that is no mapping left out.
    func testAMapsFileReadsAsItsRegions() {
        let text = """
            55d0c0a00000-55d0c0a21000 r-xp 00001000 08:01 1234567                    /opt/my app/bin/tool (deleted)
            7f00000000-7f00021000 rw-p 00000000 00:00 0 \n7f00021000-7f04000000 ---p 00000000 00:00 0
            7ffc10000000-7ffc10021000 rw-p 00000000 00:00 0                          [stack]
            not a mapping at all
            7ffc20000000-7ffc10000000 r--p 00000000 00:00 0
            7ffc30000000-7ffc30001000 r--s 0000a000 00:05 42 /dev/zero
            """
        let regions = ProcessCopier.mappings(fromMaps: Array(text.utf8))
        XCTAssertEqual(regions.map(\.start), [0x55d0_c0a0_0000, 0x7f_0000_0000, 0x7ffc_1000_0000, 0x7ffc_3000_0000])
        XCTAssertEqual(regions.map(\.end), [0x55d0_c0a2_1000, 0x7f_0002_1000, 0x7ffc_1002_1000, 0x7ffc_3000_1000])
        XCTAssertEqual(regions.map(\.path), ["/opt/my app/bin/tool (deleted)", "", "[stack]", "/dev/zero"])
        XCTAssertEqual(regions.map(\.isWritable), [false, true, true, false])
        XCTAssertEqual(regions.map(\.isExecutable), [true, false, false, false])
        XCTAssertEqual(regions.map(\.fileOffset), [0x1000, 0, 0, 0xa000])
        XCTAssertEqual(regions.map(\.inode), [1_234_567, 0, 0, 42])
    }

    /// Each image's load bias and range, derived from this process's mappings and its files'
    /// program headers, agree with where the loader put a symbol of it: its runtime address (dlsym)
    /// less its link-time value (nm) is the bias, and it lies in the range.
    func testTheImagesFromTheMappingsAreWhereTheLoaderPutThem() throws {
        let regions = try XCTUnwrap(ProcessCopier.readMappings(getpid()))
        let modules = ProcessInspection.modules(of: ProcessSnapshot(pid: getpid(), regions: regions, threads: []))
        for (library, symbol) in [("/libswiftCore.so", "swift_retain"), ("/libc.so.6", "malloc")] {
            let module = try XCTUnwrap(modules.first { $0.path.hasSuffix(library) }, "\(modules.map(\.path))")
            let runtime = UInt64(UInt(bitPattern: try XCTUnwrap(dlsym(dlopen(nil, RTLD_NOW), symbol))))
            let linked = try Self.linkTimeAddress(of: symbol, in: module.path)
            XCTAssertEqual(module.loadBias, runtime - linked, library)
            XCTAssertTrue(module.contains(runtime), library)
            XCTAssertEqual(module.buildID.count, 20, "\(library): the GNU build-id note, SHA-1")
        }
    }

    /// The shim's state in a process that preloads leak-audit's library is found where the loader
    /// put the library's exported `leakaudit_process_state_v9` (nm's link-time value plus the
    /// library's load bias), rounded inwards to whole pages: the pages a heap walk leaves out.
    func testTheShimStateIsFoundInAProcessThatPreloadsTheShim() throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let library = directory.appendingPathComponent("libLeakAuditPreload.so").path
        try XCTSkipUnless(FileManager.default.fileExists(atPath: library), "no \(library)")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        child.environment = ["LD_PRELOAD": library]
        try child.run()
        defer {
            child.terminate()
            child.waitUntilExit()
        }
        var regions: [ProcessSnapshot.Region] = []
        for _ in 0..<200 {
            regions = ProcessCopier.readMappings(child.processIdentifier) ?? []
            if regions.contains(where: { $0.path == library }) { break }
            usleep(10_000)
        }
        let modules = ProcessInspection.modules(of: ProcessSnapshot(pid: child.processIdentifier, regions: regions, threads: []))
        let module = try XCTUnwrap(modules.first { $0.path == library }, "\(regions.map(\.path))")
        let state = module.loadBias + (try Self.linkTimeAddress(of: ShimStateLocator.symbolName, in: library))
        let page = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        // sizeof(la_process_state): the library's `leakaudit_process_state_v9_size`, several MB.
        let pages = ShimStateLocator.pages(in: regions)
        XCTAssertEqual(pages.count, 1, "\(pages)")
        let found = try XCTUnwrap(pages.first)
        XCTAssertEqual(found.lowerBound, (state + page - 1) / page * page)
        XCTAssertTrue(module.contains(found.lowerBound) && module.contains(found.upperBound - 1))
        XCTAssertGreaterThan(found.upperBound - found.lowerBound, 1 << 20)
        XCTAssertLessThanOrEqual(found.upperBound, module.end)
    }

    /// The memory a copy of an anonymous region is written to is made before the process stops,
    /// with a page faulted in for each page the process holds, and only for those: all zeros
    /// until the copy.
    func testACopysDestinationIsFaultedInBeforehandForThePagesTheProcessHolds() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        // 64 pages between two inaccessible ones, so that no neighbouring mapping merges with it.
        let mapping = try XCTUnwrap(mmap(nil, 66 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        XCTAssertNotEqual(mapping, MAP_FAILED)
        defer { munmap(mapping, 66 * page) }
        XCTAssertEqual(mprotect(mapping, page, PROT_NONE), 0)
        XCTAssertEqual(mprotect(mapping + 65 * page, page, PROT_NONE), 0)
        let region = mapping + page
        let held = Set([0, 1, 2, 7, 40])
        for index in held { region.storeBytes(of: 0xAB, toByteOffset: index * page, as: UInt8.self) }
        let start = UInt64(UInt(bitPattern: region))
        let mappings = try XCTUnwrap(ProcessCopier.readMappings(getpid()))
        XCTAssertTrue(mappings.contains { $0.start == start && $0.end == start + UInt64(64 * page) })
        let destinations = ProcessCopier.prepareDestinations(getpid(), mappings: mappings, skipping: [])
        let bytes = try XCTUnwrap(destinations[start..<start + UInt64(64 * page)]).bytes
        let base = try XCTUnwrap(bytes.buffer.baseAddress)
        var resident = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(mincore(UnsafeMutableRawPointer(mutating: base), 64 * page, &resident), 0)
        XCTAssertEqual(Set(resident.indices.filter { resident[$0] & 1 != 0 }), held)
        XCTAssertTrue(bytes.buffer.allSatisfy { $0 == 0 })
        XCTAssertNil(bytes.writtenRanges)
    }

    /// A process that is gone or not Swift is refused before it is stopped (end to end, with each
    /// refusal's line and exit code: InspectTests); this test bundle is Swift, and described.
    func testAProcessIsDescribedFromProcBeforeAnythingStopsIt() throws {
        // This test bundle is Swift: described, not stopped.
        let own = try ProcessInspection.describe(getpid())
        XCTAssertEqual(own.pid, getpid())
        XCTAssertFalse(own.commandLine.isEmpty)
        XCTAssertEqual(own.kind, .swiftTestBundle)
        XCTAssertThrowsError(try inspectablePID(String(getpid())))
        XCTAssertThrowsError(try inspectablePID("1"))
        XCTAssertThrowsError(try inspectablePID("12abc"))
        XCTAssertEqual(try inspectablePID("4242"), 4242)
    }
}
