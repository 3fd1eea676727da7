// The commit this binary was built from. `Scripts/package-deb.sh` writes the commit here for
// its release build and puts this file back afterwards; a plain `swift build` keeps nil.
extension NodeVersion {
    /// The git commit of the build (abbreviated, `-dirty` when the tree had changes), if known.
    public static let commit: String? = nil
}
