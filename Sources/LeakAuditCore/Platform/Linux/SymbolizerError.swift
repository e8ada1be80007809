import LeakAuditModel

/// A libdw failure met while symbolizing; each case names the call that failed.
///
/// `Symbolizer.symbolize(_:)` never throws: a failing module degrades to module + offset and
/// the failure is kept in `Symbolizer.diagnostics`, once per module and call.
public enum SymbolizerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// libdw.so.1 could not be loaded (elfutils' libdw is not installed, or one of the libraries it
    /// needs), or lacks a function leak-audit calls (too old).
    case libdwUnavailable(message: String)
    /// `dwfl_begin` could not create a session.
    case dwflBegin(message: String)
    /// The module's file could not be opened (gone since the run, unreadable).
    case cannotOpen(path: String, message: String)
    /// The module's path, as the target recorded it, names no regular file (a FIFO, a device, a
    /// directory): it is not opened, so that it cannot block or feed leak-audit without end.
    case notARegularFile(path: String)
    /// `dwfl_report_elf` could not open or parse the module's file.
    case dwflReportElf(path: String, message: String)
    /// `dwfl_report_end` failed after reporting the module.
    case dwflReportEnd(path: String, message: String)
    /// `dwfl_module_getelf` could not load the module's ELF image.
    case dwflModuleGetelf(path: String, message: String)
    /// `dwfl_module_build_id` could not read the file's build-id.
    case dwflModuleBuildID(path: String, message: String)
    /// The file's build-id differs from the one recorded while the target ran.
    case buildIDMismatch(path: String, recorded: String, found: String)
    /// `dwfl_module_getsymtab` could not load the module's symbol table.
    case dwflModuleGetsymtab(path: String, message: String)
    /// `dwfl_module_nextcu` failed while listing the module's compile units.
    case dwflModuleNextcu(path: String, message: String)
    /// `dwarf_ranges` failed on a compile unit or function DIE.
    case dwarfRanges(path: String, message: String)
    /// `dwarf_child` or `dwarf_siblingof` failed while walking the DIE tree.
    case dwarfDIETree(path: String, message: String)

    /// A short, lowercase message naming the file and what to do.
    public var description: String {
        switch self {
        case .libdwUnavailable(let message):
            return
                "cannot load elfutils' libdw: \(message); install or update it (Debian, Ubuntu: libdw1 or libdw1t64); frames show module + offset"
        case .dwflBegin(let message):
            return "dwfl_begin failed: \(message)"
        case .cannotOpen(let path, let message):
            return "cannot open '\(path)': \(message); frames show module + offset"
        case .notARegularFile(let path):
            return "'\(path)' is not a regular file, so it was not read; frames show module + offset"
        case .dwflReportElf(let path, let message):
            return "dwfl_report_elf failed for '\(path)': \(message); frames show module + offset"
        case .dwflReportEnd(let path, let message):
            return "dwfl_report_end failed for '\(path)': \(message); frames show module + offset"
        case .dwflModuleGetelf(let path, let message):
            return
                "dwfl_module_getelf failed for '\(path)': \(message); frames show module + offset"
        case .dwflModuleBuildID(let path, let message):
            return "dwfl_module_build_id failed for '\(path)': \(message)"
        case .buildIDMismatch(let path, let recorded, let found):
            return
                "build-id of '\(path)' is \(found), the run recorded \(recorded); rerun against the same build"
        case .dwflModuleGetsymtab(let path, let message):
            return
                "dwfl_module_getsymtab failed for '\(path)': \(message); functions without debug info stay unnamed"
        case .dwflModuleNextcu(let path, let message):
            return
                "dwfl_module_nextcu failed for '\(path)': \(message); some files and lines may be missing"
        case .dwarfRanges(let path, let message):
            return
                "dwarf_ranges failed in '\(path)': \(message); some files and lines may be missing"
        case .dwarfDIETree(let path, let message):
            return
                "walking the dwarf tree of '\(path)' failed: \(message); some inlined frames may be missing"
        }
    }
}
