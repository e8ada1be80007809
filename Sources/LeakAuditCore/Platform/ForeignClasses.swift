/// The first words that tell objects of known C and C++ layouts in untyped memory, found in the
/// symbols of the libraries a process had loaded: the heap walk reads the words such an object
/// does not use (text, a buffer's stale tail) as no reference (docs/retainers.md, step 6).
struct ForeignClasses: Sendable, Hashable {
    /// The address point of ICU's `UnicodeString` vtable, in each loaded ICU library: the first
    /// word of every `UnicodeString`.
    var unicodeStrings: [UInt64] = []
    /// `_NSConcreteMallocBlock`, in each loaded blocks runtime: the first word (`isa`) of every C
    /// block copied to the heap (a closure handed to Dispatch or another C API as a block).
    var mallocBlocks: [UInt64] = []
    /// The `swift5_mpenum` section of each loaded image: a multi-payload enum's descriptor, with
    /// the spare bits its tag takes, so that a value is read by its case (docs/retainers.md,
    /// step 4).
    var multiPayloadEnumSections: [Range<UInt64>] = []
    /// The `swift5_builtin` section of each loaded image: the size of each value type whose layout
    /// the compiler fixed and reflection alone does not give (a multi-payload enum's among them),
    /// which tells whether its tag takes bytes of its own (docs/retainers.md, step 4).
    var builtinTypeSections: [Range<UInt64>] = []
}
