// elfutils' libdw (libdwfl and the DWARF reader), for symbolization in LeakAuditCore, loaded when
// first needed rather than linked: a run whose report shows no frames (the usual clean run) never
// loads libdw and the libraries it brings (libelf, libz, liblzma, libbz2 here), which cost every
// start of leak-audit about 0.3 ms when linked. Only the core uses this: the library that user code
// links must not depend on elfutils. libdw's functions are called only through this table, and so
// are the few of libelf's (which libdw brings, and whose symbols its handle finds) that read a
// symbol table in place.
#ifndef LEAKAUDIT_LIBDW_H
#define LEAKAUDIT_LIBDW_H

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>

/// Each libdw function leak-audit calls: one list for the table and for its loading.
#define LEAKAUDIT_LIBDW_FUNCTIONS(F)                                                                   \
    F(dwarf_attr)                                                                                  \
    F(dwarf_attr_integrate)                                                                        \
    F(dwarf_child)                                                                                 \
    F(dwarf_errmsg)                                                                                \
    F(dwarf_filesrc)                                                                               \
    F(dwarf_formref_die)                                                                           \
    F(dwarf_formstring)                                                                            \
    F(dwarf_formudata)                                                                             \
    F(dwarf_getsrc_die)                                                                            \
    F(dwarf_getsrcfiles)                                                                           \
    F(dwarf_haspc)                                                                                 \
    F(dwarf_linecol)                                                                               \
    F(dwarf_lineno)                                                                                \
    F(dwarf_linesrc)                                                                               \
    F(dwarf_ranges)                                                                                \
    F(dwarf_siblingof)                                                                             \
    F(dwarf_tag)                                                                                   \
    F(dwfl_begin)                                                                                  \
    F(dwfl_build_id_find_elf)                                                                      \
    F(dwfl_end)                                                                                    \
    F(dwfl_errmsg)                                                                                 \
    F(dwfl_errno)                                                                                  \
    F(dwfl_module_build_id)                                                                        \
    F(dwfl_module_getdwarf)                                                                        \
    F(dwfl_module_getelf)                                                                          \
    F(dwfl_module_getsym_info)                                                                     \
    F(dwfl_module_getsymtab)                                                                       \
    F(dwfl_module_nextcu)                                                                          \
    F(dwfl_offline_section_address)                                                                \
    F(dwfl_report_elf)                                                                             \
    F(dwfl_report_end)                                                                             \
    F(dwfl_standard_find_debuginfo)                                                                \
    F(elf_getdata)                                                                                 \
    F(elf_getscn)                                                                                  \
    F(elf_nextscn)                                                                                 \
    F(gelf_getclass)                                                                               \
    F(gelf_getehdr)                                                                                \
    F(gelf_getshdr)

/// libdw's functions, by their own names and types.
typedef struct leakaudit_libdw {
#define LEAKAUDIT_LIBDW_FIELD(name) __typeof__(name) *_Nonnull name;
    LEAKAUDIT_LIBDW_FUNCTIONS(LEAKAUDIT_LIBDW_FIELD)
#undef LEAKAUDIT_LIBDW_FIELD
} leakaudit_libdw;

/// Loads `library` (a file name such as "libdw.so.1", searched as the dynamic loader searches, or
/// a path) and fills `functions` with its functions. Returns false, with the reason in `failure`
/// (the loader's message, or the function it lacks; truncated to `capacity`), if it cannot be
/// loaded or lacks one; `functions` is then partly filled and must not be used. The library stays
/// loaded.
bool leakaudit_libdw_open(const char *_Nonnull library, leakaudit_libdw *_Nonnull functions,
                          char *_Nonnull failure, size_t capacity);

#endif
