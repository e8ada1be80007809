/// One decoded record of the stream, in the order the target committed them.
enum WireEvent: Equatable {
    /// A tracked type, at its first validation.
    case typeDefined(id: UInt32, name: String, max: Int)
    /// A distinct allocation stack: raw return addresses, innermost first.
    case stackDefined(id: UInt32, returnAddresses: [UInt64], truncated: Bool)
    /// An ELF image loaded in the target.
    case moduleLoaded(ModuleImage)
    /// An instance passed validation; `sequence` orders it against every other event.
    case allocated(typeID: UInt32, object: UInt64, stackID: UInt32, sequence: UInt64)
    /// A tracked instance was deallocated.
    case deallocated(typeID: UInt32, object: UInt64, sequence: UInt64)
}
