/// Bounds-checked reads of a process snapshot's copied memory. Every read of an address the copy
/// does not hold answers nil: the bytes came from the target, and nothing in them is trusted.
final class SnapshotMemory {
    let snapshot: ProcessSnapshot
    /// The region of the last read: reads cluster, so most skip the binary search.
    private var lastRegion = 0

    init(_ snapshot: ProcessSnapshot) {
        self.snapshot = snapshot
    }

    /// The index of the copied region holding the `count` bytes at `address`.
    @inline(__always) private func region(holding address: UInt64, count: UInt64) -> Int? {
        let regions = snapshot.regions
        if lastRegion < regions.count {
            let region = regions[lastRegion]
            if address >= region.copiedStart, address &+ count <= region.copiedEnd, address &+ count >= address {
                return lastRegion
            }
        }
        guard let index = snapshot.regionIndex(containing: address) else { return nil }
        let region = regions[index]
        guard address >= region.copiedStart, address &+ count <= region.copiedEnd, address &+ count >= address else {
            return nil
        }
        lastRegion = index
        return index
    }

    /// The 64-bit word at `address` (any alignment).
    func word(_ address: UInt64) -> UInt64? {
        guard let index = region(holding: address, count: 8) else { return nil }
        let region = snapshot.regions[index]
        return region.bytes.withUnsafeBytes {
            $0.loadUnaligned(fromByteOffset: Int(address - region.copiedStart), as: UInt64.self)
        }
    }

    func uint32(_ address: UInt64) -> UInt32? {
        guard let index = region(holding: address, count: 4) else { return nil }
        let region = snapshot.regions[index]
        return region.bytes.withUnsafeBytes {
            $0.loadUnaligned(fromByteOffset: Int(address - region.copiedStart), as: UInt32.self)
        }
    }

    func uint16(_ address: UInt64) -> UInt16? {
        guard let index = region(holding: address, count: 2) else { return nil }
        let region = snapshot.regions[index]
        return region.bytes.withUnsafeBytes {
            $0.loadUnaligned(fromByteOffset: Int(address - region.copiedStart), as: UInt16.self)
        }
    }

    func byte(_ address: UInt64) -> UInt8? {
        guard let index = region(holding: address, count: 1) else { return nil }
        let region = snapshot.regions[index]
        return region.bytes[Int(address - region.copiedStart)]
    }

    /// Up to `limit` bytes at `address`, stopping at the end of the copy.
    func bytes(_ address: UInt64, count: Int) -> [UInt8]? {
        guard count >= 0, let index = region(holding: address, count: UInt64(count)) else { return nil }
        let region = snapshot.regions[index]
        let start = Int(address - region.copiedStart)
        return Array(region.bytes[start..<start + count])
    }

    /// The NUL-terminated string at `address`, at most `limit` bytes; nil when unreadable,
    /// unterminated or not UTF-8.
    func cString(_ address: UInt64, limit: Int = 1024) -> String? {
        guard let index = region(holding: address, count: 1) else { return nil }
        let region = snapshot.regions[index]
        let start = Int(address - region.copiedStart)
        let end = Swift.min(region.bytes.count, start + limit)
        guard let terminator = region.bytes[start..<end].firstIndex(of: 0) else { return nil }
        return String(validating: region.bytes[start..<terminator], as: UTF8.self)
    }

    /// The target of the 32-bit relative pointer at `address` (nil when its value is 0).
    func relative(_ address: UInt64) -> UInt64? {
        guard let raw = uint32(address), raw != 0 else { return nil }
        return address &+ UInt64(bitPattern: Int64(Int32(bitPattern: raw)))
    }

    /// The target of the 32-bit relative *indirectable* pointer at `address`: an odd value points
    /// at a pointer to the target (a reference to another image).
    func relativeIndirectable(_ address: UInt64) -> UInt64? {
        guard let raw = uint32(address), raw != 0 else { return nil }
        let offset = Int64(Int32(bitPattern: raw & ~1))
        let target = address &+ UInt64(bitPattern: offset)
        return raw & 1 == 0 ? target : word(target)
    }

    /// Whether `address` lies in a copied, writable region: where objects live.
    func isWritable(_ address: UInt64) -> Bool {
        guard let index = region(holding: address, count: 8) else { return false }
        return snapshot.regions[index].isWritable
    }
}
